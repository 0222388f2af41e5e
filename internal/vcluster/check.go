package vcluster

import (
	"fmt"
	"strings"

	"github.com/batonhq/baton/store"
)

// Invariants, checked after every event when Config.Check is set:
//   - while every two clocks' rates stay within MaxRateRatio, at most one
//     node holds a term that is valid by its own clock (frozen nodes
//     included: Valid() reads the clock when they wake);
//   - the election log's tokens increase by acquisition and never repeat;
//   - no write lands with a token lower than one already landed (the fence's
//     promise; without fencing it is what a stale leader breaks);
//   - every ledger write that commits carries the election's current
//     token (the ledger's fence; checked when fencing);
//   - no effect starts on a node whose term is not valid by its own clock;
//   - at most one completion per period is committed, and with
//     idempotent batches at most one batch of rows lands per period.
//
// The last three are checked where the write or the effect happens
// (work.go), the others here.

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

func (e *engine) check() {
	e.out.Checks++
	if e.ratesWithinMargin() {
		valid := func(n *node) bool { return n.up && n.term != 0 && n.local(e.now).Before(n.deadline) }
		count := 0
		for _, n := range e.nodes {
			if valid(n) {
				count++
			}
		}
		if count > 1 {
			var who []string
			for _, n := range e.nodes {
				if valid(n) {
					who = append(who, fmt.Sprintf("%s (token %d)", n.id, n.term))
				}
			}
			e.violate("two valid leaders with clocks within the margin: %s", strings.Join(who, ", "))
		}
	}
	if !e.logDirty {
		return // the election log has not changed since the last check
	}
	e.logDirty = false
	evs, err := e.c.Store.History(e.ctx, Job, e.lastLogSeq, 0)
	if err != nil {
		e.fail(err)
		return
	}
	for _, ev := range evs {
		e.lastLogSeq = ev.Seq
		acquired := ev.Holder != "" && (ev.Kind == store.Acquired || ev.Kind == store.TakenOver || ev.Kind == store.Transferred)
		switch {
		case acquired && ev.Token <= e.lastLogToken:
			e.violate("election log: %s by %s with token %d after token %d", ev.Kind, ev.Holder, ev.Token, e.lastLogToken)
		case !acquired && ev.Token != e.lastLogToken:
			e.violate("election log: %s changed the token from %d to %d", ev.Kind, e.lastLogToken, ev.Token)
		}
		e.lastLogToken = ev.Token
	}
}

// driftBeyond latches once two clocks' rates differ by more than the
// margin allows: from then on the protocol promises nothing about belief,
// and only the fence stands between a stale leader and the data.
func (e *engine) ratesWithinMargin() bool {
	if e.driftBeyond {
		return false
	}
	lo, hi := e.nodes[0].rate, e.nodes[0].rate
	for _, n := range e.nodes {
		lo, hi = min(lo, n.rate), max(hi, n.rate)
	}
	if hi/lo > e.c.MaxRateRatio() {
		e.driftBeyond = true
		return false
	}
	return true
}
