package drill_test

import (
	"os"
	"testing"
	"time"

	"github.com/batonhq/baton/drill"
	"github.com/batonhq/baton/internal/netns"
)

// netConfig runs the test binary as the nodes and the etcd members of a
// net-mode drill on store, keeping the files in a directory that stays
// when the test fails.
func netConfig(t *testing.T, store string) drill.Config {
	t.Helper()
	netns.RequireT(t)
	dir, err := os.MkdirTemp("", "baton-drill-net-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the runs' events, histories and files are in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	cfg := drill.Config{Net: store, Node: []string{os.Args[0]}, Dir: dir,
		NodeEnv:   []string{"BATON_DRILL_TEST_NODE=1", "GORACE=atexit_sleep_ms=0"},
		Member:    []string{os.Args[0]},
		MemberEnv: []string{"BATON_DRILL_TEST_MEMBER=1", "GORACE=atexit_sleep_ms=0"}}
	if testing.Verbose() {
		cfg.Progress = os.Stderr
	}
	return cfg
}

func netParams(f drill.Fault) drill.Params {
	p := drill.DefaultParams()
	p.Fault = f
	p.Round, p.Margin = 200*time.Millisecond, 25*time.Millisecond
	p.Rounds, p.Triggers = 13, []int{6, 12}
	if raceEnabled {
		p.InvoiceLines = 500
	}
	return p
}

// The lesson's drill on test hosts: the leader's link cut on a 3-member
// etcd cluster. Fencing+trigger loses and doubles nothing, and the history
// checker finds nothing wrong in any column that fences.
func TestNetDrillUnreachable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 etcd members and 5 nodes in network namespaces, three times")
	}
	cfg := netConfig(t, "etcd3")
	rep, err := drill.RunAll(t.Context(), netParams(drill.Unreachable), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep.Table())
	for _, c := range []drill.Column{drill.Fencing, drill.FencingTrigger} {
		r := rep.Columns[c]
		if r.History == nil {
			t.Fatalf("%s: no history check", c)
		}
		if !r.History.OK() {
			t.Errorf("%s: checker violations: %+v", c, r.History.Violations)
		}
		if r.History.Intervals < 2 {
			t.Errorf("%s: %d Valid intervals recorded, want a handover", c, r.History.Intervals)
		}
	}
	ft := rep.Columns[drill.FencingTrigger]
	if ft.DuplicateLines != 0 || ft.MissingLines != 0 || ft.Missed != 0 || ft.DoubleStarts != 0 {
		t.Errorf("fencing+trigger: %+v", ft)
	}
}
