package drill_test

import (
	"testing"
	"time"

	"github.com/batonhq/baton/drill"
)

func runAll(t *testing.T, store string) map[drill.Fault]drill.Report {
	t.Helper()
	out := map[drill.Fault]drill.Report{}
	for _, f := range drill.Faults {
		p := drill.DefaultParams()
		p.Fault = f
		// Fewer lines a batch than the lesson's 4,000: the same guarantees
		// at a fraction of the SQLite work (which the race detector slows
		// tenfold). The CLI runs the full scenario.
		p.InvoiceLines = 200
		rep, err := drill.RunAll(t.Context(), p, drill.Config{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		out[f] = rep
	}
	return out
}

// The guarantees the drill exists to show, on the embedded SQLite store.
func TestDrillGuarantees(t *testing.T) {
	reps := runAll(t, "sqlite")
	p := drill.DefaultParams()
	for f, rep := range reps {
		ft := rep.Columns[drill.FencingTrigger]
		if ft.DoubleStarts != 0 || ft.Missed != 0 || ft.DuplicateLines != 0 || ft.MissingLines != 0 {
			t.Errorf("%s, fencing+trigger: %+v; want no double start, no miss, no duplicate or missing line", f, ft)
		}
		if ft.Started != len(p.Triggers) {
			t.Errorf("%s, fencing+trigger: %d batches started, want %d", f, ft.Started, len(p.Triggers))
		}
		for _, c := range drill.Columns {
			r := rep.Columns[c]
			if r.TwoLeaderSeconds != 0 {
				t.Errorf("%s, %s: two running leaders for %vs with clocks within the margin", f, c, r.TwoLeaderSeconds)
			}
			switch f {
			case drill.Crash, drill.Unreachable, drill.Pause:
				bound := time.Duration(p.Lease)*p.Round + 2*p.Margin + p.Round/4
				if got := time.Duration(r.HandoverSeconds * float64(time.Second)); r.Handovers == 0 || got > bound {
					t.Errorf("%s, %s: handover %v after the fault (%d handovers), want within lease + 2e + poll = %v", f, c, got, r.Handovers, bound)
				}
			}
		}
	}
	pbe := reps[drill.PauseBeforeEffect]
	if plain := pbe.Columns[drill.Plain]; plain.DoubleStarts < 1 || plain.DuplicateLines == 0 {
		t.Errorf("plain under pause-before-effect: %+v; want the stale leader's batch to land too", plain)
	}
	if fenced := pbe.Columns[drill.Fencing]; fenced.Rejected < 1 || fenced.DoubleStarts != 0 || fenced.DuplicateLines != 0 {
		t.Errorf("fencing under pause-before-effect: %+v; want the stale write rejected", fenced)
	}
	for _, f := range []drill.Fault{drill.Unreachable, drill.Pause, drill.Crash} {
		if r := reps[f].Columns[drill.Plain]; r.Missed < 1 {
			t.Errorf("plain under %s: %+v; want the batch due while nobody led missed", f, r)
		}
	}
}

// Same flags, same numbers; and the store backend does not change them.
func TestDrillRepeatable(t *testing.T) {
	a, b := runAll(t, "mem"), runAll(t, "mem")
	c := runAll(t, "sqlite")
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
