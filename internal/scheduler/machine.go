package scheduler

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton/store"
)

// ErrInterrupted, wrapped in an effect's error, says the effect was stopped
// before it finished and must run again: the period is not recorded as
// failed (schedule.ErrInterrupted).
var ErrInterrupted = errors.New("run interrupted before it finished")

type phase int

const (
	idle    phase = iota // no term
	working              // in a term
	halted               // in a term, acting no more
	ended                // the term ended; an effect may still report
	failed               // a permanent error
)

type op int

const (
	opNone op = iota
	opRegister
	opRead
	opSwap
	opGetRun
	opEffect
	opClock
	opPrune // a prune of the ledger
	opJob   // a read of the job
)

type timerJob int

const (
	timerNone timerJob = iota
	timerPass
	timerRegister
	timerComplete
)

// Machine is the scheduler's per-term work loop for one job on one node.
// It is not safe for concurrent use; one runtime goroutine drives it.
type Machine struct {
	cfg   Config
	phase phase
	token uint64
	node  string

	registered bool
	created    time.Time

	op       op
	kind     Kind // of the write in flight
	readFull bool // the read in flight is a full one
	cursor   string
	floor    time.Time // cursor's instant (parseKey), read once a cursor; zero with none
	lastFull time.Time
	hasFull  bool

	moves  []Move    // the rest of the current plan
	planAt time.Time // when it was planned
	wake   time.Time
	inbox  []Trigger

	claimed  store.Run
	period   Period
	complete store.RunSwap // the outcome being recorded

	next  time.Time
	timer timerJob
	dirty bool // a trigger arrived while busy: plan again when free

	setAt     time.Time // the wall time the timer was set at
	skewed    bool      // the last clock check found the wall clock off the reference
	skewedAt  time.Time // when a clock check first found it off, this term
	nextPrune time.Time // when the next prune round may start
	pruning   bool      // a round is under way (its last batch was full)
	pruned    int       // rows deleted so far in the round

	busyFrom, busyTo time.Time // the previous run's start and finish, in this term
	toldCatchUp      bool      // the catch-up of this term was logged

	suspension store.Suspension // the job's, as last read

	takeoverAt time.Time // when this term may take over an older term's running row (TakeoverGrace)

	stopAt   time.Time // when the running effect is stopped (Policy.Timeout; zero: never)
	stopping bool      // it was told to stop

	releaseNotStarted bool // the release in flight is of a run not started
}

// New returns a machine with no term.
func New(cfg Config) *Machine { return &Machine{cfg: cfg} }

// Working reports whether the machine is in a term and still acting.
func (m *Machine) Working() bool { return m.phase == working }

// Busy reports whether an answer is outstanding (a store call or an
// effect).
func (m *Machine) Busy() bool { return m.op != opNone }

// AtSafePoint reports whether the machine is between runs: in a term and
// acting, with no ledger write, read-back or effect outstanding (a read
// of the job, the ledger or the clock may be: it precedes any claim) and
// no run's outcome waiting to be written again. Only then may the
// election hand the term over to a preferred candidate
// (election.SafePoint, docs/prefer.md); a run stopped by a suspension and
// a backfill's runs are outstanding work like any other, so neither is a
// safe point while under way.
func (m *Machine) AtSafePoint() bool {
	if m.phase != working || m.timer == timerComplete {
		return false
	}
	switch m.op {
	case opNone, opRead, opJob, opClock:
		return true
	}
	return false
}

// Next returns when the machine wants a Tick; zero means no timer.
func (m *Machine) Next() time.Time {
	if m.phase == working && m.op == opEffect && !m.stopAt.IsZero() && !m.stopping {
		return m.stopAt
	}
	if m.phase != working || m.op != opNone {
		return time.Time{}
	}
	return m.next
}

// Step feeds one event at wall time now and returns the actions to
// execute, in order. The caller reads them and must not change them: a
// step that asks for one constant action returns a slice shared by every
// such step (readJobOnly and the like).
func (m *Machine) Step(now time.Time, ev Event) []Action {
	switch ev := ev.(type) {
	case Start:
		return m.start(now, ev)
	case End:
		if m.phase != idle && m.phase != failed {
			m.phase = ended
		}
		m.moves, m.inbox, m.timer, m.next = nil, nil, timerNone, time.Time{}
		if m.op != opEffect && m.op != opSwap {
			m.op = opNone
		}
		return nil
	case Tick:
		return m.tick(now)
	case Trigger:
		return m.trigger(now, ev)
	case Registered:
		return m.registeredReply(now, ev)
	case RunsRead:
		return m.runsRead(now, ev)
	case Swapped:
		return m.swapped(now, ev)
	case ReadBack:
		return m.readBack(now, ev)
	case EffectDone:
		return m.effectDone(now, ev)
	case ClockRead:
		return m.clockRead(now, ev)
	case JobRead:
		return m.jobRead(now, ev)
	case Pruned:
		return m.prunedReply(now, ev)
	}
	panic(fmt.Sprintf("scheduler: unknown event %T", ev))
}

func (m *Machine) start(now time.Time, ev Start) []Action {
	m.phase, m.token, m.node = working, ev.Token, ev.Node
	m.op, m.moves, m.inbox, m.dirty = opNone, nil, nil, false
	m.cursor, m.floor, m.hasFull, m.timer, m.next = "", time.Time{}, false, timerNone, time.Time{}
	m.skewed, m.busyFrom, m.busyTo, m.toldCatchUp = false, time.Time{}, time.Time{}, false
	m.suspension = store.Suspension{}
	m.stopAt, m.stopping = time.Time{}, false
	m.takeoverAt = time.Time{}
	if g := m.cfg.TakeoverGrace; g > 0 && !m.cfg.Mutate.NoTakeoverGrace {
		m.takeoverAt = now.Add(g)
	}
	if !m.registered {
		m.op = opRegister
		return registerOnly
	}
	return m.pass(now)
}

// pass is one pass of the work loop: with the clock guard on, a check of
// the wall clock first; then a momentary trigger, else a read of the
// ledger that the planner decides from.
func (m *Machine) pass(now time.Time) []Action {
	m.dirty, m.timer, m.next = false, timerNone, time.Time{}
	if m.cfg.ClockTolerance > 0 {
		m.op = opClock
		return checkClockOnly
	}
	return m.plan(now)
}

// clockRead is the guard's decision: plan when the wall clock agrees with
// the reference, otherwise wait for the next poll. Only the wall readings
// are compared (a time with a monotonic reading would compare those).
func (m *Machine) clockRead(now time.Time, r ClockRead) []Action {
	if !m.answered(opClock) {
		return nil
	}
	if r.Err != nil {
		return m.failure(now, "reading the reference clock", r.Err, timerPass)
	}
	skew, off := Skew(now, r.Reference, m.cfg.ClockTolerance)
	if off && !m.cfg.Mutate.NoClockGuard {
		var acts []Action
		if !m.skewed {
			m.skewed, m.skewedAt = true, now
			acts = append(acts, Note{Level: slog.LevelWarn, Msg: fmt.Sprintf(
				"the wall clock is %v %s the reference clock (tolerance %v): claiming and skipping no period until they agree",
				skew.Abs().Round(time.Millisecond), aheadBehind(skew), m.cfg.ClockTolerance)}, ClockHeld{Held: true, Skew: skew})
		}
		// now and skewedAt are this node's wall readings; a monotonic
		// reading in both (the runtime's clock) makes the wait immune to
		// the very step that the guard saw.
		if held := now.Sub(m.skewedAt); m.cfg.ClockStepDown > 0 && !m.cfg.Mutate.NoStepDown && held >= m.cfg.ClockStepDown {
			m.phase = failed
			return append(acts, StepDown{Err: fmt.Errorf("%w for %v (the wall clock %v %s the reference clock): stepping down, so that a node whose clock agrees can lead",
				ErrClockHeld, held.Round(time.Millisecond), skew.Abs().Round(time.Millisecond), aheadBehind(skew))})
		}
		m.after(now, m.cfg.Poll, timerPass)
		return acts
	}
	var acts []Action
	if m.skewed {
		m.skewed = false
		acts = append(acts, Note{Level: slog.LevelInfo, Msg: fmt.Sprintf(
			"the wall clock agrees with the reference clock again (off by %v); resuming", skew.Round(time.Millisecond))}, ClockHeld{Skew: skew})
	}
	return then(acts, m.plan(now))
}

// Skew is the wall-clock guard's comparison, the one rule every runtime
// uses: how far the wall time now is ahead of the reference ref (behind
// when negative), and whether that is more than tolerance. Only the wall
// readings are compared (a time with a monotonic reading would compare
// those).
func Skew(now, ref time.Time, tolerance time.Duration) (skew time.Duration, off bool) {
	skew = now.Round(0).Sub(ref.Round(0))
	return skew, skew.Abs() > tolerance
}

func aheadBehind(skew time.Duration) string {
	if skew > 0 {
		return "ahead of"
	}
	return "behind"
}

// plan is a pass once the clock is trusted.
func (m *Machine) plan(now time.Time) []Action {
	if m.cfg.Momentary && len(m.inbox) > 0 {
		t := m.inbox[0]
		run := store.Run{Job: m.cfg.Job, Period: t.Key, Scheduled: t.Scheduled, State: store.Running,
			Token: m.token, Holder: m.node, Attempt: 1, Started: now}
		m.period = Period{Key: t.Key, Scheduled: t.Scheduled}
		return m.swap(KindTrigger, store.RunSwap{Run: run, Fenced: true})
	}
	m.op = opJob
	return readJobOnly
}

// Suspended reports whether the job was suspended when the machine last
// read it: while it is, the machine claims and skips no period.
func (m *Machine) Suspended() bool { return m.suspension.Active() }

// jobRead is the suspension's decision: while the job is suspended the
// machine claims and skips nothing (a run in progress has finished: the
// job is read only between runs) and reads the job again at the next
// poll; the periods that come due meanwhile stay due and are caught up
// on resume by the catch-up policy, like the periods of an outage.
// Manual triggers and backfill rows stay pending until then.
func (m *Machine) jobRead(now time.Time, r JobRead) []Action {
	if !m.answered(opJob) {
		return nil
	}
	if r.Err != nil {
		return m.failure(now, "reading the job", r.Err, timerPass)
	}
	was := m.suspension
	m.suspension = r.Job.Suspension
	if m.cfg.Mutate.StickySuspension && was.Active() {
		m.suspension = was
	}
	var acts []Action
	switch sus := m.suspension; {
	case sus.Active() && !was.Active():
		msg := "job suspended by " + sus.By
		if sus.Reason != "" {
			msg += " (" + sus.Reason + ")"
		}
		acts = append(acts, Note{Level: slog.LevelWarn, Msg: msg + ": claiming no period until it is resumed"})
	case !sus.Active() && was.Active():
		acts = append(acts, Note{Level: slog.LevelInfo, Msg: "job resumed: periods that came due while suspended are caught up by the catch-up policy"})
	}
	if m.suspension.Active() && !m.cfg.Mutate.IgnoreSuspension {
		m.after(now, m.cfg.Poll, timerPass)
		return acts
	}
	return then(acts, m.readRuns(now))
}

// readRuns reads the ledger to plan from.
func (m *Machine) readRuns(now time.Time) []Action {
	full := m.cursor == "" || !m.hasFull || now.Sub(m.lastFull) >= m.cfg.Rescan
	after := m.cursor
	if full {
		after = ""
	}
	m.op, m.readFull = opRead, full
	if after == "" {
		return readAllOnly
	}
	return []Action{ReadRuns{After: after}}
}

func (m *Machine) swap(k Kind, sw store.RunSwap) []Action {
	if m.cfg.Unfenced {
		sw.Fenced = false
	}
	m.op, m.kind = opSwap, k
	return []Action{SwapRun{Kind: k, Swap: sw}}
}

func (m *Machine) after(now time.Time, d time.Duration, j timerJob) {
	m.next, m.timer, m.setAt = now.Add(d), j, now
}

// wait plans the next pass: after Poll, or when a period comes due. A
// prune round that is due goes first.
func (m *Machine) wait(now time.Time) []Action {
	if m.dirty {
		return m.pass(now)
	}
	if m.pruneDue(now) {
		return m.prune(now)
	}
	m.after(now, m.cfg.Poll, timerPass)
	if !m.wake.IsZero() && m.wake.Before(m.next) {
		m.next = m.wake
		if m.next.Before(now) {
			m.next = now
		}
	}
	return nil
}

func (m *Machine) tick(now time.Time) []Action {
	// A wall clock stepped back since the timer was set (a clock the guard
	// waited for, now corrected) would put the timer off by the step: the
	// runtime's timer ran its real duration, so it fires now.
	if m.phase == working && m.op == opEffect && !m.stopAt.IsZero() && !m.stopping && !now.Before(m.stopAt) {
		// The run went on past its timeout: stop it; its EffectDone
		// records it failed.
		m.stopping = true
		return []Action{StopEffect{Cause: ErrTimeout}, Note{Level: slog.LevelWarn,
			Msg: fmt.Sprintf("run still going after the timeout of %v; stopping it", m.policy().Timeout), Period: m.period.Key}}
	}
	early := now.Before(m.next) && !now.Before(m.setAt)
	if m.phase != working || m.op != opNone || m.timer == timerNone || early {
		return nil
	}
	j := m.timer
	m.timer, m.next = timerNone, time.Time{}
	switch j {
	case timerRegister:
		m.op = opRegister
		return registerOnly
	case timerComplete:
		return m.swap(KindComplete, m.complete)
	}
	return m.pass(now)
}

func (m *Machine) trigger(now time.Time, t Trigger) []Action {
	if m.phase != working {
		return nil
	}
	if m.cfg.Momentary {
		m.inbox = append(m.inbox, t)
	}
	if m.op == opNone && m.timer == timerPass {
		return m.pass(now)
	}
	m.dirty = true
	return nil
}

// failure handles a failed store call of a read or a plan's write: a
// permanent error fails the machine, anything else is retried after Retry
// by j.
func (m *Machine) failure(now time.Time, what string, err error, j timerJob) []Action {
	if store.Permanent(err) {
		m.phase = failed
		return []Action{Fail{Err: fmt.Errorf("%s: %w", what, err)}}
	}
	m.after(now, m.cfg.Retry, j)
	return []Action{Note{Level: slog.LevelWarn, Msg: what + " failed; retrying", Err: err}}
}

// answered takes the answer to the call in flight: false when it answers
// no call of this machine's, or when the term no longer works.
func (m *Machine) answered(want op) bool {
	if m.op != want {
		return false
	}
	m.op = opNone
	return m.phase == working
}

func (m *Machine) registeredReply(now time.Time, r Registered) []Action {
	if !m.answered(opRegister) {
		return nil
	}
	if r.Err != nil {
		return m.failure(now, "registering the job", r.Err, timerRegister)
	}
	m.registered, m.created = true, r.Job.Created
	return m.pass(now)
}

func (m *Machine) runsRead(now time.Time, r RunsRead) []Action {
	if !m.answered(opRead) {
		return nil
	}
	if r.Err != nil {
		return m.failure(now, "reading the ledger", r.Err, timerPass)
	}
	if err := damagedRow(r.Rows); err != nil && !m.cfg.Mutate.RerunUnknownState {
		// A row no baton wrote: nobody knows whether its period ran.
		// It is never claimed again nor planned around; the work stops
		// with one line naming it, as on any corrupt store.
		m.phase = failed
		return []Action{Fail{Err: fmt.Errorf("reading the ledger: %w", err)}}
	}
	cursor := m.cursor
	if m.readFull {
		cursor, m.lastFull, m.hasFull = "", now, true
	}
	if c := finalPrefix(r.Rows, &m.cfg.Policy); c != "" {
		cursor = c
	}
	if cursor != m.cursor { // a full read mostly finds the same cursor again
		m.cursor, m.floor = cursor, time.Time{}
		if cursor != "" {
			m.floor, _ = parseKey(cursor)
		}
	}
	floor := m.floor
	pol := m.policy()
	job := m.cfg.Job // the jitter's seed
	if m.cfg.Mutate.NodeJitter {
		job += "\x00" + m.node
	}
	plan := Decide(Input{Now: now, Created: m.created, Schedule: m.cfg.Schedule, Policy: pol,
		Token: m.token, Rows: r.Rows, Floor: floor, Limit: m.cfg.Limit, Job: job,
		BusyFrom: m.busyFrom, BusyTo: m.busyTo, NoManualExempt: m.cfg.Mutate.NoManualExempt, TakeoverAt: m.takeoverAt})
	m.moves, m.wake, m.planAt = plan.Moves, plan.Wake, now
	if plan.HeldByGrace && !m.cfg.Mutate.NoTakeoverGrace {
		if at := now.Add(TakeoverRead(m.cfg.TakeoverGrace)); at.Before(m.wake) {
			m.wake = at
		}
	}
	var acts []Action
	if plan.Overdue > 0 && !m.toldCatchUp {
		m.toldCatchUp = true
		acts = append(acts, Note{Level: slog.LevelInfo, Msg: catchUpNote(plan, pol)})
	}
	return then(acts, m.apply(now))
}

// damagedRow returns store.CheckRunState's error for the first row whose
// state is none of store.RunStates. The stores refuse such a row when
// they read it; the machine checks every row it is handed again, so that
// a store that does not (another backend, a wrapper) cannot make it run a
// period whose outcome nobody knows.
func damagedRow(rows []store.Run) error {
	for i := range rows {
		if !rows[i].State.Known() {
			return store.CheckRunState(rows[i].Job, rows[i].Period, rows[i].State)
		}
	}
	return nil
}

// apply writes the plan's next move; after a claim the effect runs.
func (m *Machine) apply(now time.Time) []Action {
	if len(m.moves) == 0 {
		return m.wait(now)
	}
	mv := m.moves[0]
	m.moves = m.moves[1:]
	pol := m.policy()
	if max := pol.Max; max > 0 && mv.Step == Claim && !mv.Period.Manual && mv.Prev.Version == 0 && now.After(m.planAt) {
		// Time passed since the plan (its skips took a while): periods
		// that came due since count against the cap too.
		n := mv.Newer
		for t := m.cfg.Schedule.Next(m.planAt); !t.IsZero() && !t.After(now) && n < max; t = m.cfg.Schedule.Next(t) {
			n++
		}
		if n >= max {
			mv.Step, mv.Reason = Skip, CapReason(max)
		}
	}
	if w := pol.Window; w > 0 && mv.Step == Claim && (!mv.Period.Manual || m.cfg.Mutate.NoManualExempt) {
		// The window too counts at the claim, as the cap does: the skips
		// before it took a while. A period later than the window now is
		// skipped; a retry is given up, its failure recorded as it is, as
		// the planner leaves a retry later than the window.
		if late := now.Sub(mv.Period.Scheduled); late > w {
			if mv.Prev.State == store.Failed {
				return m.apply(now)
			}
			mv.Step, mv.Reason = Skip, WindowReason(late, w)
		}
	}
	m.period = mv.Period
	k := KindClaim
	if mv.Step == Skip {
		k = KindSkip
	}
	return m.swap(k, mv.Swap(m.cfg.Job, m.token, m.node, now))
}

func (m *Machine) halt(cause error) []Action {
	m.phase, m.moves, m.timer, m.next = halted, nil, timerNone, time.Time{}
	return []Action{Halt{Cause: cause}}
}

func (m *Machine) swapped(now time.Time, r Swapped) []Action {
	if m.op != opSwap {
		return nil
	}
	m.op = opNone
	k := m.kind
	if m.phase == ended {
		switch k {
		case KindComplete:
			return []Action{m.completed(r.Err, m.period.Key)}
		case KindRelease:
			return m.released(r.Err)
		}
		return nil
	}
	if m.phase != working {
		return nil
	}
	switch k {
	case KindComplete:
		return m.completeReply(now, r)
	case KindRelease:
		return m.releasedReply(now, r)
	}
	err := r.Err
	switch {
	case err == nil:
		if k == KindTrigger {
			m.inbox = m.inbox[1:]
		}
		if k == KindSkip {
			note := Note{Level: slog.LevelInfo, Msg: "period skipped: " + r.Run.Output, Period: r.Run.Period}
			return first(note, m.apply(now))
		}
		m.claimed = r.Run
		m.op = opEffect
		m.stopAt, m.stopping = time.Time{}, false
		if t := m.policy().Timeout; t > 0 {
			m.stopAt = now.Add(t)
		}
		return []Action{StartEffect{Period: m.period, Run: r.Run, RequireValid: !m.cfg.Mutate.NoValidCheck}}
	case errors.Is(err, store.ErrStaleToken):
		if k == KindTrigger {
			m.inbox = m.inbox[1:]
		}
		return m.halt(err)
	case store.Permanent(err):
		m.phase = failed
		return []Action{Fail{Err: fmt.Errorf("%s %s: %w", k, m.period.Key, err)}}
	case errors.Is(err, store.ErrSuspended):
		// An operator suspended the job after this pass read it: the
		// store refused the claim or skip in the write's own step. Plan
		// again at once: the pass reads the job first, finds it
		// suspended and waits (a momentary trigger is a moment: gone).
		if k == KindTrigger {
			m.inbox = m.inbox[1:]
		}
		return append([]Action{Note{Level: slog.LevelInfo, Msg: k.String() + " refused: the job was suspended meanwhile; reading it again", Period: m.period.Key, Err: err}}, m.pass(now)...)
	case errors.Is(err, store.ErrConflict):
		// The row moved on: plan again at once (a triggered period that
		// has a row is the planner's).
		if k == KindTrigger {
			m.inbox = m.inbox[1:]
		}
		return append([]Action{Note{Level: slog.LevelInfo, Msg: k.String() + " conflicted; planning again", Period: m.period.Key, Err: err}}, m.pass(now)...)
	}
	return m.failure(now, k.String()+" "+m.period.Key, err, timerPass)
}

func (m *Machine) effectDone(now time.Time, r EffectDone) []Action {
	if m.op != opEffect {
		return nil
	}
	m.op = opNone
	key := m.period.Key
	stopped := m.stopping
	m.stopAt, m.stopping = time.Time{}, false
	if stopped && !r.NotStarted && m.phase == working {
		// Stopped by the timeout: a failure of the period, whatever the
		// effect reports (an effect cut short by a stop reports one).
		if !errors.Is(r.Err, ErrTimeout) && !errors.Is(r.Err, store.ErrStaleToken) {
			r.Err = fmt.Errorf("%w: stopped after %v", ErrTimeout, m.policy().Timeout)
		}
	}
	if m.phase == ended {
		// The term ended while the effect ran: an effect cut short (not
		// started, or interrupted) is given back, pending, so that the
		// next leader runs it again at once; one that failed otherwise
		// stays running for the next leader, which takes it over after
		// Config.TakeoverGrace; a finished one is recorded once.
		finished := !r.NotStarted && r.Err == nil
		if cutShort(r) || (finished && m.cfg.Mutate.ReleaseAfterFinish) {
			return m.release(r)
		}
		if !finished {
			return []Action{Note{Level: slog.LevelInfo, Msg: "period interrupted by the end of the term; the next leader runs it again", Period: key, Err: r.Err}}
		}
		m.complete = m.completion(r, now)
		m.op, m.kind = opSwap, KindComplete
		return []Action{SwapRun{Kind: KindComplete, Swap: m.complete}}
	}
	if m.phase != working {
		return nil
	}
	switch {
	case r.NotStarted:
		// The term may already be over: start nothing, give the row
		// back (the next leader claims it at once), then act no more.
		return m.release(r)
	case errors.Is(r.Err, store.ErrStaleToken):
		return m.halt(r.Err)
	case errors.Is(r.Err, ErrInterrupted):
		// Given back, then claimed again after Retry if the term lasts,
		// or by the next leader at once if it does not.
		return append([]Action{Note{Level: slog.LevelInfo, Msg: "period interrupted; it will be claimed again", Period: key, Err: r.Err}}, m.release(r)...)
	}
	m.busyFrom, m.busyTo = m.claimed.Started, now
	m.complete = m.completion(r, now)
	return m.swap(KindComplete, m.complete)
}

// cutShort reports whether the effect r reports did not run to its end as
// far as this process knows: it was not started, or it was interrupted
// (ErrInterrupted: stopped, its process group with it, before it
// finished).
func cutShort(r EffectDone) bool { return r.NotStarted || errors.Is(r.Err, ErrInterrupted) }

// release gives the claimed row of a run cut short back (Release): the
// next claim, by this term or the next, is at once. Its reply is
// releasedReply.
func (m *Machine) release(r EffectDone) []Action {
	why := "released: interrupted before it finished; claimed again at once"
	if r.NotStarted {
		why = "released: not started, the term was no longer valid; claimed again at once"
	}
	m.releaseNotStarted = r.NotStarted
	sw := Release(m.claimed, why)
	m.op, m.kind = opSwap, KindRelease
	return []Action{SwapRun{Kind: KindRelease, Swap: sw}}
}

// released is the end of a release: err nil means the row is pending
// again. A refused release (the row moved on: a newer term took it over,
// or the run's own process recorded it) changes nothing and is only noted;
// a failed one leaves the row running, for the next leader to take over
// after Config.TakeoverGrace.
func (m *Machine) released(err error) []Action {
	key := m.claimed.Period
	switch {
	case err == nil:
		return []Action{Note{Level: slog.LevelInfo, Msg: "period given back, pending: the next claim runs it at once", Period: key}}
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrStaleToken):
		return []Action{Note{Level: slog.LevelInfo, Msg: "giving the period back was refused: the row moved on", Period: key, Err: err}}
	}
	return []Action{Note{Level: slog.LevelWarn, Msg: "giving the period back failed; the next leader takes it over after the takeover grace", Period: key, Err: err}}
}

// releasedReply answers a release written in the term: a run not started
// ends the term's work (the term is no longer valid); an interrupted one
// is claimed again after Retry.
func (m *Machine) releasedReply(now time.Time, r Swapped) []Action {
	acts := m.released(r.Err)
	if m.releaseNotStarted {
		return then(acts, m.halt(ErrNotValid))
	}
	if store.Permanent(r.Err) {
		m.phase = failed
		return append(acts, Fail{Err: fmt.Errorf("releasing %s: %w", m.claimed.Period, r.Err)})
	}
	m.after(now, m.cfg.Retry, timerPass)
	return acts
}

func (m *Machine) completion(r EffectDone, now time.Time) store.RunSwap {
	sw := Complete(m.claimed, r.ExitCode, r.Output, r.Err, now)
	if m.cfg.Unfenced {
		sw.Fenced = false
	}
	return sw
}

// completed is the end of recording an outcome: err nil means it counts.
func (m *Machine) completed(err error, key string) Action {
	if err != nil {
		return Note{Level: slog.LevelWarn, Msg: "recording the outcome was refused; it does not count", Period: key, Err: err}
	}
	return Note{Level: slog.LevelInfo, Msg: finishedMsg(m.complete.Run.State), Period: key}
}

// finishedMsg is the note of an outcome recorded in state st: a constant
// for the states a completion writes, which every run's end logs.
func finishedMsg(st store.RunState) string {
	switch st {
	case store.Done:
		return "period finished: " + string(store.Done)
	case store.Failed:
		return "period finished: " + string(store.Failed)
	}
	return "period finished: " + string(st)
}

// then returns acts followed by more: more itself when acts is empty (a
// step's actions are never kept by the machine, and never changed once
// made), so that a step that only passes on what the next one asks copies
// nothing.
func then(acts, more []Action) []Action {
	if len(acts) == 0 {
		return more
	}
	return append(acts, more...)
}

// The actions of the steps that ask for one constant action, each
// shared by all of them (Step's callers only read a step's actions): a
// slice of actions is made once, not at every pass. Each is full, so an
// append to one copies it.
var (
	registerOnly   = []Action{Register{}}
	checkClockOnly = []Action{CheckClock{}}
	readJobOnly    = []Action{ReadJob{}}
	readAllOnly    = []Action{ReadRuns{}} // a full read of the ledger
)

// first returns a followed by more, in one slice of the size needed.
func first(a Action, more []Action) []Action {
	acts := make([]Action, 1, 1+len(more))
	acts[0] = a
	return append(acts, more...)
}

func (m *Machine) completeReply(now time.Time, r Swapped) []Action {
	err := r.Err
	switch {
	case errors.Is(err, store.ErrConflict) && !m.cfg.Mutate.NoOwnCompletion:
		// The row moved on: perhaps to this very outcome, written by the
		// process that saw the effect end (baton run's supervisor
		// records it at once), or by an earlier write of this one. Read
		// it back: readBack counts a row in this outcome's state under
		// this token and attempt as this write's success.
		m.op = opGetRun
		return []Action{GetRun{Period: m.period.Key}}
	case err == nil, errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrInvalid):
		note := m.completed(err, m.period.Key) // before pass, which may plan anew
		return first(note, m.pass(now))
	case errors.Is(err, store.ErrStaleToken):
		note := m.completed(err, m.period.Key)
		return first(note, m.halt(err))
	case store.Permanent(err):
		m.phase = failed
		return []Action{Fail{Err: fmt.Errorf("recording %s: %w", m.period.Key, err)}}
	}
	// Unknown outcome: the write may have been applied. Read it back.
	m.op = opGetRun
	return []Action{Note{Level: slog.LevelWarn, Msg: "recording the outcome failed; reading it back", Period: m.period.Key, Err: err},
		GetRun{Period: m.period.Key}}
}

func (m *Machine) readBack(now time.Time, r ReadBack) []Action {
	if !m.answered(opGetRun) {
		return nil
	}
	sw := m.complete
	if r.Err == nil && r.Run.Version != sw.Expect {
		var err error
		if r.Run.State != sw.Run.State || r.Run.Token != sw.Run.Token || r.Run.Attempt != sw.Run.Attempt {
			err = fmt.Errorf("%w: the row changed under us", store.ErrConflict)
		}
		note := m.completed(err, sw.Run.Period)
		return first(note, m.pass(now))
	}
	if r.Err != nil && store.Permanent(r.Err) {
		m.phase = failed
		return []Action{Fail{Err: fmt.Errorf("reading back %s: %w", sw.Run.Period, r.Err)}}
	}
	// Not applied, or still unknown: write it again after Retry.
	m.after(now, m.cfg.Retry, timerComplete)
	return nil
}

// policy is the policy the machine plans by: Config.Policy less what a
// mutation turns off.
func (m *Machine) policy() Policy {
	pol := m.cfg.Policy
	if m.cfg.Mutate.NoCatchUpCap {
		pol.Max = 0
	}
	if m.cfg.Mutate.NoJitter {
		pol.Jitter = 0
	}
	if m.cfg.Mutate.NoOverlapSkip {
		pol.Overlap = OverlapQueue
	}
	if m.cfg.Mutate.NoRetryBackoff {
		pol.RetryBackoff = 0
	}
	if m.cfg.Mutate.NoTimeout {
		pol.Timeout = 0
	}
	if m.cfg.Mutate.NoCatchUpWindow {
		pol.Window = 0
	}
	return pol
}

// catchUpNote says how many missed periods a plan catches up and why: the
// log line of the first catch-up of a term.
func catchUpNote(p Plan, pol Policy) string {
	mode := pol.CatchUp
	if mode == "" {
		mode = CatchUpAll
	}
	rule := "catch-up " + mode
	if pol.Max > 0 {
		rule += fmt.Sprintf(", at most the newest %d", pol.Max)
	} else {
		rule += ", no cap"
	}
	if pol.Window > 0 {
		rule += fmt.Sprintf(", window %v", pol.Window)
	} else {
		rule += ", no window"
	}
	if p.More && pol.Max > 0 {
		return fmt.Sprintf("catching up missed periods: at least %d are due; the newest %d run, older ones are recorded skipped (%s)",
			p.Behind, pol.Max, rule)
	}
	if p.More {
		return fmt.Sprintf("catching up missed periods: more than %d are due, worked through %d at a time (%s)", p.Overdue, p.Overdue, rule)
	}
	return fmt.Sprintf("catching up missed periods: %d to run, %d skipped (%s)",
		p.Overdue-p.OverdueSkipped, p.OverdueSkipped, rule)
}
