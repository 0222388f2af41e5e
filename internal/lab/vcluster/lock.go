package vcluster

import (
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// storeLock is the store's write lock held by a frozen node
// (ArmFreezeLocked): baton stopped inside a SQLite write transaction.
// While it is held every other process's write fails as unavailable, as
// one that waited out its busy timeout; reads go on (SQLite's WAL), so
// the other nodes' lease timers run and they campaign the moment it is
// let go. A supervisor's record waits for it.
type storeLock struct {
	holder, inc int // the frozen node and its incarnation; holder -1: free
	waiting     []waitingRecord
}

// waitingRecord is a supervisor's record that waits for the lock.
type waitingRecord struct {
	node   int
	a      scheduler.StartEffect
	inTerm bool // the supervisor saw the effect end inside its term
	// tell: the node's machine is told of the effect's end once the
	// record is written, as baton run hears of its command's exit only
	// after its supervisor's record (if the node's incarnation inc and
	// machine term gen are still the effect's).
	tell     bool
	inc, gen int
}

// lockedOut returns the error of a write by n while another node holds
// the store's write lock, or nil.
func (e *engine) lockedOut(n *node) error {
	if e.lock.holder < 0 || e.lock.holder == n.idx {
		return nil
	}
	return fmt.Errorf("%w: the store's write lock is held by %s, frozen (injected fault)", store.ErrUnavailable, e.nodes[e.lock.holder].id)
}

// writes reports whether an election store call writes.
func writes(call any) bool {
	switch call.(type) {
	case election.Swap, *swapBatch:
		return true
	}
	return false
}

// freezeLocked freezes n, armed with ArmFreezeLocked, as its effect
// starts: it takes the store's write lock (unless another node holds it)
// and thaws Hold later.
func (e *engine) freezeLocked(n *node) {
	n.armedLocked, n.frozen = false, true
	e.unobserve()
	if e.lock.holder < 0 {
		e.lock.holder, e.lock.inc = n.idx, n.inc
		e.out.Covered.LockFreezes++
	}
	e.tracef("%s froze holding the store's write lock, its effect started", n.id)
	e.c.Faults = append(e.c.Faults, Fault{At: e.now + n.lockHold, Node: n.idx, Kind: Thaw, RecordAfter: n.lockRecordAfter})
	e.push(event{at: e.now + n.lockHold, kind: evFault, arg: time.Duration(len(e.c.Faults) - 1)})
}

// unlock lets the store's write lock go: the records that waited land
// after.
func (e *engine) unlock(after time.Duration) {
	e.tracef("the store's write lock is let go")
	for _, w := range e.lock.waiting {
		e.push(event{at: e.now + after, kind: evRecord, node: int32(w.node), ev: w})
	}
	e.lock.holder, e.lock.waiting = -1, nil
}

// checkTakeover: a claim or skip that takes over the running row of an
// attempt whose effect ended inside its term (inTermEnds) runs, or writes
// off, a period whose run is known to have ended: its supervisor records
// it, fenced by the row, and a new term waits TakeoverGrace for that.
func (e *engine) checkTakeover(n *node, a *scheduler.SwapRun) {
	if !e.c.Check || !e.c.SupervisorRecords {
		return
	}
	prev, ok := e.rows[a.Swap.Run.Period]
	ended, was := e.inTermEnds[a.Swap.Run.Period]
	e.violated(EndedRowTakeover(n.id, *a, prev, ok, ended, was))
}

// lateInTermRecord reports whether a is a supervisor's record, fenced by
// the row, of an attempt whose effect ended inside its term
// (scheduler.CompleteSeen): it may commit after a newer term began, and
// is counted (Coverage.LateRecords) when it does.
func (e *engine) lateInTermRecord(a *scheduler.SwapRun) bool {
	sw := &a.Swap.Run
	ended, ok := e.inTermEnds[sw.Period]
	if a.Kind != scheduler.KindComplete || a.Swap.Fenced || !ok || ended.Token != sw.Token || ended.Attempt != sw.Attempt {
		return false
	}
	if rec, err := e.c.Store.Get(e.ctx, Job); err == nil && rec.Token != sw.Token {
		e.out.Covered.LateRecords++
	}
	return true
}

// effectSucceeded is scheduler.EffectDone{}, an effect that ended well,
// boxed once: effectSeen's most common news.
var effectSucceeded scheduler.Event = scheduler.EffectDone{}

// effectSeen tells n's machine that its effect ended: now, or, while n
// is frozen (its effect ran on while it held the store's write lock,
// ArmFreezeLocked), when it thaws.
func (e *engine) effectSeen(n *node, d scheduler.Event) {
	if !n.frozen {
		e.stepWork(n, d)
		return
	}
	n.mailbox = append(n.mailbox, event{at: e.now, kind: evEffectSeen, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.starts), ev: d})
}
