package vcluster

import (
	"errors"
	"time"

	"github.com/batonhq/baton/store"
)

// Collect is when the nodes that hold their names through a session
// collect dead session records, as baton.Group's collector does
// (sessioncollector.go in package baton): a pass lists the session records a page
// at a time (NamesPage, GetMany) and, for each one that is free (dead),
// first settles its names when a succession passed them on
// (store.Succeeder.Settle, Page names a call, until a call rewrites fewer),
// then deletes it at the version read (DeleteSession), which the store
// refuses while a record still points at it. Errors end the pass, but for
// the ones the runtime's collector passes over (a chain the store refuses
// to settle, a delete refused or of a record gone). The runtime waits a
// grace before it deletes, which only lets an operator see a session that
// just ended; a pass here deletes at once, at drawn moments, because
// safety must not rest on the grace.
//
// A pass is one store call at a time, each through the node's fault
// gates as its election calls (cut off: it fails; with CallLatency the
// request travels the node's latency; the answer travels it back, is lost
// when the node is cut off by then, waits while it is frozen, and is
// dropped when it crashed). It starts on the next node, in turn, that
// holds through a session, is up, not frozen and not in a pass already.
//
// Why the driver is its own and not the runtime's: the runtime's
// collector makes blocking calls on its own goroutine, and here every
// call is an event; the rules it applies are the store's (Settle,
// DeleteSession), and what is left is this order of calls.
type Collect struct {
	// Every starts a pass every Every from Every on (0: none on a timer).
	Every time.Duration
	// After, when set, says how long after each succession that the
	// store applies a pass starts (prompt collection: settles then race
	// with the successor's adoptions and the dead holder's late writes).
	After func() time.Duration
	// Page is the limit of a Settle call (at least 1).
	Page int
}

// on says whether collection is configured at all.
func (c Collect) on() bool { return c.Every > 0 || c.After != nil }

// collectPage is how many session records a pass reads at once, as the
// runtime's collector (collectBatch).
const collectPage = 100

// collection is a node's pass under way.
type collection struct {
	cursor   string         // the last session record name listed
	more     bool           // the last page was full: list after cursor
	dead     []store.Record // the free session records of the page still to collect, in order
	settled  bool           // dead[0]'s names are settled (or cannot be)
	inflight any            // the call whose answer the pass awaits
}

// The store calls of a pass.
type (
	collectList   struct{ after string }
	collectRead   struct{ names []string }
	collectSettle struct{ session string }
	collectDelete struct {
		session   string
		version   int64
		succeeded bool // it names a successor
	}
	// collectReply is the answer to one of them.
	collectReply struct {
		names   []string          // collectList
		records []store.GetResult // collectRead
		n       int               // collectSettle
		err     error
	}
)

// collectTick starts a pass (evCollect): a timed one (arg 1) also queues
// the next.
func (e *engine) collectTick(ev event) {
	if ev.arg == 1 && e.now+e.c.Collect.Every <= e.c.End {
		e.push(event{at: e.now + e.c.Collect.Every, kind: evCollect, arg: 1})
	}
	for range e.nodes {
		n := e.nodes[e.collectNext%len(e.nodes)]
		e.collectNext++
		if n.sessions && n.up && !n.frozen && n.coll == nil {
			n.coll = &collection{}
			e.collectCall(n, collectList{})
			return
		}
	}
}

// collectSuccession queues a prompt pass after a succession the store
// applied (Collect.After).
func (e *engine) collectSuccession() {
	if f := e.c.Collect.After; f != nil {
		e.push(event{at: e.now + f(), kind: evCollect})
	}
}

// sendCollect sends one store call of n's pass through n's fault gates.
func (e *engine) sendCollect(n *node, call any) {
	switch err := e.reachable(n); {
	case err != nil:
		e.push(event{at: e.now + n.latency, kind: evCollected, node: int32(n.idx), inc: int32(n.inc), ev: collectReply{err: err}})
	case e.c.CallLatency:
		e.push(event{at: e.now + n.latency, kind: evCollectCall, node: int32(n.idx), inc: int32(n.inc), ev: call})
	default:
		e.applyCollect(n, int32(n.inc), call)
	}
}

// applyCollect executes a store call of a pass now, whatever became of
// its sender since, and sends the answer back after n's latency.
func (e *engine) applyCollect(n *node, inc int32, call any) {
	var r collectReply
	switch c := call.(type) {
	case collectList:
		r.names, r.err = e.c.Store.NamesPage(e.ctx, store.NameQuery{After: c.after, Prefix: store.SessionPrefix, Limit: collectPage})
	case collectRead:
		r.records, r.err = e.c.Store.GetMany(e.ctx, c.names)
	case collectSettle:
		h, ok := store.SucceederOf(e.c.Store)
		if !ok {
			break // nothing to settle: the store keeps no successions
		}
		r.n, r.err = h.Settle(e.ctx, c.session, e.c.Collect.Page)
		if r.n > 0 {
			e.out.Covered.Settled += r.n
			e.tracef("%s settled %d names passed on from %s", n.id, r.n, c.session)
			for i := range e.logs {
				e.dirty(i) // the succession's events are stored now: the same as History showed
			}
		}
	case collectDelete:
		r.err = e.c.Store.DeleteSession(e.ctx, c.session, c.version)
		if r.err == nil {
			e.out.Covered.Deleted++
			if c.succeeded {
				e.out.Covered.DeletedSucceeded++
			}
			e.tracef("%s deleted session %s", n.id, c.session)
		}
	}
	e.push(event{at: e.now + n.latency, kind: evCollected, node: int32(n.idx), inc: inc, ev: r})
}

// collectReplied takes the answer to the call of n's pass in flight
// and sends the next call, or ends the pass.
func (e *engine) collectReplied(n *node, r collectReply) {
	p := n.coll
	if p == nil {
		return
	}
	if e.c.CallLatency && n.cut {
		r = collectReply{err: lostErr(n)} // the answer is lost on the way
	}
	switch p.inflight.(type) {
	case collectList:
		if r.err != nil || len(r.names) == 0 {
			n.coll = nil
			return
		}
		p.more, p.cursor = len(r.names) == collectPage, r.names[len(r.names)-1]
		e.collectCall(n, collectRead{names: r.names})
		return
	case collectRead:
		if r.err != nil {
			n.coll = nil
			return
		}
		for _, g := range r.records {
			if g.Err == nil && g.Record.Free() {
				p.dead = append(p.dead, g.Record)
			}
		}
	case collectSettle:
		switch {
		case errors.Is(r.err, store.ErrInvalid):
			p.settled = true // a chain the store refuses: its delete is refused too
		case r.err != nil:
			n.coll = nil
			return
		case r.n >= e.c.Collect.Page:
			e.collectCall(n, p.inflight) // maybe more: the next page
			return
		default:
			p.settled = true
		}
	case collectDelete:
		switch {
		case r.err == nil, errors.Is(r.err, store.ErrConflict), errors.Is(r.err, store.ErrNotFound), errors.Is(r.err, store.ErrInvalid):
			// Deleted, or changed or gone since the read: look again next pass.
			p.dead, p.settled = p.dead[1:], false
		default:
			n.coll = nil
			return
		}
	}
	switch {
	case len(p.dead) > 0 && p.dead[0].Successor != "" && !p.settled:
		e.collectCall(n, collectSettle{session: p.dead[0].Name})
	case len(p.dead) > 0:
		e.collectCall(n, collectDelete{session: p.dead[0].Name, version: p.dead[0].Version, succeeded: p.dead[0].Successor != ""})
	case p.more:
		e.collectCall(n, collectList{after: p.cursor})
	default:
		n.coll = nil
	}
}

// collectCall sends call as the one in flight of n's pass.
func (e *engine) collectCall(n *node, call any) {
	n.coll.inflight = call
	e.sendCollect(n, call)
}
