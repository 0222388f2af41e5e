package drill_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/lab/drill"
)

// checkGuarantees asserts what the drill exists to show, in either mode
// (drill.Report's checks): fencing+trigger never double-starts, misses,
// duplicates or loses a line; plain lets a stale leader's batch land and
// loses a batch due while nobody led; fencing rejects the stale write;
// nobody ever runs as a second valid leader; a handover after crash,
// unreachable and pause comes within lease + 2e + one poll of the fault's
// start (plus slack, for real processes on a shared machine: slack[f] for
// fault f).
func checkGuarantees(t *testing.T, reps map[drill.Fault]drill.Report, slack map[drill.Fault]time.Duration) {
	t.Helper()
	for f, rep := range reps {
		checkSafety(t, rep)
		for _, late := range rep.LateHandovers(slack[f]) {
			t.Error(late)
		}
		for _, miss := range rep.Undemonstrated() {
			t.Error(miss)
		}
	}
	if len(reps) == 0 {
		t.Error("no fault was run")
	}
}

// checkSafety asserts what holds on every run, however late its nodes were
// scheduled (drill.Report.Unsafe).
func checkSafety(t *testing.T, rep drill.Report) {
	t.Helper()
	for _, u := range rep.Unsafe() {
		t.Error(u)
	}
}

// The checks see what they exist for: each finding of a report made
// wrong on purpose.
func TestReportChecksCatch(t *testing.T) {
	p := drill.DefaultParams()
	p.Fault = drill.Crash
	good := drill.Report{Fault: p.Fault, Params: p, Columns: map[drill.Column]drill.Result{
		drill.Plain:          {Started: 3, Missed: 1, Handovers: 1, HandoverSeconds: 0.3},
		drill.Fencing:        {Started: 3, Missed: 1, Handovers: 1, HandoverSeconds: 0.3},
		drill.FencingTrigger: {Started: 4, Handovers: 1, HandoverSeconds: 0.3},
	}}
	if u, l, m := good.Unsafe(), good.LateHandovers(0), good.Undemonstrated(); len(u)+len(l)+len(m) != 0 {
		t.Fatalf("a good report: %v %v %v", u, l, m)
	}
	mutate := func(f func(r drill.Report)) drill.Report {
		r := good
		r.Columns = map[drill.Column]drill.Result{}
		for c, v := range good.Columns {
			r.Columns[c] = v
		}
		f(r)
		return r
	}
	for name, c := range map[string]struct {
		rep  drill.Report
		find func(drill.Report) []string
		want string
	}{
		"double start": {mutate(func(r drill.Report) {
			ft := r.Columns[drill.FencingTrigger]
			ft.DoubleStarts = 1
			r.Columns[drill.FencingTrigger] = ft
		}), drill.Report.Unsafe, "no double start"},
		"too few": {mutate(func(r drill.Report) {
			ft := r.Columns[drill.FencingTrigger]
			ft.Started = 3
			r.Columns[drill.FencingTrigger] = ft
		}), drill.Report.Unsafe, "3 batches started, want 4"},
		"two leaders": {mutate(func(r drill.Report) {
			pl := r.Columns[drill.Plain]
			pl.TwoLeaderSeconds = 0.1
			r.Columns[drill.Plain] = pl
		}), drill.Report.Unsafe, "two running leaders"},
		"late": {mutate(func(r drill.Report) {
			pl := r.Columns[drill.Plain]
			pl.HandoverSeconds = 0.5
			r.Columns[drill.Plain] = pl
		}),
			func(r drill.Report) []string { return r.LateHandovers(0) }, "handover 500ms"},
		"no miss": {mutate(func(r drill.Report) { pl := r.Columns[drill.Plain]; pl.Missed = 0; r.Columns[drill.Plain] = pl }), drill.Report.Undemonstrated, "want the batch due while nobody led missed"},
	} {
		got := c.find(c.rep)
		if len(got) != 1 || !strings.Contains(got[0], c.want) {
			t.Errorf("%s: %q, want one finding with %q", name, got, c.want)
		}
	}
}

// A report's JSON reads back into the same Params: a program judges the
// report of `baton drill --json` with the checks above (kubetest does).
func TestParamsJSONRoundTrip(t *testing.T) {
	p := drill.DefaultParams()
	p.Round, p.Margin, p.Poll = 200*time.Millisecond, 25*time.Millisecond, 30*time.Millisecond
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var q drill.Params
	if err := json.Unmarshal(raw, &q); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Fatalf("read back %+v, want %+v (%s)", q, p, raw)
	}
}
