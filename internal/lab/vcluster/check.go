package vcluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/store"
)

// Invariants, checked after every event when Config.Check is set:
//   - while every two clocks' rates stay within MaxRateRatio, for every
//     name at most one node holds a term that is valid by its own clock
//     (frozen nodes included: Valid() reads the clock when they wake),
//     whether it holds the name on its own record or through a session;
//   - every name's election log's tokens increase by acquisition and never
//     repeat;
//   - the store refuses no swap of the election machine as invalid;
//   - no write lands with a token lower than one already landed (the fence's
//     promise; without fencing it is what a stale leader breaks);
//   - every ledger write that commits carries the election's current
//     token (the ledger's fence; checked when fencing);
//   - no effect starts on a node whose term is not valid by its own clock;
//   - at most one successful completion per period is committed (since
//     the last backfill that made it pending), and with idempotent
//     batches at most one batch of rows lands per period;
//   - the job's policy: no claim or skip lands while the job is
//     suspended; a scheduled period is claimed only while fewer than the
//     catch-up cap's newer periods are due, and skipped by the cap only
//     when that many are; skipped by the window only when later than it,
//     by catch-up latest or none only once a newer period is due; with
//     overlap skip, never claimed when it came due (its instant plus its
//     jitter) while the term's previous run went on, and skipped for
//     overlap only then; never claimed before its instant plus its jitter;
//     a manual period (a trigger, a backfill row) is never skipped; a
//     failed period is retried only with retries left and after the
//     backoff; a run of a working term never goes on past the timeout
//     (the machine stops it);
//   - retention: a prune deletes only done and skipped rows, never the
//     newest scheduled one, each older than the age by the true time (plus
//     the clock guard's tolerance) or with at least the rows newer;
//   - the clock guard (Config.ClockTolerance): no claim or skip follows a
//     clock check that found the node's wall clock beyond the tolerance,
//     and a leader that its guard holds off leaves its term within the
//     step-down and three polls (Config.ClockStepDown).
//
// Those about writes and effects are checked where the write or the
// effect happens (work.go), the others here. The liveness checks at the
// end (every period due early enough finished, every backfilled period
// run again) are package sim's, from Outcome.Finished and
// Outcome.Backfilled.

// Violation is a failed invariant.
type Violation struct {
	At        float64 // virtual seconds
	Invariant string
}

// Error says when and what failed.
func (v *Violation) Error() string { return fmt.Sprintf("at %.3fs: %s", v.At, v.Invariant) }

func (e *engine) violate(format string, a ...any) {
	if e.out.Violation == nil {
		v := &Violation{At: e.now.Seconds(), Invariant: fmt.Sprintf(format, a...)}
		e.out.Violation = v
		e.tracef("VIOLATION: %s", v.Invariant)
	}
}

// violated records v, a broken invariant of WorkRules (rules.go), unless
// it is "".
func (e *engine) violated(v string) {
	if v != "" {
		e.violate("%s", v)
	}
}

// check checks the invariants after an event (see above). Most events
// grant no term, grow no election log and run no clock guard: check then
// counts the check, which has nothing to see, without the call of
// checkState.
func (e *engine) check() {
	e.out.Checks++
	if len(e.granted)+e.dirtyLogs > 0 || e.work.ClockStepDown > 0 {
		e.checkState()
	}
}

// checkState is check's work.
func (e *engine) checkState() {
	// A node's term becomes valid only when it is won or extended; after
	// that it only runs out. So two valid terms of a name can begin only
	// at an event that granted one: only the names granted in this event
	// need counting.
	granted := e.granted
	e.granted = e.granted[:0]
	if e.ratesWithinMargin() {
		for _, i := range granted {
			name := e.names[i]
			count := 0
			for _, n := range e.nodes {
				if e.holds(n, i) {
					count++
				}
			}
			if count <= 1 {
				continue
			}
			var who []string
			for _, n := range e.nodes {
				if e.holds(n, i) {
					who = append(who, fmt.Sprintf("%s (token %d)", n.id, n.termOf(i).token))
				}
			}
			if i == 0 {
				e.violate("two valid leaders with clocks within the margin: %s", strings.Join(who, ", "))
			} else {
				e.violate("two valid holders of %s with clocks within the margin: %s", name, strings.Join(who, ", "))
			}
		}
	}
	for i := 0; e.dirtyLogs > 0 && i < len(e.logs); i++ {
		if e.logs[i].dirty {
			e.checkLog(i)
		}
	}
	if e.work.ClockStepDown > 0 {
		e.checkStepDown()
	}
}

// checkStepDown: a leader that its clock guard holds off (its machine said
// ClockHeld) has given its term up within ClockStepDown and three polls of
// the machine, counted from when it was last thawed.
func (e *engine) checkStepDown() {
	var bound time.Duration
	for _, n := range e.termed { // in order of index, as e.nodes
		if !n.up || n.frozen || n.heldAt < 0 {
			continue // StepDown has nothing to say of it (asked after every event: skipped here)
		}
		if bound == 0 {
			bound = e.cal.Elapsed(e.work.ClockStepDown + 3*e.work.Poll)
		}
		if v := StepDown(n.id, n.term, n.heldAt, e.now, bound, e.work.ClockStepDown); v != "" {
			e.violate("%s", v)
			return
		}
	}
}

// holds reports whether n holds a term of the i-th name that is valid by
// its own clock (frozen or not: Valid() reads the clock when it wakes).
func (e *engine) holds(n *node, i int) bool {
	h := n.termOf(i)
	return n.up && h.token != 0 && n.local(e.now).Before(h.deadline) // the checker's own definition, not the product's
}

// dirty marks the i-th name's election log as maybe grown, for the next
// check to read.
func (e *engine) dirty(i int) {
	if !e.logs[i].dirty {
		e.logs[i].dirty = true
		e.dirtyLogs++
	}
}

// checkLog reads what the i-th name's election log gained since the last
// check: acquisitions raise the token, nothing else changes it.
func (e *engine) checkLog(i int) {
	l := &e.logs[i]
	l.dirty = false
	e.dirtyLogs--
	evs, err := e.c.Store.History(e.ctx, e.names[i], l.seq, 0)
	if err != nil {
		e.fail(err)
		return
	}
	for _, ev := range evs {
		l.seq = ev.Seq
		acquired := ev.Holder != "" && (ev.Kind == store.Acquired || ev.Kind == store.TakenOver || ev.Kind == store.Transferred)
		switch {
		case acquired && ev.Token <= l.token:
			e.violate("election log of %s: %s by %s with token %d after token %d", e.names[i], ev.Kind, ev.Holder, ev.Token, l.token)
		case !acquired && ev.Token != l.token:
			e.violate("election log of %s: %s changed the token from %d to %d", e.names[i], ev.Kind, l.token, ev.Token)
		}
		l.token = ev.Token
	}
}

// driftBeyond latches once two clocks' rates differ by more than the
// margin allows: from then on the protocol promises nothing about belief,
// and only the fence stands between a stale leader and the data. The
// rates change only at a SetRate fault, which calls rateChanged: this
// reads what that found.
func (e *engine) ratesWithinMargin() bool { return !e.driftBeyond }

// rateChanged latches driftBeyond when the nodes' rates, as they are now,
// differ by more than MaxRateRatio. Called after every change of a rate,
// in the event that changes it, so that the check after that event sees
// it, as when every check compared the rates itself.
func (e *engine) rateChanged() {
	if e.driftBeyond {
		return
	}
	lo, hi := e.nodes[0].rate, e.nodes[0].rate
	for _, n := range e.nodes {
		lo, hi = min(lo, n.rate), max(hi, n.rate)
	}
	if hi/lo > e.c.MaxRateRatio() {
		e.driftBeyond = true
	}
}
