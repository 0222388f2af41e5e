// Package runner is the runtime of the scheduler machine
// (internal/scheduler): the clock, the store and the executor in a
// goroutine around the leader's per-term work loop. It takes the machine's
// whole Config, including the settings no user may configure (Momentary,
// Unfenced), so that the drill's process mode runs the very runtime users
// run. schedule.Runner is a thin wrapper over it built from the public
// options; nothing outside baton imports this package.
package runner

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// Term is the leadership a Runner works under. It is declared here once;
// schedule.Term is an alias of it. *baton.Term implements it; the drill
// passes its own.
type Term interface {
	// Token is the term's fencing token.
	Token() uint64
	// Node is the id of the node holding the term.
	Node() string
	// Context is cancelled when the term ends.
	Context() context.Context
	// Valid reports, reading the clock, whether the term still holds.
	Valid() bool
}

var _ Term = (*baton.Term)(nil)

// SafePointer is a Term whose election hands it over to a preferred
// candidate only at a safe point its work reports (baton.Term.SafePoint,
// docs/prefer.md): a Runner says safe true whenever its machine comes to
// rest at one (scheduler.Machine.AtSafePoint), and safe false before it
// steps the machine again, waiting until the election has heard it. An
// error there means the term ended: the Runner starts nothing more.
type SafePointer interface {
	SafePoint(safe bool) error
}

var _ SafePointer = (*baton.Term)(nil)

// Executor runs the effect of one period under the fencing token, with the
// contract of schedule.Executor.
type Executor func(ctx context.Context, p scheduler.Period, token uint64) (exitCode int, output string, err error)

// Observer is told what a Runner does with its job's periods, for metrics:
// batonprom.Metrics implements it. Its methods are called from the Runner's
// goroutine and must return quickly. It is declared here once;
// schedule.Observer is an alias of it.
type Observer interface {
	// PeriodState says the Runner moved a period of job to state
	// (running when it claims it, then done, failed or skipped; pending
	// when it gives back a run cut short, scheduler.Release).
	PeriodState(job string, state store.RunState)
	// RunStarted says a run of job started delay after its period's
	// scheduled time.
	RunStarted(job string, delay time.Duration)
	// RunSucceeded says a run of job finished done at t.
	RunSucceeded(job string, t time.Time)
	// FenceRejected says a ledger write for name was refused because its
	// token was stale.
	FenceRejected(name string)
	// JobSuspended says whether job was suspended ('baton suspend') when
	// this process last read it: at registration and at each of the
	// leader's passes.
	JobSuspended(job string, suspended bool)
}

// ClockObserver is an Observer that is also told when the wall-clock guard
// holds the leader off: batonprom.Metrics implements it
// (baton_job_clock_held). A leader held off claims and skips nothing and,
// until it gives its term up (Machine.ClockStepDown), keeps it, so that no
// other node runs the job either: an operator wants to know. Its method is
// called from the Runner's goroutine and must return quickly. It is
// declared here once; schedule.ClockObserver is an alias of it.
type ClockObserver interface {
	Observer
	// ClockHeld says the guard began (held) or stopped holding the leader
	// of job off: its wall clock was skew ahead of the reference, behind
	// when negative. A term that ends while held off is told held false
	// with skew 0.
	ClockHeld(job string, held bool, skew time.Duration)
}

// Nobody is the ClockObserver that is told nothing: the default.
type Nobody struct{}

// PeriodState does nothing.
func (Nobody) PeriodState(string, store.RunState) {}

// RunStarted does nothing.
func (Nobody) RunStarted(string, time.Duration) {}

// RunSucceeded does nothing.
func (Nobody) RunSucceeded(string, time.Time) {}

// FenceRejected does nothing.
func (Nobody) FenceRejected(string) {}

// JobSuspended does nothing.
func (Nobody) JobSuspended(string, bool) {}

// ClockHeld does nothing.
func (Nobody) ClockHeld(string, bool, time.Duration) {}

// Reference is a wall clock a Runner trusts more than its own, for the
// wall-clock guard (Machine.ClockTolerance). It is declared here once;
// schedule.Reference is an alias of it.
type Reference interface {
	// Now returns the reference's current time; an error is retried like
	// a failed store call.
	Now(ctx context.Context) (time.Time, error)
}

// Config is a Runner's whole configuration.
type Config struct {
	// Machine is the scheduler machine's Config, whole: Machine.Job is the
	// job's name and the name of its election.
	Machine scheduler.Config
	// Spec is the job's schedule as registered (store.Job.Schedule).
	Spec string
	// Store holds the job and its ledger.
	Store store.Store
	// Exec runs a period's effect.
	Exec Executor
	// Clock is read as wall time for the machine and wakes the Runner.
	Clock baton.Clock
	// CallTimeout bounds each store call.
	CallTimeout time.Duration
	// Logger logs the Runner's work (nil: discard).
	Logger *slog.Logger
	// Observer is told what the Runner does (nil: Nobody), and of the
	// clock guard when it is a ClockObserver.
	Observer Observer
	// Reference is the wall-clock guard's reference, required when
	// Machine.ClockTolerance is set.
	Reference Reference
}

// Runner runs a job's due periods while a term lasts: it drives the
// scheduler machine with the clock, the store and the executor. One Runner
// runs at most one term at a time; a term must be run by at most one
// Runner.
type Runner struct {
	cfg  Config
	log  *slog.Logger
	wake chan scheduler.Trigger
}

// New returns a Runner for cfg. An invalid cfg is a *bound.Error
// (baton.OptionError) naming the field, the machine's own bounds as
// Machine.Validate returns them.
func New(cfg Config) (*Runner, error) {
	switch {
	case cfg.Store == nil:
		return nil, bound.Errorf("store", "nil", "a store.Store")
	case cfg.Exec == nil:
		return nil, bound.Errorf("executor", "nil", "an Executor")
	case cfg.Clock == nil:
		return nil, bound.Errorf("clock", "nil", "a baton.Clock (baton.RealClock{} by default)")
	case cfg.CallTimeout <= 0:
		return nil, bound.Errorf("call-timeout", cfg.CallTimeout, "a positive duration")
	case cfg.Machine.ClockTolerance != 0 && cfg.Reference == nil:
		return nil, bound.Errorf("clock-reference", "nil", "a reference clock with a clock tolerance (schedule.WithClockGuard's ref, e.g. schedule.ClockReference)")
	}
	if err := cfg.Machine.Validate(); err != nil {
		return nil, err
	}
	if cfg.Observer == nil {
		cfg.Observer = Nobody{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg, log: log.With("job", cfg.Machine.Job), wake: make(chan scheduler.Trigger, 16)}, nil
}

// Register registers the job in the store if it is new (store.EnsureJob)
// and returns it as stored.
func (r *Runner) Register(ctx context.Context) (store.Job, error) {
	return r.cfg.Store.EnsureJob(ctx, store.Job{Name: r.cfg.Machine.Job, Schedule: r.cfg.Spec})
}

// Trigger feeds t to the machine of the term that runs (with
// Machine.Momentary, a momentary trigger; otherwise a request to read the
// ledger now). It never blocks; it is dropped when no term runs, or when
// sixteen are queued already.
func (r *Runner) Trigger(t scheduler.Trigger) {
	select {
	case r.wake <- t:
	default:
	}
}

// Wake asks the Runner to read the ledger now rather than at its next
// poll. It never blocks; it does nothing while no term runs.
func (r *Runner) Wake() { r.Trigger(scheduler.Trigger{}) }

// Run works through the job's due periods while t lasts, with the contract
// of schedule.Runner.Run: it returns the term's cause when t ends, ctx's
// error when ctx ends, or a store error that will never heal; never nil.
// It returns only once the effect it started has returned.
func (r *Runner) Run(ctx context.Context, t Term) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(t.Context(), func() { cancel(context.Cause(t.Context())) })
	defer stop()
	d := &drive{r: r, t: t, ctx: ctx, m: scheduler.New(r.cfg.Machine),
		log: r.log.With("token", t.Token(), "node", t.Node())}
	d.sp, _ = t.(SafePointer)
	for len(r.wake) > 0 { // triggers of an earlier term are not this one's
		<-r.wake
	}
	err := d.run()
	if d.clockHeld {
		// The guard held this term off to its end: the next term (here
		// or elsewhere) says for itself.
		r.clockHeld(false, 0)
	}
	return err
}

// drive is one term's run of the machine.
type drive struct {
	r      *Runner
	t      Term
	ctx    context.Context
	m      *scheduler.Machine
	log    *slog.Logger
	effect chan scheduler.EffectDone // the running effect's result; nil: none
	stop   context.CancelCauseFunc   // stops the running effect (StopEffect)
	err    error                     // a Fail action's error
	// stepped is the Clock's reading the machine was last stepped at.
	stepped time.Time
	// clockHeld: the Observer was last told the guard holds the term off.
	clockHeld bool
	// sp is the term's safe-point report, if it has one; safe says it was
	// last told safe true, ended that the term ended when told safe false
	// (a handover), so that the machine is stepped with nothing but End.
	sp    SafePointer
	safe  bool
	ended bool
}

func (d *drive) run() error {
	d.feed(scheduler.Start{Token: d.t.Token(), Node: d.t.Node()})
	for d.err == nil {
		if d.ended {
			<-d.ctx.Done() // the term ended (feed): its cause follows at once
			return d.end(nil)
		}
		var timer <-chan time.Time
		var tm baton.Timer
		if next := d.m.Next(); !next.IsZero() {
			// Never longer than the machine asked for when it stepped:
			// a Clock whose reading went back since (a test's skewed
			// clock set right, a virtual clock) would otherwise put the
			// next pass off by as much.
			wait := min(next.Sub(d.r.cfg.Clock.Now()), next.Sub(d.stepped))
			tm = d.r.cfg.Clock.NewTimer(max(wait, 0))
			timer = tm.C()
		}
		stopTimer := func() {
			if tm != nil {
				tm.Stop()
			}
		}
		select {
		case <-d.ctx.Done():
			stopTimer()
			return d.end(nil)
		case done := <-d.effect:
			d.effect = nil
			if d.ctx.Err() != nil {
				// The term ended as the effect returned: an effect cut
				// short by the end of the term is not a failed run.
				stopTimer()
				return d.end(&done)
			}
			d.feed(done)
		case <-timer:
			d.feed(scheduler.Tick{})
		case tr := <-d.r.wake:
			d.feed(tr)
		}
		stopTimer()
	}
	if d.effect != nil {
		<-d.effect
	}
	return d.err
}

// end tells the machine the term ended, lets a running effect return and
// reports it (done: already returned), and returns the term's cause.
func (d *drive) end(done *scheduler.EffectDone) error {
	d.feed(scheduler.End{})
	if done == nil && d.effect != nil {
		ev := <-d.effect // the effect returns once ctx ends
		done = &ev
	}
	d.effect = nil
	if done != nil {
		d.feed(*done)
	}
	return context.Cause(d.ctx)
}

// feed steps the machine with ev and executes its actions, feeding back
// their answers, until the machine waits for a timer, the effect or the
// end of the term.
//
// With a SafePointer term, the election is told the machine left its safe
// point before the machine is stepped (and waited for), and told it is at
// one again once the machine rests at one: so the election hands over
// only while nothing runs (docs/prefer.md).
func (d *drive) feed(ev scheduler.Event) {
	if _, end := ev.(scheduler.End); !end && d.sp != nil {
		if d.ended {
			return
		}
		if d.safe {
			d.safe = false
			if d.sp.SafePoint(false) != nil {
				d.ended = true // handed over, or lost: End follows
				return
			}
		}
	}
	defer func() {
		if d.sp != nil && !d.ended && d.err == nil && d.ctx.Err() == nil && d.m.AtSafePoint() {
			d.safe = d.sp.SafePoint(true) == nil
		}
	}()
	queue := []scheduler.Event{ev}
	for len(queue) > 0 && d.err == nil {
		ev, queue = queue[0], queue[1:]
		d.stepped = d.r.cfg.Clock.Now()
		for _, a := range d.m.Step(d.stepped, ev) {
			if reply := d.do(a); reply != nil {
				queue = append(queue, reply)
			}
		}
	}
}

// do executes one action and returns its answer, if it has one now.
func (d *drive) do(a scheduler.Action) scheduler.Event {
	r, cfg := d.r, &d.r.cfg
	job := cfg.Machine.Job
	call := func(f func(ctx context.Context)) {
		ctx, cancel := context.WithTimeout(d.ctx, cfg.CallTimeout)
		defer cancel()
		f(ctx)
	}
	switch a := a.(type) {
	case scheduler.Register:
		var ev scheduler.Registered
		call(func(ctx context.Context) { ev.Job, ev.Err = r.Register(ctx) })
		if ev.Err == nil {
			cfg.Observer.JobSuspended(job, ev.Job.Suspension.Active())
		}
		return ev
	case scheduler.ReadJob:
		var ev scheduler.JobRead
		call(func(ctx context.Context) { ev.Job, ev.Err = cfg.Store.GetJob(ctx, job) })
		if ev.Err == nil {
			cfg.Observer.JobSuspended(job, ev.Job.Suspension.Active())
		}
		return ev
	case scheduler.ReadRuns:
		var ev scheduler.RunsRead
		call(func(ctx context.Context) { ev.Rows, ev.Err = cfg.Store.Runs(ctx, job, a.After, 0) })
		return ev
	case scheduler.SwapRun:
		// Recording an outcome must not be cut short by the term ending
		// now: the fence decides whether it still counts. Nor must giving
		// back a run cut short, which Run makes before it returns (and
		// its caller resigns), but bounded by ReleaseTimeout: the takeover
		// grace covers a release that does not land.
		ctx, timeout := d.ctx, cfg.CallTimeout
		switch a.Kind {
		case scheduler.KindComplete:
			ctx = context.WithoutCancel(ctx)
		case scheduler.KindRelease:
			ctx, timeout = context.WithoutCancel(ctx), min(timeout, scheduler.ReleaseTimeout(cfg.Machine.TakeoverGrace))
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var ev scheduler.Swapped
		ev.Run, ev.Err = cfg.Store.SwapRun(cctx, a.Swap)
		r.observe(a.Swap.Run, ev.Err)
		return ev
	case scheduler.CheckClock:
		var ev scheduler.ClockRead
		call(func(ctx context.Context) { ev.Reference, ev.Err = cfg.Reference.Now(ctx) })
		return ev
	case scheduler.Prune:
		var ev scheduler.Pruned
		call(func(ctx context.Context) { ev.N, ev.Err = cfg.Store.PruneRuns(ctx, a.Prune) })
		return ev
	case scheduler.GetRun:
		cctx, cancel := context.WithTimeout(context.WithoutCancel(d.ctx), cfg.CallTimeout)
		defer cancel()
		var ev scheduler.ReadBack
		ev.Run, ev.Err = cfg.Store.GetRun(cctx, job, a.Period)
		return ev
	case scheduler.StartEffect:
		if a.RequireValid && !d.t.Valid() {
			return scheduler.EffectDone{NotStarted: true}
		}
		delay := scheduler.Delay(a.Run)
		d.log.Info("period started", "period", a.Period.Key, "attempt", a.Run.Attempt, "delay", delay)
		cfg.Observer.RunStarted(job, delay)
		done := make(chan scheduler.EffectDone, 1)
		d.effect = done
		ectx, stop := context.WithCancelCause(d.ctx)
		d.stop = stop
		go func(p scheduler.Period, token uint64) {
			defer stop(nil)
			code, out, err := cfg.Exec(ectx, p, token)
			done <- scheduler.EffectDone{ExitCode: code, Output: out, Err: err}
		}(a.Period, a.Run.Token)
	case scheduler.StopEffect:
		if d.stop != nil {
			d.stop(a.Cause)
		}
	case scheduler.Halt:
		d.log.Info("acting no more in this term; waiting for it to end", "cause", a.Cause)
	case scheduler.Fail:
		d.log.Error("work stopped: the store failed for good", "err", a.Err)
		d.err = a.Err
	case scheduler.StepDown:
		d.log.Warn("work stopped: the wall clock disagrees with the reference; giving the term up", "err", a.Err)
		d.err = a.Err
	case scheduler.ClockHeld:
		d.clockHeld = a.Held
		d.r.clockHeld(a.Held, a.Skew)
	case scheduler.Note:
		attrs := []any{}
		if a.Period != "" {
			attrs = append(attrs, "period", a.Period)
		}
		if a.Err != nil {
			attrs = append(attrs, "err", a.Err)
		}
		d.log.Log(d.ctx, a.Level, a.Msg, attrs...)
	}
	return nil
}

// clockHeld tells the Observer, when it is a ClockObserver, that the clock
// guard began or stopped holding the leader off.
func (r *Runner) clockHeld(held bool, skew time.Duration) {
	if o, ok := r.cfg.Observer.(ClockObserver); ok {
		o.ClockHeld(r.cfg.Machine.Job, held, skew)
	}
}

// observe reports a ledger write of run to the Observer.
func (r *Runner) observe(run store.Run, err error) {
	job, obs := r.cfg.Machine.Job, r.cfg.Observer
	switch {
	case errors.Is(err, fence.ErrStaleToken):
		obs.FenceRejected(job)
	case err == nil:
		obs.PeriodState(job, run.State)
		if run.State == store.Done {
			obs.RunSucceeded(job, run.Finished)
		}
	}
}
