package explore

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var accept = flag.Bool("accept", false, "record the state counts explored as the new golden figures (testdata/counts.txt)")

const goldenFile = "testdata/counts.txt"

// TestStateCountsAreGolden explores the configurations and compares their
// counts (states, edges, depth, bounded or complete) with the figures
// recorded in testdata/counts.txt: a change to a machine that alters its
// reachable states fails here until the new count is accepted with
// go test ./internal/lab/explore -run TestStateCountsAreGolden -accept
// (BATON_EXPLORE_ALL=1 for every configuration). Without
// BATON_EXPLORE_ALL only the tiny ones (2x1-tiny, 2x1-live, sched-2x1-tiny) and
// the hostile one are explored (seconds); the others
// take minutes, and are skipped with a message.
func TestStateCountsAreGolden(t *testing.T) {
	want := map[string]string{}
	data, err := os.ReadFile(goldenFile)
	if err != nil && !*accept {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		n, _, _ := strings.Cut(l, " ")
		want[n] = l
	}
	all := os.Getenv("BATON_EXPLORE_ALL") != ""
	changed := false
	for _, n := range Configs() {
		if n != "2x1-tiny" && n != "2x1-hostile" && n != "2x1-live" && n != "sched-2x1-tiny" && !all {
			t.Logf("%s: not explored (minutes): set BATON_EXPLORE_ALL=1", n)
			continue
		}
		c, _ := Lookup(n)
		r, err := Explore(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if r.Violation != nil || r.States < 2 || r.Edges < r.States-1 || (n == "2x1-tiny" && r.Bounded) {
			t.Fatalf("%v", r)
		}
		got := counts(r)
		t.Logf("%v", r)
		if got == want[n] {
			continue
		}
		if !*accept {
			t.Errorf("%s's counts changed: a machine's reachable states are not what they were\n got: %s\nwant: %s\naccept the new figures: go test ./internal/lab/explore -run TestStateCountsAreGolden -accept", n, got, want[n])
			continue
		}
		want[n], changed = got, true
	}
	if *accept && changed {
		var b strings.Builder
		b.WriteString("# The state counts of baton explore's configurations (TestStateCountsAreGolden): name states edges depth complete|bounded\n")
		for _, n := range Configs() {
			if l, ok := want[n]; ok {
				b.WriteString(l + "\n")
			}
		}
		if err := os.WriteFile(goldenFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func counts(r Result) string {
	end := "complete"
	if r.Bounded {
		end = fmt.Sprintf("bounded-at-depth-%d", r.MaxDepth)
	}
	return fmt.Sprintf("%s states=%d edges=%d depth=%d %s", r.Config, r.States, r.Edges, r.Depth, end)
}
