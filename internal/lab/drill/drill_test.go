package drill_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/batonhq/baton/internal/lab/drill"
	"github.com/batonhq/baton/internal/testenv"
)

func runAll(t *testing.T, store string) map[drill.Fault]drill.Report {
	t.Helper()
	out, err := runFaults(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runFaults runs the drill of every fault on store.
func runFaults(ctx context.Context, store string) (map[drill.Fault]drill.Report, error) {
	out := map[drill.Fault]drill.Report{}
	for _, f := range drill.Faults {
		p := drill.DefaultParams()
		p.Fault = f
		// Fewer lines a batch than the lesson's 4,000: the same guarantees
		// at a fraction of the SQLite work (which the race detector slows
		// tenfold). The CLI runs the full scenario.
		p.InvoiceLines = 200
		rep, err := drill.RunAll(ctx, p, drill.Config{Store: store})
		if err != nil {
			return nil, err
		}
		out[f] = rep
	}
	return out, nil
}

// sqliteRuns is the drill of every fault on SQLite, run once for the two
// tests that read it (TestDrillGuarantees, TestDrillRepeatable) instead of
// once each: it is a third of their CPU. Neither changes the reports.
var sqliteRuns struct {
	once sync.Once
	reps map[drill.Fault]drill.Report
	err  error
}

// runAllSQLite returns the drill of every fault on SQLite, run on the
// first call.
func runAllSQLite(t *testing.T) map[drill.Fault]drill.Report {
	t.Helper()
	sqliteRuns.once.Do(func() {
		sqliteRuns.reps, sqliteRuns.err = runFaults(context.Background(), "sqlite")
	})
	if sqliteRuns.err != nil {
		t.Fatal(sqliteRuns.err)
	}
	return sqliteRuns.reps
}

// The guarantees the drill exists to show, on the embedded SQLite store.
func TestDrillGuarantees(t *testing.T) {
	// Virtual time: nothing to wait for, and nothing shared; beside the
	// real-time tests, which spend their time waiting, instead of before
	// them (one at a time in CI).
	testenv.ParallelUnlessLong(t)
	reps := runAllSQLite(t)
	if len(reps) != len(drill.Faults) {
		t.Fatalf("%d faults run, want every one of %v", len(reps), drill.Faults)
	}
	checkGuarantees(t, reps, nil)
}

// Same flags, same numbers; and the store backend does not change them.
func TestDrillRepeatable(t *testing.T) {
	testenv.ParallelUnlessLong(t) // virtual time, as TestDrillGuarantees
	a, b := runAll(t, "mem"), runAll(t, "mem")
	c := runAllSQLite(t)
	for _, f := range drill.Faults {
		for _, col := range drill.Columns {
			if a[f].Columns[col] != b[f].Columns[col] {
				t.Errorf("%s %s: two runs differ: %+v vs %+v", f, col, a[f].Columns[col], b[f].Columns[col])
			}
			if a[f].Columns[col] != c[f].Columns[col] {
				t.Errorf("%s %s: mem and sqlite differ: %+v vs %+v", f, col, a[f].Columns[col], c[f].Columns[col])
			}
		}
	}
}

func TestParamsValidate(t *testing.T) {
	for name, mut := range map[string]func(*drill.Params){
		"one node":          func(p *drill.Params) { p.Nodes = 1 },
		"renew >= lease":    func(p *drill.Params) { p.Renew = p.Lease },
		"trigger too late":  func(p *drill.Params) { p.Triggers = []int{99} },
		"duplicate trigger": func(p *drill.Params) { p.Triggers = []int{6, 6} },
		"unknown fault":     func(p *drill.Params) { p.Fault = "meteor" },
		"zero round":        func(p *drill.Params) { p.Round = 0 },
	} {
		p := drill.DefaultParams()
		mut(&p)
		if err := p.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// --json gives durations in seconds, as every baton command does, not Go
// duration strings.
func TestParamsJSONSeconds(t *testing.T) {
	b, err := json.Marshal(drill.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"roundSeconds", "clockMarginSeconds", "pollSeconds", "latencySeconds"} {
		if _, ok := got[k].(float64); !ok {
			t.Errorf("%s = %#v in %s; want a number of seconds", k, got[k], b)
		}
	}
}
