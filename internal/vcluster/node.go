package vcluster

import (
	"fmt"
	"math"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// node is one process of the virtual cluster: the runtime around its
// election machine (this file) and its scheduler machine (work.go).
type node struct {
	idx int
	id  string
	inc int
	m   *election.Machine
	sm  *scheduler.Machine

	up, frozen, cut, armed bool
	t0, l0                 time.Duration // local clock: l0 + (now-t0)*rate
	rate                   float64
	latency                time.Duration
	tickGen, workGen       int
	termGen                int // tags the scheduler machine's replies with their term
	mailbox                []event

	term     uint64
	deadline time.Time
	fenced   uint64

	armedBeforeCheck bool
	armedInFlight    bool
	pending          *scheduler.StartEffect // frozen before the effect
	pendingChecked   bool                   // after its Valid() check
	frozenByEffect   bool
}

func (n *node) local(now time.Duration) time.Time {
	return Epoch.Add(n.l0 + time.Duration(float64(now-n.t0)*n.rate))
}

func (n *node) realAt(l time.Time) time.Duration {
	return n.t0 + time.Duration(math.Ceil(float64(l.Sub(Epoch)-n.l0)/n.rate))
}

// newMachine starts a new incarnation of n.
func (e *engine) newMachine(n *node) {
	n.inc++
	n.m = election.New(election.Config{
		Name: Job, Node: n.id, Incarnation: fmt.Sprintf("%s.%d", n.id, n.inc),
		Lease: e.c.Lease, Renew: e.c.Renew, Margin: e.c.Margin, Poll: e.c.Poll, Retry: e.c.Poll,
	})
	n.sm = scheduler.New(e.work)
	n.term, n.deadline, n.pending = 0, time.Time{}, nil
}

// valid is Term.Valid() of n's current term, read on n's own clock.
func (e *engine) valid(n *node) bool {
	return n.up && !n.frozen && n.term != 0 && n.local(e.now).Before(n.deadline)
}

func (e *engine) reachable(n *node) error {
	if n.cut {
		return fmt.Errorf("%w: %s is cut off (injected fault)", store.ErrUnavailable, n.id)
	}
	return nil
}

// step feeds the election machine and executes its actions, as
// baton.Elector does.
func (e *engine) step(n *node, ev election.Event) {
	lost := false
	for _, a := range n.m.Step(n.local(e.now), ev) {
		switch a := a.(type) {
		case election.Get:
			var r election.GetReply
			if r.Err = e.reachable(n); r.Err == nil {
				r.Record, r.Err = e.c.Store.Get(e.ctx, a.Name)
			}
			e.push(event{at: e.now + n.latency, kind: evReply, node: int32(n.idx), inc: int32(n.inc), ev: r})
		case election.Swap:
			var r election.SwapReply
			if r.Err = e.reachable(n); r.Err == nil {
				r.Record, r.Err = e.c.Store.Swap(e.ctx, a.Swap)
				if r.Err == nil {
					e.logDirty = true
				}
			}
			e.push(event{at: e.now + n.latency, kind: evReply, node: int32(n.idx), inc: int32(n.inc), ev: r})
		case election.Elected:
			n.term, n.deadline = a.Token, a.Deadline
			e.out.Elections = append(e.out.Elections, Election{e.now, n.idx, a.Token})
			e.tracef("%s elected, token %d, valid until its clock reads +%v", n.id, a.Token, a.Deadline.Sub(n.local(e.now)))
			e.note(n, Happening{Kind: Elected, Token: a.Token})
			n.termGen++
			e.push(event{at: e.now, kind: evTermStart, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.termGen)})
		case election.Extended:
			n.deadline = a.Deadline
		case election.Lost:
			e.tracef("%s lost token %d: %v", n.id, n.term, a.Cause)
			e.note(n, Happening{Kind: Lost, Token: n.term, Cause: a.Cause.Error()})
			n.term = 0
			e.endWork(n)
			lost = true
		}
	}
	if lost {
		// Like baton.Elector.Run: campaign again once the release is done.
		e.step(n, election.Start{})
		return
	}
	e.armTimer(n)
}

func (e *engine) armTimer(n *node) {
	n.tickGen++
	if next := n.m.Next(); !next.IsZero() {
		e.push(event{at: max(n.realAt(next), e.now), kind: evTick, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.tickGen)})
	}
}
