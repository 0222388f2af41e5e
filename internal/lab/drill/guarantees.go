package drill

import (
	"fmt"
	"time"
)

// The guarantees the drill exists to show, as checks over a Report: the
// drill's tests assert them on the virtual clock and on real processes
// (an SQLite file), and kubetest on the Lease store (Config.StoreURL).
// Each returns one line per finding; none means the report shows it.

// Unsafe says what rep shows that no run may show, however late its nodes
// were scheduled: fencing+trigger must start every batch once and lose or
// duplicate no line, and no column may have two running leaders (Valid()
// intervals overlapping with clocks within the margin).
func (r Report) Unsafe() []string {
	var out []string
	f, p := r.Params.Fault, r.Params
	ft := r.Columns[FencingTrigger]
	if ft.DoubleStarts != 0 || ft.Missed != 0 || ft.DuplicateLines != 0 || ft.MissingLines != 0 {
		out = append(out, fmt.Sprintf("%s, fencing+trigger: %+v; want no double start, no miss, no duplicate or missing line", f, ft))
	}
	if ft.Started != len(p.Triggers) {
		out = append(out, fmt.Sprintf("%s, fencing+trigger: %d batches started, want %d", f, ft.Started, len(p.Triggers)))
	}
	for _, c := range Columns {
		if res := r.Columns[c]; res.TwoLeaderSeconds != 0 {
			out = append(out, fmt.Sprintf("%s, %s: two running leaders for %vs with clocks within the margin", f, c, res.TwoLeaderSeconds))
		}
	}
	return out
}

// Undemonstrated says what rep's fault should have shown and did not: the
// harm of the columns without a protection (plain lets a stale leader's
// batch land under pause-before-effect, and misses the batch due while
// nobody led under unreachable, pause and crash) and fencing's rejection
// of the stale write. On real processes these depend on where the fault
// lands in the nodes' work, so a run that shows nothing may be run again.
func (r Report) Undemonstrated() []string {
	var out []string
	switch f := r.Params.Fault; f {
	case PauseBeforeEffect:
		if plain := r.Columns[Plain]; plain.DoubleStarts < 1 || plain.DuplicateLines == 0 {
			out = append(out, fmt.Sprintf("plain under pause-before-effect: %+v; want the stale leader's batch to land too", plain))
		}
		if fenced := r.Columns[Fencing]; fenced.Rejected < 1 || fenced.DoubleStarts != 0 || fenced.DuplicateLines != 0 {
			out = append(out, fmt.Sprintf("fencing under pause-before-effect: %+v; want the stale write rejected", fenced))
		}
	case Unreachable, Pause, Crash:
		if res := r.Columns[Plain]; res.Missed < 1 {
			out = append(out, fmt.Sprintf("plain under %s: %+v; want the batch due while nobody led missed", f, res))
		}
	}
	return out
}

// HandoverBound is the protocol's bound on a handover after a crash,
// unreachable or pause fault, from the fault's start: lease + 2e + one
// poll (the contenders saw the last renewal at most a poll after it was
// made, before the fault).
func (p Params) HandoverBound() time.Duration {
	return time.Duration(p.Lease)*p.Round + 2*p.Margin + p.poll()
}

// LateHandovers says, for each column of rep whose handover after a
// crash, unreachable or pause fault did not come within HandoverBound of
// the fault's start plus slack (real processes on a shared machine add
// their scheduling delay), by how much; nothing for other faults.
func (r Report) LateHandovers(slack time.Duration) []string {
	p := r.Params
	switch p.Fault {
	case Crash, Unreachable, Pause:
	default:
		return nil
	}
	bound := p.HandoverBound()
	var late []string
	for _, c := range Columns {
		res := r.Columns[c]
		if got := time.Duration(res.HandoverSeconds * float64(time.Second)); res.Handovers == 0 || got > bound+slack {
			late = append(late, fmt.Sprintf("%s, %s: handover %v after the fault (%d handovers), want within lease + 2e + poll = %v (+ %v slack)",
				p.Fault, c, got, res.Handovers, bound, slack))
		}
	}
	return late
}
