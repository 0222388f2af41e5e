package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// Term is the leadership a Runner works under. *baton.Term implements it;
// the drill passes its own.
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

// ErrInterrupted, wrapped in an Executor's error, says the effect was
// stopped before it finished and must run again: the period is not
// recorded as failed.
var ErrInterrupted = scheduler.ErrInterrupted

// Executor runs the effect of one period under the fencing token. ctx is
// cancelled when the term ends (or the Runner's caller cancels); an
// executor that was cut short by ctx must return a non-nil error, and the
// Runner then leaves the row running for the next leader to take over. An
// executor that stopped its effect early for its own reason (such as a
// lease about to expire) returns an error wrapping ErrInterrupted: the row
// is left running too, and claimed again (by this leader if its term
// lasts). An error wrapping fence.ErrStaleToken says a newer leader exists:
// nothing is recorded and the Runner acts no more in this term. Otherwise
// it returns the effect's exit status (0: success) and the tail of its
// output, both recorded in the ledger.
type Executor func(ctx context.Context, p Period, token uint64) (exitCode int, output string, err error)

// Job is what a Runner runs: a name (also the election name whose token
// fences the ledger), a schedule and a catch-up policy.
type Job struct {
	// Name is the job's name and the name of its election.
	Name string
	// Schedule yields the periods; nil for a job run by manual triggers only.
	Schedule Schedule
	// Policy is the catch-up policy.
	Policy Policy
}

// Option configures a Runner.
type Option func(*Runner)

// WithClock sets the clock (default baton.RealClock). Its Now is read as
// wall time for period arithmetic and for the ledger's Started and
// Finished; its timers wake the Runner.
func WithClock(c baton.Clock) Option { return func(r *Runner) { r.clock = c } }

// WithPoll sets how often the Runner re-reads the ledger for manual
// triggers when no period is due sooner (default DefaultPoll).
func WithPoll(d time.Duration) Option { return func(r *Runner) { r.cfg.Poll = d } }

// WithRescan sets how often the Runner reads the whole ledger (default
// DefaultRescan). In between it reads only the rows after the newest
// scheduled period before which every row is final, so a manual trigger of
// a period older than that (a re-run of a failed period) is seen within
// this interval; other triggers are seen at the next poll.
func WithRescan(d time.Duration) Option { return func(r *Runner) { r.cfg.Rescan = d } }

// WithRetry sets the wait after a failed store call (default DefaultRetry).
func WithRetry(d time.Duration) Option { return func(r *Runner) { r.cfg.Retry = d } }

// WithCallTimeout bounds each store call (default DefaultCallTimeout).
func WithCallTimeout(d time.Duration) Option { return func(r *Runner) { r.callTimeout = d } }

// WithClockGuard turns the wall-clock guard on: before each pass that may
// claim or skip periods the Runner reads ref, and while its own wall clock
// (WithClock) differs from ref by more than tolerance it claims and skips
// nothing, logs why once, and asks again at every poll; it resumes when
// the clocks agree. A run in progress still records its outcome. Lease
// safety never depends on a wall clock; the ledger does, because a period
// is a calendar instant: a leader whose clock runs ten minutes ahead would
// otherwise run ten minutes of future periods at once, or skip them.
// The guard is off by default; ClockReference picks a reference for a
// store, which is what baton run uses.
func WithClockGuard(ref Reference, tolerance time.Duration) Option {
	return func(r *Runner) { r.ref, r.cfg.ClockTolerance = ref, tolerance }
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(r *Runner) { r.logger = l } }

// Defaults of a Runner's options.
const (
	// DefaultPoll is how often a Runner re-reads the ledger at most.
	DefaultPoll = time.Second
	// DefaultRescan is how often a Runner reads the whole ledger.
	DefaultRescan = time.Minute
	// DefaultRetry is the wait after a failed store call.
	DefaultRetry = 500 * time.Millisecond
	// DefaultCallTimeout bounds one store call.
	DefaultCallTimeout = 5 * time.Second
)

// Runner runs a job's due periods while a term lasts. The work loop itself
// (read the ledger, plan, skip and claim with fenced writes, check Valid,
// run, record the outcome, re-plan, take over a deposed leader's running
// row, retry a completion with a read-back) is a deterministic state
// machine; the Runner is its thin runtime: the clock, the store, the
// executor in a goroutine. The simulator and the drill drive the very same
// machine.
//
// One Runner runs at most one term at a time; a term must be run by at most
// one Runner.
type Runner struct {
	st          store.Store
	job         Job
	exec        Executor
	clock       baton.Clock
	cfg         scheduler.Config
	callTimeout time.Duration
	logger      *slog.Logger
	obs         Observer
	wake        chan scheduler.Trigger
	ref         Reference
}

// New returns a Runner for job on st. Options are validated; an invalid one
// is an error naming the field.
func New(st store.Store, job Job, exec Executor, opts ...Option) (*Runner, error) {
	r := &Runner{st: st, job: job, exec: exec, clock: baton.RealClock{}, callTimeout: DefaultCallTimeout,
		cfg:  scheduler.Config{Job: job.Name, Poll: DefaultPoll, Rescan: DefaultRescan, Retry: DefaultRetry},
		wake: make(chan scheduler.Trigger, 16), obs: nobody{}}
	for _, o := range opts {
		o(r)
	}
	switch {
	case st == nil:
		return nil, errors.New("schedule: store must not be nil")
	case job.Name == "":
		return nil, errors.New("schedule: job name must not be empty")
	case exec == nil:
		return nil, errors.New("schedule: executor must not be nil")
	case r.obs == nil:
		return nil, errors.New("schedule: WithObserver: the observer must not be nil")
	case r.clock == nil:
		return nil, errors.New("schedule: clock must not be nil")
	case r.callTimeout <= 0:
		return nil, fmt.Errorf("schedule: call timeout must be positive, got %v", r.callTimeout)
	case r.cfg.ClockTolerance != 0 && r.ref == nil:
		return nil, errors.New("schedule: WithClockGuard: the reference clock must not be nil")
	case r.ref != nil && r.cfg.ClockTolerance < MinClockTolerance:
		return nil, fmt.Errorf("schedule: WithClockGuard: tolerance %v is below %v; use e.g. %v", r.cfg.ClockTolerance, MinClockTolerance, DefaultClockTolerance)
	}
	if job.Schedule != nil {
		r.cfg.Schedule = job.Schedule
	}
	r.cfg.Policy = job.Policy.scheduler()
	if err := r.cfg.Validate(); err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	r.logger = r.logger.With("job", job.Name)
	return r, nil
}

// Register registers the job in the store if it is new (store.EnsureJob)
// and returns it as stored; its Created fixes the first period. Run calls
// it; callers may call it earlier to fail fast.
func (r *Runner) Register(ctx context.Context) (store.Job, error) {
	return r.st.EnsureJob(ctx, store.Job{Name: r.job.Name, Schedule: r.job.Spec()})
}

// Wake asks the Runner to read the ledger now rather than at its next poll,
// for a caller that has just written a manual trigger (Trigger). It never
// blocks; it does nothing while no term runs.
func (r *Runner) Wake() { r.trigger(scheduler.Trigger{}) }

func init() {
	// The drill reaches the Runner's machine through these (see
	// scheduler.RunnerHooks); users cannot.
	scheduler.RunnerHooks.Configure = func(mod func(*scheduler.Config)) any {
		return Option(func(r *Runner) { mod(&r.cfg) })
	}
	scheduler.RunnerHooks.Trigger = func(runner any, t scheduler.Trigger) { runner.(*Runner).trigger(t) }
}

func (r *Runner) trigger(t scheduler.Trigger) {
	select {
	case r.wake <- t:
	default:
	}
}

// Run works through the job's due periods while t lasts. It returns when t
// ends, with the term's cause (context.Cause of t.Context()), or when ctx
// ends, with ctx's error, or with a store error that will never heal
// (store.Permanent: the store was replaced, is corrupt or has a foreign
// schema). It never returns nil.
//
// Before starting an effect it checks t.Valid(); the effect runs under a
// context that ends with the term. A write refused with
// fence.ErrStaleToken means a newer leader exists: Run writes nothing more
// and waits for t to end. Run returns only once the effect it started has
// returned.
func (r *Runner) Run(ctx context.Context, t Term) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(t.Context(), func() { cancel(context.Cause(t.Context())) })
	defer stop()
	d := &drive{r: r, t: t, ctx: ctx, m: scheduler.New(r.cfg),
		log: r.logger.With("token", t.Token(), "node", t.Node())}
	for len(r.wake) > 0 { // triggers of an earlier term are not this one's
		<-r.wake
	}
	return d.run()
}

// drive is one term's run of the machine.
type drive struct {
	r      *Runner
	t      Term
	ctx    context.Context
	m      *scheduler.Machine
	log    *slog.Logger
	effect chan scheduler.EffectDone // the running effect's result; nil: none
	err    error                     // a Fail action's error
}

func (d *drive) run() error {
	d.feed(scheduler.Start{Token: d.t.Token(), Node: d.t.Node()})
	for d.err == nil {
		var timer <-chan time.Time
		var tm baton.Timer
		if next := d.m.Next(); !next.IsZero() {
			tm = d.r.clock.NewTimer(max(next.Sub(d.r.clock.Now()), 0))
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
func (d *drive) feed(ev scheduler.Event) {
	queue := []scheduler.Event{ev}
	for len(queue) > 0 && d.err == nil {
		ev, queue = queue[0], queue[1:]
		for _, a := range d.m.Step(d.r.clock.Now(), ev) {
			if reply := d.do(a); reply != nil {
				queue = append(queue, reply)
			}
		}
	}
}

// do executes one action and returns its answer, if it has one now.
func (d *drive) do(a scheduler.Action) scheduler.Event {
	r := d.r
	call := func(f func(ctx context.Context)) {
		ctx, cancel := context.WithTimeout(d.ctx, r.callTimeout)
		defer cancel()
		f(ctx)
	}
	switch a := a.(type) {
	case scheduler.Register:
		var ev scheduler.Registered
		call(func(ctx context.Context) { ev.Job, ev.Err = r.Register(ctx) })
		if ev.Err == nil {
			r.obs.JobSuspended(r.job.Name, ev.Job.Suspension.Active())
		}
		return ev
	case scheduler.ReadJob:
		var ev scheduler.JobRead
		call(func(ctx context.Context) { ev.Job, ev.Err = r.st.GetJob(ctx, r.job.Name) })
		if ev.Err == nil {
			r.obs.JobSuspended(r.job.Name, ev.Job.Suspension.Active())
		}
		return ev
	case scheduler.ReadRuns:
		var ev scheduler.RunsRead
		call(func(ctx context.Context) { ev.Rows, ev.Err = r.st.Runs(ctx, r.job.Name, a.After, 0) })
		return ev
	case scheduler.SwapRun:
		// Recording an outcome must not be cut short by the term ending
		// now: the fence decides whether it still counts.
		ctx := d.ctx
		if a.Kind == scheduler.KindComplete {
			ctx = context.WithoutCancel(ctx)
		}
		cctx, cancel := context.WithTimeout(ctx, r.callTimeout)
		defer cancel()
		var ev scheduler.Swapped
		ev.Run, ev.Err = r.st.SwapRun(cctx, a.Swap)
		r.observe(a.Swap.Run, ev.Err)
		return ev
	case scheduler.CheckClock:
		var ev scheduler.ClockRead
		call(func(ctx context.Context) { ev.Reference, ev.Err = r.ref.Now(ctx) })
		return ev
	case scheduler.Prune:
		var ev scheduler.Pruned
		call(func(ctx context.Context) { ev.N, ev.Err = r.st.PruneRuns(ctx, a.Prune) })
		return ev
	case scheduler.GetRun:
		cctx, cancel := context.WithTimeout(context.WithoutCancel(d.ctx), r.callTimeout)
		defer cancel()
		var ev scheduler.ReadBack
		ev.Run, ev.Err = r.st.GetRun(cctx, r.job.Name, a.Period)
		return ev
	case scheduler.StartEffect:
		if a.RequireValid && !d.t.Valid() {
			return scheduler.EffectDone{NotStarted: true}
		}
		d.log.Info("period started", "period", a.Period.Key, "attempt", a.Run.Attempt, "delay", Delay(a.Run))
		r.obs.RunStarted(r.job.Name, Delay(a.Run))
		done := make(chan scheduler.EffectDone, 1)
		d.effect = done
		go func(p Period, token uint64) {
			code, out, err := r.exec(d.ctx, p, token)
			done <- scheduler.EffectDone{ExitCode: code, Output: out, Err: err}
		}(Period(a.Period), a.Run.Token)
	case scheduler.Halt:
		d.log.Info("acting no more in this term; waiting for it to end", "cause", a.Cause)
	case scheduler.Fail:
		d.log.Error("work stopped: the store failed for good", "err", a.Err)
		d.err = a.Err
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

// observe reports a ledger write of run to the Observer.
func (r *Runner) observe(run store.Run, err error) {
	switch {
	case errors.Is(err, fence.ErrStaleToken):
		r.obs.FenceRejected(r.job.Name)
	case err == nil:
		r.obs.PeriodState(r.job.Name, run.State)
		if run.State == store.Done {
			r.obs.RunSucceeded(r.job.Name, run.Finished)
		}
	}
}
