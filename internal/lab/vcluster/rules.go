package vcluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// WorkRules is the checker's own reading of a job's policy: the checks of
// a committed ledger write, of an effect and of a release, each a pure
// function of what it is given, returning the broken invariant or "".
// The simulator's engine (Config.Check) and the exhaustive explorer
// (internal/lab/explore) both check with these, so the two check one
// definition. Times and durations are wall ones: the claimant's clock, as
// the rows carry them, and the Policy the machines run with.
type WorkRules struct {
	Job      string
	Schedule scheduler.Schedule // nil: no schedule
	Policy   scheduler.Policy
}

// Cap checks a scheduled period's first claim or skip against the
// catch-up cap: a period is claimed only while fewer than Max newer
// instants are due, and skipped by the cap only when at least Max are.
func (r WorkRules) Cap(a scheduler.SwapRun) string { return r.capRule(&a) }

// capRule is Cap of *a. The rules' own forms take the write by pointer:
// the engine checks every committed write with each, and a copy of the
// write for each is most of what a check costs.
func (r *WorkRules) capRule(a *scheduler.SwapRun) string {
	max := r.Policy.Max
	sw := &a.Swap.Run
	if max <= 0 || r.Schedule == nil || sw.Manual || a.Swap.Expect != 0 {
		return ""
	}
	newer := func(at time.Time) int {
		n := 0
		for t := r.Schedule.Next(sw.Scheduled); !t.IsZero() && !t.After(at) && n <= max; t = r.Schedule.Next(t) {
			n++
		}
		return n
	}
	switch {
	case a.Kind == scheduler.KindClaim:
		if n := newer(sw.Started); n >= max {
			return fmt.Sprintf("catch-up cap: period %s claimed with %d newer periods due (max %d)", sw.Period, n, max)
		}
	case a.Kind == scheduler.KindSkip && strings.Contains(sw.Output, capReason):
		if n := newer(sw.Finished); n < max {
			return fmt.Sprintf("catch-up cap: period %s skipped with only %d newer periods due (max %d)", sw.Period, n, max)
		}
	}
	return ""
}

// Window checks a claim of a scheduled period (a first claim or a retry)
// against the catch-up window: it starts no later than Window after the
// period's instant, by the claimant's clock, however long ago it was
// planned.
func (r WorkRules) Window(a scheduler.SwapRun) string { return r.windowRule(&a) }

// windowRule is Window of *a.
func (r *WorkRules) windowRule(a *scheduler.SwapRun) string {
	sw, w := &a.Swap.Run, r.Policy.Window
	if w <= 0 || a.Kind != scheduler.KindClaim || sw.Manual {
		return ""
	}
	if late := sw.Started.Sub(sw.Scheduled); late > w {
		return fmt.Sprintf("catch-up window: period %s claimed %v late, outside the window of %v", sw.Period, late, w)
	}
	return ""
}

// Jitter checks that a scheduled period's first claim starts no earlier
// than its instant plus its jitter (scheduler.JitterOf), which every node
// derives alike.
func (r WorkRules) Jitter(a scheduler.SwapRun) string { return r.jitterRule(&a) }

// jitterRule is Jitter of *a.
func (r *WorkRules) jitterRule(a *scheduler.SwapRun) string {
	sw := &a.Swap.Run
	if r.Policy.Jitter <= 0 || a.Kind != scheduler.KindClaim || sw.Manual || a.Swap.Expect != 0 {
		return ""
	}
	due := sw.Scheduled.Add(scheduler.JitterOf(r.Job, sw.Period, r.Policy.Jitter))
	if sw.Started.Before(due) {
		return fmt.Sprintf("jitter: period %s claimed at %s, before its instant plus its jitter (%s)", sw.Period,
			sw.Started.UTC().Format(time.RFC3339Nano), due.UTC().Format(time.RFC3339Nano))
	}
	return ""
}

// Skip checks what a skip may skip: never a manual period (a trigger or a
// backfill row, which an operator asked for), by the catch-up window only
// a period later than the window, and by catch-up latest or none only
// once a newer period is due.
func (r WorkRules) Skip(a scheduler.SwapRun) string { return r.skipRule(&a) }

// skipRule is Skip of *a.
func (r *WorkRules) skipRule(a *scheduler.SwapRun) string {
	sw := &a.Swap.Run
	if a.Kind != scheduler.KindSkip {
		return ""
	}
	switch {
	case sw.Manual:
		return fmt.Sprintf("manual period %s (a trigger or backfill) skipped: %s", sw.Period, sw.Output)
	case strings.Contains(sw.Output, windowReason) && (r.Policy.Window <= 0 || sw.Finished.Sub(sw.Scheduled) <= r.Policy.Window):
		return fmt.Sprintf("catch-up window: period %s skipped %v late, within the window of %v", sw.Period, sw.Finished.Sub(sw.Scheduled), r.Policy.Window)
	case strings.HasPrefix(sw.Output, "skipped: catch-up policy ") && r.Schedule != nil:
		if next := r.Schedule.Next(sw.Scheduled); next.IsZero() || next.After(sw.Finished) {
			return fmt.Sprintf("catch-up policy: period %s skipped (%s) at %s, before any newer period was due (the next at %s)", sw.Period, sw.Output, sw.Finished.UTC().Format(time.RFC3339Nano), next.UTC().Format(time.RFC3339Nano))
		}
	}
	return ""
}

// Suspended checks that no claim or skip (a write that starts an attempt
// or skips a period, store.RunSwap.Claims) lands while the job, as stored
// when it lands, is suspended: the store refuses one in the same atomic
// step as the write.
func Suspended(a scheduler.SwapRun, job store.Job) string { return suspendedRule(&a, &job) }

// suspendedRule is Suspended of *a and *job.
func suspendedRule(a *scheduler.SwapRun, job *store.Job) string {
	if a.Swap.Claims() && job.Suspension.Active() {
		return fmt.Sprintf("suspend: %s of %s landed while the job is suspended (by %s)", a.Kind, a.Swap.Run.Period, job.Suspension.By)
	}
	return ""
}

// Busy is a term's previous run, as its machine was told it ended: the
// token it ran under and its start and end by the node's wall clock
// (zero: none yet).
type Busy struct {
	Token    uint64
	From, To time.Time
}

// Overlap checks the overlap policy skip for a write by node: a scheduled
// period's first claim by a term never comes due (its instant plus its
// jitter) while that term's previous run (busy) went on, and a period is
// skipped for overlap only when it did.
func (r WorkRules) Overlap(node string, a scheduler.SwapRun, busy Busy) string {
	return r.overlapRule(node, &a, &busy)
}

// overlapRule is Overlap of *a and *busy.
func (r *WorkRules) overlapRule(node string, a *scheduler.SwapRun, busy *Busy) string {
	sw := &a.Swap.Run
	if sw.Manual || a.Swap.Expect != 0 {
		return ""
	}
	skip := a.Kind == scheduler.KindSkip && strings.HasPrefix(sw.Output, overlapReason)
	if r.Policy.Overlap != scheduler.OverlapSkip {
		if skip {
			return fmt.Sprintf("overlap: period %s skipped for overlap under overlap %q", sw.Period, r.Policy.Overlap)
		}
		return ""
	}
	due := sw.Scheduled.Add(scheduler.JitterOf(r.Job, sw.Period, r.Policy.Jitter))
	during := busy.Token == sw.Token && due.After(busy.From) && !due.After(busy.To)
	switch {
	case a.Kind == scheduler.KindClaim && during:
		return fmt.Sprintf("overlap skip: period %s (due %s) claimed by %s with token %d, though it came due while that term's previous run went on (%s to %s)",
			sw.Period, due.Format(time.RFC3339Nano), node, sw.Token, busy.From.Format(time.RFC3339Nano), busy.To.Format(time.RFC3339Nano))
	case skip && !during:
		return fmt.Sprintf("overlap skip: period %s (due %s) skipped for overlap by %s with token %d, though no run of that term went on then",
			sw.Period, due.Format(time.RFC3339Nano), node, sw.Token)
	}
	return ""
}

// Retry checks a claim of a period whose last committed write is prev
// (ok false: none): when prev is a failure, the claim is a retry, and the
// failed attempt had retries left (Attempt at most Policy.Retries) and
// the claim starts no earlier than Policy.RetryBackoff after it finished.
func (r WorkRules) Retry(a scheduler.SwapRun, prev store.Run, ok bool) string {
	return r.retryRule(&a, &prev, ok)
}

// retryRule is Retry of *a and *prev.
func (r *WorkRules) retryRule(a *scheduler.SwapRun, prev *store.Run, ok bool) string {
	sw := &a.Swap.Run
	if a.Kind != scheduler.KindClaim || a.Swap.Expect == 0 || !ok || prev.Version != a.Swap.Expect || prev.State != store.Failed {
		return ""
	}
	pol := r.Policy
	switch {
	case prev.Attempt > pol.Retries:
		return fmt.Sprintf("retries: period %s claimed again (attempt %d) after its attempt %d failed, with %d retries", sw.Period, sw.Attempt, prev.Attempt, pol.Retries)
	case sw.Started.Before(prev.Finished.Add(pol.RetryBackoff)):
		return fmt.Sprintf("retries: period %s retried %v after its failure, before the backoff of %v", sw.Period, sw.Started.Sub(prev.Finished), pol.RetryBackoff)
	}
	return ""
}

// Damaged checks that no write by node lands on the period of a damaged
// row (one in a state no baton writes): nobody knows whether it ran.
func Damaged(node string, a scheduler.SwapRun, damaged []store.Run) string {
	return damagedRule(node, &a, damaged)
}

// damagedRule is Damaged of *a.
func damagedRule(node string, a *scheduler.SwapRun, damaged []store.Run) string {
	for _, d := range damaged {
		if d.Period == a.Swap.Run.Period {
			return fmt.Sprintf("damaged ledger row %s (state %q) written again by %s: %s, %s with token %d, attempt %d",
				d.Period, d.State, node, a.Kind, a.Swap.Run.State, a.Swap.Run.Token, a.Swap.Run.Attempt)
		}
	}
	return ""
}

// Release checks a committed release (scheduler.Release) by node: it
// gives back the row of an attempt whose machine was never told that its
// effect ran to its end (toldFinished).
func Release(node string, a scheduler.SwapRun, toldFinished bool) string {
	sw := a.Swap.Run
	if toldFinished {
		return fmt.Sprintf("%s released %s (token %d, attempt %d), pending again, after its machine was told that its run finished: the period runs again",
			node, sw.Period, sw.Token, sw.Attempt)
	}
	return ""
}

// EndedRowTakeover checks a claim or skip by node that committed over prev (ok:
// the period had a row), against ended, the claimed row of the period's
// attempt whose effect ended inside its term (was: there is one, with the
// supervisors' records): a claim or skip that takes over the row still
// running under that attempt runs, or writes off, a period whose run is
// known to have ended, which its supervisor records, fenced by the row,
// and for which a new term waits its takeover grace.
func EndedRowTakeover(node string, a scheduler.SwapRun, prev store.Run, ok bool, ended store.Run, was bool) string {
	if a.Kind != scheduler.KindClaim && a.Kind != scheduler.KindSkip {
		return ""
	}
	sw := a.Swap.Run
	if !ok || !was || prev.State != store.Running || a.Swap.Expect != prev.Version || prev.Token != ended.Token || prev.Attempt != ended.Attempt {
		return ""
	}
	return fmt.Sprintf("%s %s %s with token %d over attempt %d of token %d, whose run ended inside its term (its supervisor records it)",
		node, a.Kind, sw.Period, sw.Token, ended.Attempt, ended.Token)
}

// LedgerToken checks that a ledger write by node that commits while the
// election's token is token carries it (the ledger's fence), for a write
// fenced by the token: not a release or a supervisor's record fenced by
// the row, which the caller leaves out.
func LedgerToken(node string, a scheduler.SwapRun, token uint64) string {
	return ledgerTokenRule(node, &a, token)
}

// ledgerTokenRule is LedgerToken of *a.
func ledgerTokenRule(node string, a *scheduler.SwapRun, token uint64) string {
	sw := &a.Swap.Run
	if token != sw.Token {
		return fmt.Sprintf("ledger write (%s of %s) by %s with token %d committed while the election's token is %d", a.Kind, sw.Period, node, sw.Token, token)
	}
	return ""
}

// Timeout checks a run of period by node that ended by itself, not
// stopped, after it ran for ran (business time) in a working term that
// never froze meanwhile: it went on no longer than the timeout t (and a
// millisecond).
func Timeout(period, node string, ran, t time.Duration) string {
	if t > 0 && ran > t+time.Millisecond {
		return fmt.Sprintf("timeout: the run of %s by %s went on for %v, past the timeout of %v", period, node, ran, t)
	}
	return ""
}

// PruneCheck checks, by the checker's own reading of the retention ret,
// every row that a prune by node deleted (in before, not in after, both
// the job's whole ledger in period order) at the true wall time now: a
// done or skipped row (a failed one stays until it is run again or
// pruned by hand), not the newest scheduled row (the catch-up starts
// after it), and past the retention: older than Age by the true time,
// plus the clock guard's tolerance when it is on (a node prunes by its
// own wall clock, which the guard lets differ by that much), or with at
// least Rows newer rows.
func PruneCheck(node string, ret scheduler.Retention, tolerance time.Duration, now time.Time, before, after []store.Run) string {
	left := make(map[string]bool, len(after))
	for _, r := range after {
		left[r.Period] = true
	}
	newest := ""
	for _, r := range before {
		if !r.Manual {
			newest = r.Period
		}
	}
	old := ""
	if ret.Age > 0 {
		old = scheduler.Key(now.Add(tolerance - ret.Age))
	}
	for i, r := range before {
		if left[r.Period] {
			continue
		}
		newer := len(before) - 1 - i
		switch {
		case r.State != store.Done && r.State != store.Skipped:
			return fmt.Sprintf("retention: %s pruned the %s row of %s (only done and skipped rows go)", node, r.State, r.Period)
		case r.Period == newest:
			return fmt.Sprintf("retention: %s pruned %s, the newest scheduled row", node, r.Period)
		case !(ret.Age > 0 && r.Period < old) && !(ret.Rows > 0 && newer >= ret.Rows):
			return fmt.Sprintf("retention: %s pruned %s with %d newer rows, within the retention (age %v: rows before %q may go; rows %d)",
				node, r.Period, newer, ret.Age, old, ret.Rows)
		}
	}
	return ""
}

// OwnCompletion checks a warning note of node's machine that its
// completion of a period was refused with a conflict (note.Err wraps
// store.ErrConflict), while own is the row its own supervisor recorded
// for that period and cur the row as it stands: the machine, in its term
// token term, counts its own success as lost when cur is own, recorded
// for this very attempt (the [no-own-completion] mutation).
func OwnCompletion(node string, note scheduler.Note, own, cur store.Run, term uint64) string {
	if cur.Version == own.Version && own.Token == term {
		return fmt.Sprintf("%s counts its completion of %s refused (%v), but the row is the one its own supervisor recorded for that attempt (token %d, attempt %d)",
			node, note.Period, note.Err, own.Token, own.Attempt)
	}
	return ""
}

// ClockGuard checks a claim or skip by node (a completion or release
// writes an outcome and is not checked) against the wall-clock guard of
// tolerance: its last clock check found its wall clock off the reference
// by checkedOff, which must be within the tolerance (the checker's own
// definition: the step the node's clock took, not the machine's
// comparison).
func ClockGuard(node string, a scheduler.SwapRun, checkedOff, tolerance time.Duration) string {
	if tolerance <= 0 || a.Kind == scheduler.KindComplete || a.Kind == scheduler.KindRelease {
		return ""
	}
	if checkedOff.Abs() > tolerance {
		return fmt.Sprintf("%s %s %s (token %d) after its clock check found its wall clock %v off the reference, tolerance %v",
			node, a.Kind, a.Swap.Run.Period, a.Swap.Run.Token, checkedOff, tolerance)
	}
	return ""
}

// StepDown checks a leader node, in its term of token, that its clock
// guard has held off since heldAt (its machine said ClockHeld; the
// runtime's time base, as now): it has given its term up within bound
// (the step-down and three of its machine's polls, in that time base).
func StepDown(node string, token uint64, heldAt, now, bound, stepDown time.Duration) string {
	if heldAt >= 0 && token != 0 && now-heldAt > bound {
		return fmt.Sprintf("%s, held off by its clock guard since %v, still leads with token %d %v later: it did not step down (step-down %v)",
			node, heldAt, token, now-heldAt, stepDown)
	}
	return ""
}
