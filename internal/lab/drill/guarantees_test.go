package drill_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/lab/drill"
)

// checkGuarantees asserts what the drill exists to show, in either mode:
// fencing+trigger never double-starts, misses, duplicates or loses a line;
// plain lets a stale leader's batch land and loses a batch due while nobody
// led; fencing rejects the stale write; nobody ever runs as a second valid
// leader; a handover after crash, unreachable and pause comes within
// lease + 2e + one poll of the fault's start (plus slack, for real
// processes on a shared machine: slack[f] for fault f).
func checkGuarantees(t *testing.T, reps map[drill.Fault]drill.Report, slack map[drill.Fault]time.Duration) {
	t.Helper()
	for f, rep := range reps {
		checkSafety(t, rep)
		for _, late := range lateHandovers(rep, slack[f]) {
			t.Error(late)
		}
		for _, miss := range undemonstrated(rep) {
			t.Error(miss)
		}
	}
	if len(reps) == 0 {
		t.Error("no fault was run")
	}
}

// undemonstrated says what rep's fault should have shown and did not: the
// harm of the columns without a protection (plain lets a stale leader's
// batch land under pause-before-effect, and misses the batch due while
// nobody led under unreachable, pause and crash) and fencing's rejection
// of the stale write. On real processes these depend on where the fault
// lands in the nodes' work, so a run that shows nothing is run again
// (TestProcsGuarantees).
func undemonstrated(rep drill.Report) []string {
	var out []string
	switch f := rep.Params.Fault; f {
	case drill.PauseBeforeEffect:
		if plain := rep.Columns[drill.Plain]; plain.DoubleStarts < 1 || plain.DuplicateLines == 0 {
			out = append(out, fmt.Sprintf("plain under pause-before-effect: %+v; want the stale leader's batch to land too", plain))
		}
		if fenced := rep.Columns[drill.Fencing]; fenced.Rejected < 1 || fenced.DoubleStarts != 0 || fenced.DuplicateLines != 0 {
			out = append(out, fmt.Sprintf("fencing under pause-before-effect: %+v; want the stale write rejected", fenced))
		}
	case drill.Unreachable, drill.Pause, drill.Crash:
		if r := rep.Columns[drill.Plain]; r.Missed < 1 {
			out = append(out, fmt.Sprintf("plain under %s: %+v; want the batch due while nobody led missed", f, r))
		}
	}
	return out
}

// lateHandovers says, for each column of rep whose handover after a crash,
// unreachable or pause fault did not come within lease + 2e + one poll of
// the fault's start (plus slack), by how much; nothing for other faults.
func lateHandovers(rep drill.Report, slack time.Duration) []string {
	p := rep.Params
	switch p.Fault {
	case drill.Crash, drill.Unreachable, drill.Pause:
	default:
		return nil
	}
	bound := time.Duration(p.Lease)*p.Round + 2*p.Margin + p.Round/4
	var late []string
	for _, c := range drill.Columns {
		r := rep.Columns[c]
		if got := time.Duration(r.HandoverSeconds * float64(time.Second)); r.Handovers == 0 || got > bound+slack {
			late = append(late, fmt.Sprintf("%s, %s: handover %v after the fault (%d handovers), want within lease + 2e + poll = %v (+ %v slack)",
				p.Fault, c, got, r.Handovers, bound, slack))
		}
	}
	return late
}

// checkSafety asserts what holds on every run, however late its nodes were
// scheduled: fencing+trigger starts every batch once and loses or
// duplicates no line, and no column ever has two running leaders.
func checkSafety(t *testing.T, rep drill.Report) {
	t.Helper()
	f, p := rep.Params.Fault, rep.Params
	ft := rep.Columns[drill.FencingTrigger]
	if ft.DoubleStarts != 0 || ft.Missed != 0 || ft.DuplicateLines != 0 || ft.MissingLines != 0 {
		t.Errorf("%s, fencing+trigger: %+v; want no double start, no miss, no duplicate or missing line", f, ft)
	}
	if ft.Started != len(p.Triggers) {
		t.Errorf("%s, fencing+trigger: %d batches started, want %d", f, ft.Started, len(p.Triggers))
	}
	for _, c := range drill.Columns {
		if r := rep.Columns[c]; r.TwoLeaderSeconds != 0 {
			t.Errorf("%s, %s: two running leaders for %vs with clocks within the margin", f, c, r.TwoLeaderSeconds)
		}
	}
}
