package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/internal/scheduler/runner"
	"github.com/batonhq/baton/store"
)

// Term is the leadership a Runner works under: a value with the methods
// Token() uint64 (the term's fencing token), Node() string (the id of the
// node holding the term), Context() context.Context (cancelled when the
// term ends) and Valid() bool (whether, reading the clock, the term still
// holds). *baton.Term implements it; the drill passes its own. It is an
// alias of the one declaration, in the Runner's runtime.
type Term = runner.Term

// ErrInterrupted, wrapped in an Executor's error, says the effect was
// stopped before it finished and must run again: the period is not
// recorded as failed.
var ErrInterrupted = scheduler.ErrInterrupted

// ErrTimeout is the cause of the context of a run stopped by
// Policy.Timeout (context.Cause), and is wrapped in the error recorded for
// it.
var ErrTimeout = scheduler.ErrTimeout

// Executor runs the effect of one period under the fencing token. ctx is
// cancelled when the term ends (or the Runner's caller cancels); an
// executor that was cut short by ctx must return a non-nil error. One
// wrapping ErrInterrupted says the effect did not finish: the Runner then
// gives the row back, pending (its attempt kept), before Run returns, so
// that the next leader claims it at once; any other error leaves the row
// running, for the next leader to take over (after WithTakeoverGrace). An
// executor that stopped its effect early for its own reason (such as a
// lease about to expire) returns an error wrapping ErrInterrupted too:
// the row is given back and claimed again (by this leader if its term
// lasts). Never wrap ErrInterrupted for an effect that ran to its end:
// its period would run again. An error wrapping fence.ErrStaleToken says
// a newer leader exists: nothing is recorded and the Runner acts no more
// in this term. Otherwise it returns the effect's exit status (0:
// success) and the tail of its output, both recorded in the ledger.
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

// Option configures a Runner. It has the one shape of every public
// package of baton (see baton.Option): New applies it to its unexported
// config, and checks the bounds that depend on the other options once all
// are applied; an invalid value is an error wrapping *baton.OptionError.
type Option func(*config) error

// config is what New and the options build: the runtime's whole
// configuration.
type config = runner.Config

// WithClock sets the clock (default baton.RealClock). Its Now is read as
// wall time for period arithmetic and for the ledger's Started and
// Finished; its timers wake the Runner.
func WithClock(c baton.Clock) Option { return func(cfg *config) error { cfg.Clock = c; return nil } }

// WithPoll sets how often the Runner re-reads the ledger for manual
// triggers when no period is due sooner (default DefaultPoll).
func WithPoll(d time.Duration) Option {
	return func(cfg *config) error { cfg.Machine.Poll = d; return nil }
}

// WithRescan sets how often the Runner reads the whole ledger (default
// DefaultRescan). In between it reads only the rows after the newest
// scheduled period before which every row is final, so a manual trigger of
// a period older than that (a re-run of a failed period) is seen within
// this interval; other triggers are seen at the next poll.
func WithRescan(d time.Duration) Option {
	return func(cfg *config) error { cfg.Machine.Rescan = d; return nil }
}

// WithRetry sets the wait after a failed store call (default DefaultRetry).
func WithRetry(d time.Duration) Option {
	return func(cfg *config) error { cfg.Machine.Retry = d; return nil }
}

// WithCallTimeout bounds each store call (default DefaultCallTimeout).
func WithCallTimeout(d time.Duration) Option {
	return func(cfg *config) error { cfg.CallTimeout = d; return nil }
}

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
	return func(cfg *config) error { cfg.Reference, cfg.Machine.ClockTolerance = ref, tolerance; return nil }
}

// WithClockStepDown makes a leader that the clock guard (WithClockGuard)
// has held off for d give its term up: Run returns an error wrapping
// ErrClockHeld (baton.Elector.Run then resigns), so that a node whose
// clock agrees can lead rather than a leader that keeps the job and runs
// nothing. Before campaigning again, call AwaitClock, or the same node
// may win the term back. d is at least the poll (WithPoll); 0 (the
// default) keeps the term.
func WithClockStepDown(d time.Duration) Option {
	return func(cfg *config) error { cfg.Machine.ClockStepDown = d; return nil }
}

// WithTakeoverGrace makes a new leader wait d, from the start of its term,
// before it takes over a period still running under an older term (and
// the periods after it wait too): time for another process that saw that
// run end inside its term to record the outcome, which counts after that
// term ended as long as nobody took the period over. baton run sets it
// (the renew interval, at least a second), because the supervisor of its
// command records outcomes so, also while baton itself is frozen; a
// Runner records its executor's outcomes itself and needs none. A period
// whose leader died mid-run is run again d later; one whose leader stopped
// gracefully is given back at once (see Executor) and waits no grace.
// Default 0: at once; d is at most a week.
func WithTakeoverGrace(d time.Duration) Option {
	return func(cfg *config) error { cfg.Machine.TakeoverGrace = d; return nil }
}

// ErrClockHeld is wrapped in the error Run returns when it gave its term
// up because the clock guard held it off for WithClockStepDown.
var ErrClockHeld = scheduler.ErrClockHeld

// AwaitClock returns nil once clock's wall time agrees with ref within
// tolerance (the guard's own comparison), reading both every poll, or
// ctx's error when ctx ends first. An error of ref is retried at the next
// poll; the last one is wrapped in the error returned when ctx ends. It is
// what a node that stepped down (ErrClockHeld) waits on before it
// campaigns again.
func AwaitClock(ctx context.Context, ref Reference, clock baton.Clock, tolerance, poll time.Duration) error {
	if ref == nil || clock == nil || tolerance <= 0 || poll <= 0 {
		return fmt.Errorf("schedule: AwaitClock: needs a reference, a clock, and a positive tolerance and poll (got tolerance %v, poll %v)", tolerance, poll)
	}
	var last error
	for {
		at, err := ref.Now(ctx)
		if err == nil {
			if _, off := scheduler.Skew(clock.Now(), at, tolerance); !off {
				return nil
			}
		}
		last = err
		tm := clock.NewTimer(poll)
		select {
		case <-ctx.Done():
			tm.Stop()
			if last != nil {
				return fmt.Errorf("%w (the reference clock: %w)", context.Cause(ctx), last)
			}
			return context.Cause(ctx)
		case <-tm.C():
		}
	}
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(cfg *config) error { cfg.Logger = l; return nil } }

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
// machine, and the drill's process mode this very runtime.
//
// One Runner runs at most one term at a time; a term must be run by at most
// one Runner.
type Runner struct {
	cfg runner.Config // what New and the options build
	r   *runner.Runner
}

// New returns a Runner for job on st. Arguments and options are validated;
// an invalid one is an error wrapping a *baton.OptionError that names it.
func New(st store.Store, job Job, exec Executor, opts ...Option) (*Runner, error) {
	r := &Runner{cfg: runner.Config{Store: st, Clock: baton.RealClock{}, CallTimeout: DefaultCallTimeout,
		Machine:  scheduler.Config{Job: job.Name, Poll: DefaultPoll, Rescan: DefaultRescan, Retry: DefaultRetry},
		Observer: runner.Nobody{}}}
	for _, o := range opts {
		if err := o(&r.cfg); err != nil {
			return nil, fmt.Errorf("schedule: %w", err)
		}
	}
	if err := check(st, job, exec, &r.cfg); err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	if job.Schedule != nil {
		r.cfg.Machine.Schedule = job.Schedule
	}
	r.cfg.Machine.Policy = job.Policy.scheduler()
	r.cfg.Spec = job.Spec()
	r.cfg.Exec = func(ctx context.Context, p scheduler.Period, token uint64) (int, string, error) {
		return exec(ctx, Period(p), token)
	}
	var err error
	if r.r, err = runner.New(r.cfg); err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	return r, nil
}

// Register registers the job in the store if it is new (store.EnsureJob)
// and returns it as stored; its Created fixes the first period. Run calls
// it; callers may call it earlier to fail fast.
func (r *Runner) Register(ctx context.Context) (store.Job, error) { return r.r.Register(ctx) }

// Wake asks the Runner to read the ledger now rather than at its next poll,
// for a caller that has just written a manual trigger (Trigger). It never
// blocks; it does nothing while no term runs.
func (r *Runner) Wake() { r.r.Wake() }

// Run works through the job's due periods while t lasts. It returns when t
// ends, with the term's cause (context.Cause of t.Context()), or when ctx
// ends, with ctx's error, or with a store error that will never heal
// (store.Permanent: the store was replaced, is corrupt or has a foreign
// schema), or, with WithClockStepDown, with an error wrapping ErrClockHeld
// when the clock guard held it off that long. It never returns nil.
//
// Before starting an effect it checks t.Valid(); the effect runs under a
// context that ends with the term. A write refused with
// fence.ErrStaleToken means a newer leader exists: Run writes nothing more
// and waits for t to end. Run returns only once the effect it started has
// returned.
func (r *Runner) Run(ctx context.Context, t Term) error { return r.r.Run(ctx, t) }

// check returns the *baton.OptionError of New's first bad argument or
// option that runner.New cannot see, or nil: runner.New checks the rest of
// the Runner's configuration, and the machine the bounds of its fields.
func check(st store.Store, job Job, exec Executor, cfg *runner.Config) error {
	switch {
	case st == nil:
		return bound.Errorf("store", "nil", "a store.Store")
	case job.Name == "":
		return bound.Errorf("job", `""`, "a job name")
	case exec == nil: // runner.New sees New's wrapper of it
		return bound.Errorf("executor", "nil", "an Executor")
	case cfg.Observer == nil:
		return bound.Errorf("observer", "nil", "an Observer (leave WithObserver out for none)")
	case cfg.Machine.ClockStepDown != 0 && cfg.Machine.ClockTolerance == 0:
		return bound.Errorf("clock-step-down", cfg.Machine.ClockStepDown, "0 without WithClockGuard (WithClockStepDown needs WithClockGuard)")
	case cfg.Reference != nil && cfg.Machine.ClockTolerance == 0:
		// A tolerance outside its bounds is the machine's to report.
		return bound.Errorf("clock-tolerance", 0, "not 0 with a reference: a zero tolerance turns the guard off; leave WithClockGuard out, or use e.g. %v", DefaultClockTolerance)
	}
	// A store that keeps a bounded ledger a job (store.LedgerBounded:
	// kube) fails the job's writes once the ledger is full: a retention
	// that keeps more rows, or every row, is refused here, at start.
	if n, rows := store.LedgerRowsOf(st), cfg.Machine.Retention.Rows; n > 0 && (rows <= 0 || rows > n) {
		got := fmt.Sprint(rows)
		if rows <= 0 {
			got = "0 (every row kept)"
		}
		return bound.Errorf("keep-rows", got, "1 to %d: this store keeps at most %d run ledger rows a job (WithRetention with Rows at most %d)", n, n, n)
	}
	return nil
}
