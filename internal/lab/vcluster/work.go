package vcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// This file is a node's runtime for the scheduler machine, the virtual-time
// counterpart of schedule.Runner: store calls are applied when sent and
// answered after the node's latency, the effect is the batch of invoice
// lines written through the resource, and an armed node freezes between
// its Valid() check and the batch.

// startWork begins the work of n's new term: a new leader first raises the
// resource's fence (when fencing), so that the old leader's late writes are
// refused from now on, then its scheduler machine starts.
func (e *engine) startWork(n *node) {
	if !e.valid(n) {
		return
	}
	if e.c.Fence && n.fenced < n.term {
		switch err := e.c.Resource.Raise(e.ctx, Job, n.term); {
		case errors.Is(err, fence.ErrStaleToken):
			e.out.Rejected++
			e.tracef("%s token %d: raising the fence was refused; a newer leader exists", n.id, n.term)
			e.note(n, Happening{Kind: Refused, Token: n.term, Cause: "raising the fence"})
			return
		case err != nil:
			e.fail(err)
			return
		}
		n.fenced = n.term
	}
	n.starts++
	e.stepWork(n, scheduler.Start{Token: n.term, Node: n.id})
}

// endWork tells n's scheduler machine that the term ended.
func (e *engine) endWork(n *node) {
	n.termGen++
	n.heldAt = -1
	e.stepWork(n, scheduler.End{})
	e.landStep(n)
}

// wallNow is the business wall time now, e.cal.Wall(e.now), made once an
// instant: the scheduler steps of an instant read it again and again.
func (e *engine) wallNow() time.Time {
	if !e.wallOK || e.wallAt != e.now {
		e.wallAt, e.wall, e.wallOK = e.now, e.cal.Wall(e.now), true
	}
	return e.wall
}

// wallOf is n's wall clock now: the wall time, wallOff off (a Time plus
// 0 is the same Time: Add is skipped then).
func (e *engine) wallOf(n *node) time.Time {
	if n.wallOff == 0 {
		return e.wallNow()
	}
	return e.wallNow().Add(n.wallOff)
}

// stepWork feeds the scheduler machine and executes its actions.
func (e *engine) stepWork(n *node, ev scheduler.Event) {
	wall := e.wallOf(n)
	if d, ok := ev.(scheduler.EffectDone); ok && !d.NotStarted && d.Err == nil && n.running.Period != "" {
		e.toldFinished[attemptOf(n.running)] = true
	}
	if _, ok := ev.(scheduler.EffectDone); ok {
		n.effectOut = false
	}
	for _, a := range n.sm.Step(wall, ev) {
		e.doWork(n, a)
	}
	e.armWork(n)
	if e.prefer() {
		e.safePoint(n)
	}
}

func (e *engine) armWork(n *node) {
	n.workGen++
	if next := n.sm.Next(); !next.IsZero() {
		e.push(event{at: max(e.cal.Virtual(next.Add(-n.wallOff)), e.now), kind: evWorkTick, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.workGen)})
	}
}

// send sends a store call of n's scheduler machine. Without WorkLatency
// it is applied now and answered in a later event at the same instant;
// with it, the request travels the node's latency before the store applies
// it (a write may so land after its sender was deposed: what the ledger's
// fence is for), and the answer travels it back.
func (e *engine) send(n *node, a scheduler.Action) {
	gen := int32(n.termGen)
	err := e.reachable(n)
	switch a.(type) {
	case scheduler.SwapRun, scheduler.Register, scheduler.Prune:
		if err == nil {
			err = e.lockedOut(n)
		}
	}
	if err != nil {
		e.reply(n, gen, scheduler.Failed(a, err), n.latency)
		return
	}
	switch a.(type) {
	case scheduler.SwapRun, scheduler.GetRun:
		n.runCalls++ // answered in dispatch, whatever its term
	}
	if !e.c.WorkLatency {
		e.reply(n, gen, e.call(n, a), 0)
		return
	}
	e.push(event{at: e.now + n.latency, kind: evWorkCall, node: int32(n.idx), inc: int32(n.inc), gen: gen, ev: a})
	if n.armedInFlight {
		n.frozen, n.frozenByEffect = true, true
		e.unobserve()
		e.tracef("%s froze with a ledger call in flight", n.id)
	}
}

// arrive applies a call that reached the store: whatever became of its
// sender meanwhile (frozen, crashed), the store applies it.
func (e *engine) arrive(ev event) {
	n := e.nodes[ev.node]
	r := e.call(n, ev.ev.(scheduler.Action))
	e.push(event{at: e.now + n.latency, kind: evWorkReply, node: ev.node, inc: ev.inc, gen: ev.gen, ev: r})
}

func (e *engine) reply(n *node, gen int32, ev scheduler.Event, latency time.Duration) {
	if !e.c.WorkLatency {
		latency = 0
	}
	e.push(event{at: e.now + latency, kind: evWorkReply, node: int32(n.idx), inc: int32(n.inc), gen: gen, ev: ev})
}

// runsAppender is a store that reads the ledger into a slice of the
// caller's (memstore.Store.RunsAppend).
type runsAppender interface {
	RunsAppend(ctx context.Context, dst []store.Run, job, after string, limit int) ([]store.Run, error)
}

// runs reads Job's ledger after after, into a slice kept for reuse
// (spareRows) when the store can: a read's rows are the scheduler
// machine's only for the step that takes them (rowsDone).
func (e *engine) runs(after string) ([]store.Run, error) {
	s, ok := e.c.Store.(runsAppender)
	if !ok {
		return e.c.Store.Runs(e.ctx, Job, after, 0)
	}
	var dst []store.Run
	if k := len(e.spareRows); k > 0 {
		dst = e.spareRows[k-1]
		e.spareRows[k-1] = nil
		e.spareRows = e.spareRows[:k-1]
	}
	return s.RunsAppend(e.ctx, dst, Job, after, 0)
}

// rowsDone keeps the rows of a ledger read that its machine has stepped
// for reuse by runs: the machine plans from them and keeps none.
func (e *engine) rowsDone(rows []store.Run) {
	if cap(rows) > 0 {
		clear(rows) // the strings, for the collector
		e.spareRows = append(e.spareRows, rows[:0])
	}
}

// call applies a store call of n's scheduler machine and returns its answer.
func (e *engine) call(n *node, a scheduler.Action) scheduler.Event {
	switch a := a.(type) {
	case scheduler.Register:
		var r scheduler.Registered
		r.Job, r.Err = e.c.Store.EnsureJob(e.ctx, store.Job{Name: Job, Schedule: "virtual"})
		return r
	case scheduler.ReadJob:
		j, err := e.c.Store.GetJob(e.ctx, Job)
		if err == nil && e.jobRead != nil && j == e.jobReadOf {
			return e.jobRead // the job as the last read found it: the same answer, boxed once
		}
		r := scheduler.Event(scheduler.JobRead{Job: j, Err: err})
		if err == nil {
			e.jobRead, e.jobReadOf = r, j
		}
		return r
	case scheduler.ReadRuns:
		var r scheduler.RunsRead
		r.Rows, r.Err = e.runs(a.After)
		if len(e.c.DamagedRows) > 0 && r.Err == nil {
			r.Rows = withDamaged(r.Rows, e.c.DamagedRows, a.After)
		}
		return r
	case scheduler.SwapRun:
		e.checkDamaged(n, a)
		var r scheduler.Swapped
		r.Run, r.Err = e.c.Store.SwapRun(e.ctx, a.Swap)
		e.ledgerWrite(n, &a, &r)
		return r
	case scheduler.GetRun:
		var r scheduler.ReadBack
		r.Run, r.Err = e.c.Store.GetRun(e.ctx, Job, a.Period)
		return r
	case scheduler.Prune:
		var r scheduler.Pruned
		var before []store.Run
		if e.c.Check {
			before = e.ledger()
		}
		r.N, r.Err = e.c.Store.PruneRuns(e.ctx, a.Prune)
		if e.c.Check && r.N > 0 {
			e.checkPrune(n, before, e.ledger())
		}
		e.out.Covered.Pruned += r.N
		if r.Err == nil && r.N > 0 {
			if e.tracing() {
				e.tracef("%s pruned %d rows with token %d", n.id, r.N, a.Prune.Token)
			}
		}
		if errors.Is(r.Err, fence.ErrStaleToken) {
			e.out.Rejected++
		}
		return r
	}
	panic("vcluster: not a store call")
}

func (e *engine) doWork(n *node, act scheduler.Action) {
	switch a := act.(type) {
	case scheduler.SwapRun:
		e.checkClockGuard(n, &a)
		e.send(n, act) // as boxed by the machine, not boxed again
	case scheduler.Register, scheduler.ReadJob, scheduler.ReadRuns, scheduler.GetRun, scheduler.Prune:
		e.send(n, act)
	case scheduler.CheckClock:
		// The reference is the true time (a store's clock, PostgreSQL's),
		// answered at once.
		e.landStep(n)
		n.checkedOff = n.wallOff
		e.reply(n, int32(n.termGen), scheduler.ClockRead{Reference: e.wallNow()}, 0)
	case scheduler.ClockHeld:
		e.tracef("%s token %d: the clock guard holds it off: %v (skew %v)", n.id, n.term, a.Held, a.Skew)
		n.heldAt = -1
		if a.Held {
			n.heldAt = e.now
			e.out.Covered.ClockHeld++
		}
	case scheduler.StartEffect:
		n.running, n.effectOut = a.Run, true
		if n.armedBeforeCheck {
			p := a // a copy that escapes only here: a itself stays on the stack
			n.frozen, n.frozenByEffect, n.pending, n.pendingChecked = true, true, &p, false
			e.unobserve()
			e.tracef("%s froze before its Valid() check for %s", n.id, a.Period.Key)
			return
		}
		e.startEffect(n, a)
	case scheduler.StopEffect:
		e.stopEffect(n, a)
	case scheduler.Halt:
		e.tracef("%s token %d acts no more in this term: %v", n.id, n.term, a.Cause)
	case scheduler.Fail:
		if e.damagedRow(a.Err) {
			// As baton run does, the node's work ends with the error;
			// its term goes on, and so does the run.
			e.out.Covered.DamagedRefused++
			e.tracef("%s token %d ends its work: %v", n.id, n.term, a.Err)
			return
		}
		e.fail(a.Err)
	case scheduler.StepDown:
		// As baton run does: Run returns, the Elector resigns and stops
		// campaigning, and the node waits for its clock to agree.
		e.tracef("%s token %d steps down: %v", n.id, n.term, a.Err)
		e.out.Covered.SteppedDown++
		n.awaiting = true // heldAt stays: the term must end, and soon (checkStepDown)
		e.push(event{at: e.now, kind: evStepDown, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.termGen)})
	case scheduler.Note:
		e.checkOwnCompletion(n, a)
		if e.c.Trace != nil && a.Level >= slog.LevelWarn {
			e.tracef("%s %s %s: %v", n.id, a.Msg, a.Period, a.Err)
		}
	}
}

// clockOff reports whether n's wall clock is off the true time by more than
// the clock guard's tolerance, by the guard's own comparison.
func (e *engine) clockOff(n *node) bool {
	truth := e.wallNow()
	_, off := scheduler.Skew(truth.Add(n.wallOff), truth, e.work.ClockTolerance)
	return e.work.ClockTolerance > 0 && off
}

// awaitClock campaigns for Job again on a node that stepped down, once its
// clock agrees (schedule.AwaitClock's loop, which polls; the simulator
// looks when the clock changes or the node thaws).
func (e *engine) awaitClock(n *node) {
	if n.awaiting && n.up && !n.frozen && !e.clockOff(n) {
		n.awaiting = false
		e.tracef("%s's wall clock agrees again: campaigning", n.id)
		e.step(n, election.Start{Name: Job, Hold: true})
	}
}

// landStep sets n's wall clock to the step that waits for it, if any. A
// step lands on a node outside a term at once, on one in a term when its
// machine checks the clock (the first thing of a pass, when no plan and no
// run is under way) or its term ends. The machine measures the time
// between two of its own readings by its wall clock here, where a
// runtime's readings carry a monotonic one that a step does not move: a
// step in the middle of a run or a plan would make the simulator's
// machine see what no runtime does. A step on a held-off leader restarts
// the step-down bound, as a thaw does.
func (e *engine) landStep(n *node) {
	if !n.stepping {
		return
	}
	n.wallOff, n.stepping = n.stepTo, false
	e.tracef("%s's wall clock is now %v off", n.id, n.wallOff)
	if n.heldAt >= 0 {
		n.heldAt = e.now
	}
	e.awaitClock(n)
}

// clockThawed restarts the step-down bound of a thawed node (a frozen
// machine checks no clock) and lets a node that stepped down look at its
// clock.
func (e *engine) clockThawed(n *node) {
	if n.heldAt >= 0 && !n.frozen {
		n.heldAt = e.now
	}
	e.awaitClock(n)
}

// checkClockGuard: a claim or skip follows a clock check that found the
// node's wall clock within the tolerance (Config.ClockTolerance).
func (e *engine) checkClockGuard(n *node, a *scheduler.SwapRun) {
	if !e.c.Check || e.work.ClockTolerance <= 0 || a.Kind == scheduler.KindComplete || a.Kind == scheduler.KindRelease {
		return
	}
	if a.Kind == scheduler.KindClaim && n.checkedOff != 0 && n.checkedOff.Abs() <= e.work.ClockTolerance {
		e.out.Covered.ClockWithin++
	}
	e.violated(ClockGuard(n.id, *a, n.checkedOff, e.work.ClockTolerance))
}

// ledger reads every row of the job's ledger, oldest first.
func (e *engine) ledger() []store.Run {
	rows, err := e.c.Store.Runs(e.ctx, Job, "", 0)
	if err != nil {
		e.fail(err)
	}
	return rows
}

// checkPrune checks, by the checker's own reading of the retention, every
// row that a prune of n deleted (in before, not in after): a done or
// skipped row (a failed one stays until it is run again or pruned by
// hand), not the newest scheduled row (the catch-up starts after it), and
// past the retention: older than Age by the true time, plus the clock
// guard's tolerance when it is on (a node prunes by its own wall clock,
// which the guard lets differ by that much), or with at least Rows newer
// rows.
func (e *engine) checkPrune(n *node, before, after []store.Run) {
	e.violated(PruneCheck(n.id, e.c.Retention, e.work.ClockTolerance, e.cal.Wall(e.now), before, after))
}

// startEffect checks Valid() if asked to and starts the effect; an armed
// node freezes in between.
func (e *engine) startEffect(n *node, a scheduler.StartEffect) {
	if a.RequireValid && !e.valid(n) {
		e.stepWork(n, scheduler.EffectDone{NotStarted: true})
		return
	}
	if e.c.Check && !e.valid(n) {
		e.violate("%s started the effect of %s with token %d while its term was not valid on its own clock", n.id, a.Period.Key, a.Run.Token)
	}
	if n.armed {
		p := a // as in doWork
		n.frozen, n.frozenByEffect, n.pending, n.pendingChecked = true, true, &p, true
		e.unobserve()
		e.tracef("%s froze after its Valid() check, before writing %s", n.id, a.Period.Key)
		e.note(n, Happening{Kind: FrozeBefore, Token: a.Run.Token, Period: a.Period.Key})
		return
	}
	e.runEffect(n, a)
}

// ledgerWrite accounts for a ledger write that was applied or refused.
func (e *engine) ledgerWrite(n *node, a *scheduler.SwapRun, r *scheduler.Swapped) {
	sw := &a.Swap.Run
	switch {
	case errors.Is(r.Err, fence.ErrStaleToken):
		e.out.Rejected++
		e.tracef("%s %s of %s with token %d refused by the ledger's fence", n.id, a.Kind, sw.Period, sw.Token)
		e.note(n, Happening{Kind: Refused, Token: sw.Token, Period: sw.Period, Cause: fmt.Sprintf("%s in the ledger", a.Kind)})
		return
	case errors.Is(r.Err, store.ErrSuspended):
		e.out.Covered.SuspendRefused++
		return
	case r.Err != nil:
		return
	}
	if e.tracing() {
		e.tracef("%s %s %s with token %d (attempt %d)", n.id, a.Kind, sw.Period, sw.Token, sw.Attempt)
	}
	e.checkTakeover(n, a)
	if a.Kind == scheduler.KindClaim {
		e.note(n, Happening{Kind: Claimed, Token: sw.Token, Period: sw.Period})
	}
	e.checkCap(a)
	e.checkWindow(a)
	e.checkJitter(a)
	e.checkSuspended(a)
	e.checkOverlap(n, a)
	e.checkRetry(a)
	e.checkSkip(a)
	e.cover(a)
	e.rows[sw.Period] = r.Run
	if Finishes(*a) {
		e.out.Finished[sw.Period] = r.Run
	}
	if a.Kind == scheduler.KindComplete && sw.State == store.Done {
		// A failed attempt may be retried: only successes count.
		e.completions[sw.Period]++
		if e.c.Check && e.completions[sw.Period] > 1 {
			e.violate("period %s completed %d times", sw.Period, e.completions[sw.Period])
		}
	}
	if a.Kind == scheduler.KindRelease {
		e.checkRelease(n, a)
	}
	if e.c.Check && e.c.Fence && !e.lateInTermRecord(a) && !e.lateRelease(a) {
		if rec, err := e.c.Store.Get(e.ctx, Job); err == nil {
			e.violated(ledgerTokenRule(n.id, a, rec.Token))
		}
	}
}

// effectEnd is an effect that takes time, ending (evEffectDone).
type effectEnd struct {
	a             scheduler.StartEffect
	fail, stopped bool // stopped: the runtime stopped it (StopEffect)
}

// runEffect is the batch: the period's invoice lines in one transaction,
// through the fence when fencing. With Config.Effect it takes the time
// that says and may fail; the lines are written when it ends.
func (e *engine) runEffect(n *node, a scheduler.StartEffect) {
	if n.armedLocked {
		// The effect runs on (the command and its supervisor are not
		// frozen); the node stops inside a write, holding the lock.
		e.freezeLocked(n)
	}
	if e.c.Effect != nil {
		if d, fail := e.c.Effect(a.Period.Key, a.Run.Attempt); d > 0 || fail {
			if d > e.c.Day {
				e.out.Covered.LongRuns++
			}
			if fail {
				e.out.Covered.Failures++
			}
			n.effID++
			n.effStart, n.effFroze, n.effRun = e.now, false, a
			e.push(event{at: e.now + d, kind: evEffectDone, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.starts),
				ev: effectEnd{a: a, fail: fail}, arg: time.Duration(n.effID)})
			return
		}
	}
	e.finishEffect(n, a, false, true)
}

// stopEffect stops n's effect that takes time, as the runtime kills a
// command: it reports at once, interrupted, and writes nothing.
func (e *engine) stopEffect(n *node, a scheduler.StopEffect) {
	if n.effID == 0 || slices.Contains(n.effStopped, n.effID) {
		return
	}
	n.effStopped = append(n.effStopped, n.effID)
	e.tracef("%s stops its run of %s: %v", n.id, n.effRun.Period.Key, a.Cause)
	e.push(event{at: e.now, kind: evEffectDone, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.starts),
		ev: effectEnd{a: n.effRun, stopped: true}, arg: time.Duration(n.effID)})
}

// effectEnded is the end of an effect that takes time (evEffectDone):
// stopped, or run to its end unless it was stopped before. A run that
// ends by itself past the policy's timeout, on a node whose machine works
// in its term and was never frozen meanwhile, was not stopped in time.
func (e *engine) effectEnded(n *node, ev event) {
	end, deliver := ev.ev.(effectEnd), int(ev.gen) == n.starts
	id := int(ev.arg)
	if end.stopped {
		e.out.Covered.Timeouts++
		e.busy(n, end.a, deliver)
		if deliver {
			e.stepWork(n, scheduler.EffectDone{ExitCode: 128 + 15, Output: "stopped", Err: scheduler.ErrInterrupted})
		}
		return
	}
	if i := slices.Index(n.effStopped, id); i >= 0 {
		n.effStopped = slices.Delete(n.effStopped, i, i+1)
		return // killed: it writes nothing
	}
	if t := e.c.Policy.Timeout; e.c.Check && t > 0 && deliver && n.sm.Working() && id == n.effID && !n.effFroze {
		e.violated(Timeout(end.a.Period.Key, n.id, e.cal.Business(e.now-n.effStart), t))
	}
	e.finishEffect(n, end.a, end.fail, deliver)
}

// finishEffect ends the effect a of n: it writes the lines unless the
// effect fails, and tells the machine when deliver says the machine is
// still in the term (Start) that started it. A process does not know that
// its term ended while its effect ran: the write goes through the fence
// all the same.
func (e *engine) finishEffect(n *node, a scheduler.StartEffect, fail, deliver bool) {
	period, token := a.Period.Key, a.Run.Token
	if fail {
		e.tracef("%s run of %s with token %d failed (simulated)", n.id, period, token)
		e.busy(n, a, deliver)
		if deliver {
			e.effectSeen(n, scheduler.EffectDone{ExitCode: 1, Output: "simulated failure"})
		}
		return
	}
	landed, err := e.c.Resource.Write(e.ctx, Batch{Period: period, Node: n.id, Token: token,
		Lines: e.c.InvoiceLines, Fence: e.c.Fence, Idempotent: e.c.Idempotent})
	switch {
	case errors.Is(err, fence.ErrStaleToken):
		e.out.Rejected++
		e.tracef("%s write of %s with token %d rejected by the fence", n.id, period, token)
		e.note(n, Happening{Kind: Refused, Token: token, Period: period, Cause: "writing the invoice lines"})
		if deliver {
			e.effectSeen(n, scheduler.EffectDone{Err: err})
		}
		return
	case err != nil:
		e.fail(err)
		return
	}
	if landed {
		e.out.Landings[period]++
		if _, ok := e.out.FirstLanding[period]; !ok {
			e.out.FirstLanding[period] = e.now
		}
		if e.c.Check && token < e.acceptedTokens {
			e.violate("write of %s with token %d landed after one with token %d", period, token, e.acceptedTokens)
		}
		if e.c.Check && e.c.Idempotent && e.c.Fence && e.out.Landings[period] > 1 {
			e.violate("period %s: its batch landed %d times", period, e.out.Landings[period])
		}
		e.acceptedTokens = max(e.acceptedTokens, token)
		if e.tracing() {
			e.tracef("%s wrote %d lines of %s with token %d", n.id, e.c.InvoiceLines, period, token)
		}
		e.note(n, Happening{Kind: Wrote, Token: token, Period: period})
	}
	e.busy(n, a, deliver)
	if e.c.SupervisorRecords && n.up && e.supervisorRecords(n, a, deliver) {
		return // its machine is told once the record is written
	}
	if deliver {
		e.effectSeen(n, effectSucceeded)
	}
}

// supervisorRecords is the effect's own process (baton run's supervisor)
// recording its success the moment it ends, with the write the machine's
// record action makes (scheduler.CompleteSeen): the row's version moves
// on before the machine, told later, writes the same outcome. It saw the
// end inside the term when the node's term is still the run's and its
// deadline has not passed on its own clock (the supervisor holds it).
// While a frozen node holds the store's write lock, the record waits for
// it (ArmFreezeLocked), and so does the node's machine, told of the end
// (when tell says so) only after the record, as baton run hears of its
// command's exit only from its supervisor's report, which follows the
// record: supervisorRecords then returns true.
func (e *engine) supervisorRecords(n *node, a scheduler.StartEffect, tell bool) bool {
	inTerm := n.term == a.Run.Token && election.Valid(n.local(e.now), n.deadline)
	if e.c.Check && inTerm {
		if rec, err := e.c.Store.Get(e.ctx, Job); err == nil && rec.Token == a.Run.Token {
			e.inTermEnds[a.Period.Key] = a.Run
		}
	}
	if e.lock.holder >= 0 {
		e.tracef("%s's supervisor waits for the store's write lock to record %s", n.id, a.Period.Key)
		e.lock.waiting = append(e.lock.waiting, waitingRecord{node: n.idx, a: a, inTerm: inTerm, tell: tell, inc: n.inc, gen: n.starts})
		return true
	}
	e.supervisorRecord(n, a, inTerm)
	return false
}

// supervisorRecord writes the supervisor's record of the effect a: fenced
// by the row when it saw the effect end inside its term, else by the
// token (unless the ledger is unfenced).
func (e *engine) supervisorRecord(n *node, a scheduler.StartEffect, inTerm bool) {
	sw := scheduler.CompleteSeen(a.Run, 0, "", nil, e.wallOf(n), inTerm && !e.c.Mutate.TokenFencedRecord)
	if !e.c.Fence || e.c.Mutate.UnfencedLedger {
		sw.Fenced = false
	}
	act := scheduler.SwapRun{Kind: scheduler.KindComplete, Swap: sw}
	run, err := e.c.Store.SwapRun(e.ctx, sw)
	e.ledgerWrite(n, &act, &scheduler.Swapped{Run: run, Err: err})
	if err == nil {
		if e.tracing() {
			e.tracef("%s's supervisor recorded %s done with token %d (attempt %d)", n.id, sw.Run.Period, sw.Run.Token, sw.Run.Attempt)
		}
		if n.ownRecords == nil {
			n.ownRecords = map[string]store.Run{}
		}
		n.ownRecords[sw.Run.Period] = run
	} else {
		e.tracef("%s's supervisor could not record %s: %v", n.id, sw.Run.Period, err)
	}
}

// checkOwnCompletion: a machine that notes its completion of period
// refused (a warning with a conflict) while the row is the one its own
// supervisor recorded for this very attempt counts its own success as
// lost (the [no-own-completion] mutation).
func (e *engine) checkOwnCompletion(n *node, a scheduler.Note) {
	own, ok := n.ownRecords[a.Period]
	if !ok || !e.c.Check || a.Level < slog.LevelWarn || !errors.Is(a.Err, store.ErrConflict) {
		return
	}
	if cur, err := e.c.Store.GetRun(e.ctx, Job, a.Period); err == nil {
		e.violated(OwnCompletion(n.id, a, own, cur, n.term))
	}
}

// busy notes, for the overlap check, the run a of n that its machine is
// told ended now while working in its term: that term's previous run.
func (e *engine) busy(n *node, a scheduler.StartEffect, deliver bool) {
	if deliver && n.sm.Working() {
		// By the node's wall clock, as its machine sees the run's end.
		n.busyTok, n.busyFrom, n.busyTo = a.Run.Token, a.Run.Started, e.wallOf(n)
	}
}

// backfill is an operator's "baton backfill" of the periods due from
// f.From to f.Until: the machine's plan (scheduler.PlanBackfill) written as
// manual triggers of the periods' keys (schedule.Trigger), as the command
// does. Every period it makes pending must then be run once more.
func (e *engine) backfill(f Fault) {
	from, to := e.c.Wall(f.From), e.c.Wall(f.Until)
	if e.c.Schedule == nil || !e.c.Persistent {
		return
	}
	rows, err := e.c.Store.Runs(e.ctx, Job, schedule.Key(from.Add(-time.Second)), 0)
	if err != nil {
		e.fail(err)
		return
	}
	items, err := scheduler.PlanBackfill(e.c.Schedule, from, to, e.cal.Wall(e.now), rows, scheduler.MaxBackfill)
	if err != nil {
		e.tracef("operator: backfill %s to %s: %v", schedule.Key(from), schedule.Key(to), err)
		return
	}
	added := 0
	for _, it := range items {
		if it.Do == scheduler.BackfillKeep {
			continue
		}
		r, _, err := schedule.Trigger(e.ctx, e.c.Store, Job, it.Period.Key)
		switch {
		case errors.Is(err, schedule.ErrAlreadyDone):
			continue
		case err != nil:
			e.fail(err)
			return
		}
		if r.State != store.Pending {
			continue
		}
		added++
		e.rows[r.Period], e.completions[r.Period], e.out.Backfilled[r.Period] = r, 0, e.now
		delete(e.out.Finished, r.Period)
	}
	e.tracef("operator: backfill %s to %s: %d periods, %d made pending", schedule.Key(from), schedule.Key(to), len(items), added)
}

// cover counts what the committed write a exercised (Outcome.Covered).
func (e *engine) cover(a *scheduler.SwapRun) {
	sw, c := &a.Swap.Run, &e.out.Covered
	switch a.Kind {
	case scheduler.KindSkip:
		switch out := sw.Output; {
		case strings.HasPrefix(out, overlapReason):
			c.OverlapSkips++
		case strings.Contains(out, capReason):
			c.CapSkips++
		case strings.Contains(out, windowReason):
			c.WindowSkips++
		case strings.HasPrefix(out, "skipped: catch-up policy "):
			c.PolicySkips++
		}
	case scheduler.KindClaim:
		if prev, ok := e.rows[sw.Period]; ok && prev.Version == a.Swap.Expect && prev.State == store.Failed {
			c.Retries++
		}
		if _, ok := e.out.Backfilled[sw.Period]; ok && sw.Manual {
			c.BackfillRuns++
		}
	}
}

// overlapReason marks a skip by the overlap policy.
const overlapReason = "skipped: overlap: "

// checkOverlap checks the overlap policy skip: a scheduled period's first
// claim by a term never comes due (its instant plus its jitter) while
// that term's previous run went on, and a period is skipped for overlap
// only when it did.
func (e *engine) checkOverlap(n *node, a *scheduler.SwapRun) {
	if e.c.Check {
		e.violated(e.rules.overlapRule(n.id, a, &Busy{Token: n.busyTok, From: n.busyFrom, To: n.busyTo}))
	}
}

// checkRetry checks a claim of a period whose last committed outcome is a
// failure (a retry): the failed attempt had retries left (Attempt at most
// Policy.Retries), and the claim starts no earlier than Policy.RetryBackoff
// after it finished.
func (e *engine) checkRetry(a *scheduler.SwapRun) {
	if e.c.Check {
		prev, ok := e.rows[a.Swap.Run.Period]
		e.violated(e.rules.retryRule(a, &prev, ok))
	}
}

// windowReason marks a skip by the catch-up window.
const windowReason = "outside the catch-up window of "

// checkSkip checks what a skip may skip: never a manual period (a trigger
// or a backfill row, which an operator asked for), and, by the catch-up
// window, only a period later than the window.
func (e *engine) checkSkip(a *scheduler.SwapRun) {
	if e.c.Check {
		e.violated(e.rules.skipRule(a))
	}
}

// capReason marks a skip by the catch-up cap (scheduler.Policy.Max).
const capReason = "outside the catch-up window: "

// checkCap checks a scheduled period's first claim or skip against the
// catch-up cap: a period is claimed only while fewer than Max newer
// instants are due, and skipped by the cap only when at least Max are.
func (e *engine) checkCap(a *scheduler.SwapRun) {
	if e.c.Check {
		e.violated(e.rules.capRule(a))
	}
}

// checkWindow checks a claim of a scheduled period (a first claim or a
// retry) against the catch-up window: it starts no later than Window after
// the period's instant, by the claimant's clock, however long ago it was
// planned.
func (e *engine) checkWindow(a *scheduler.SwapRun) {
	if e.c.Check {
		e.violated(e.rules.windowRule(a))
	}
}

// checkSuspended checks that no claim or skip (a write that starts an
// attempt or skips a period, store.RunSwap.Claims) lands while the job is
// suspended: the store refuses one in the same atomic step as the write,
// so even a claim whose scheduler read the job before the suspension
// cannot land after it.
func (e *engine) checkSuspended(a *scheduler.SwapRun) {
	if !e.c.Check || !a.Swap.Claims() {
		return
	}
	if j, err := e.c.Store.GetJob(e.ctx, Job); err == nil {
		e.violated(suspendedRule(a, &j))
	}
}

// checkJitter checks that a scheduled period's first claim starts no
// earlier than its instant plus its jitter (scheduler.JitterOf), which
// every node derives alike.
func (e *engine) checkJitter(a *scheduler.SwapRun) {
	if e.c.Check {
		e.violated(e.rules.jitterRule(a))
	}
}

// withDamaged returns rows, a ledger read after the key after, with the
// damaged rows after it too, in period order.
func withDamaged(rows, damaged []store.Run, after string) []store.Run {
	out := rows
	added := false
	for _, d := range damaged {
		if d.Period > after {
			if !added {
				out = slices.Clone(rows)
			}
			out, added = append(out, d), true
		}
	}
	if added {
		slices.SortFunc(out, func(a, b store.Run) int { return strings.Compare(a.Period, b.Period) })
	}
	return out
}

// checkDamaged: no write ever lands on the period of a damaged row
// (Config.DamagedRows): nobody knows whether it ran.
func (e *engine) checkDamaged(n *node, a scheduler.SwapRun) {
	if e.c.Check {
		e.violated(damagedRule(n.id, &a, e.c.DamagedRows))
	}
}

// damagedRow reports whether err is the error of a damaged row of
// Config.DamagedRows (store.CheckRunState's), the end of work it must
// cause.
func (e *engine) damagedRow(err error) bool {
	var dr *store.DamagedRowError
	if !errors.As(err, &dr) {
		return false
	}
	for _, d := range e.c.DamagedRows {
		if d.Period == dr.Period && d.State == dr.State {
			return true
		}
	}
	return false
}

// attempt names one attempt of a period: its claimed row's period, token
// and attempt number.
type attempt struct {
	period  string
	token   uint64
	attempt int
}

func attemptOf(r store.Run) attempt { return attempt{r.Period, r.Token, r.Attempt} }

// checkRelease checks a committed release (scheduler.Release) of n: it
// gives back the row of an attempt whose machine was never told that its
// effect ran to its end (the release-after-finish mutation does), and is
// counted (Coverage.Releases).
func (e *engine) checkRelease(n *node, a *scheduler.SwapRun) {
	e.out.Covered.Releases++
	if e.c.Check {
		e.violated(Release(n.id, *a, e.toldFinished[attemptOf(a.Swap.Run)]))
	}
}

// lateRelease reports whether a is a release fenced by the row alone
// (scheduler.Release: the row's version, unchanged since the claim, not
// the election token): it may commit after a newer term began, as long
// as that term has not taken the row over, and is counted
// (Coverage.LateReleases) when it does.
func (e *engine) lateRelease(a *scheduler.SwapRun) bool {
	if a.Kind != scheduler.KindRelease || a.Swap.Fenced || a.Swap.Expect == 0 {
		return false
	}
	if rec, err := e.c.Store.Get(e.ctx, Job); err == nil && rec.Token != a.Swap.Run.Token {
		e.out.Covered.LateReleases++
	}
	return true
}
