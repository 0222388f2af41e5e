package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
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

// Executor runs the effect of one period under the fencing token. ctx is
// cancelled when the term ends (or the Runner's caller cancels); an
// executor that was cut short by ctx must return a non-nil error, and the
// Runner then leaves the row running for the next leader to take over.
// Otherwise it returns the effect's exit status (0: success) and the tail
// of its output, both recorded in the ledger.
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
func WithPoll(d time.Duration) Option { return func(r *Runner) { r.poll = d } }

// WithRetry sets the wait after a failed store call (default DefaultRetry).
func WithRetry(d time.Duration) Option { return func(r *Runner) { r.retry = d } }

// WithCallTimeout bounds each store call (default DefaultCallTimeout).
func WithCallTimeout(d time.Duration) Option { return func(r *Runner) { r.callTimeout = d } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(r *Runner) { r.logger = l } }

// Defaults.
const (
	DefaultPoll        = time.Second
	DefaultRetry       = 500 * time.Millisecond
	DefaultCallTimeout = 5 * time.Second
)

// Runner runs a job's due periods while a term lasts. It is the thin
// runtime around Decide: it reads the ledger, asks Decide what to do,
// writes skips and claims with fenced swaps, runs claimed periods one at a
// time and records their outcome with a fenced swap.
//
// One Runner runs at most one term at a time; a term must be run by at most
// one Runner.
type Runner struct {
	st          store.Store
	job         Job
	exec        Executor
	clock       baton.Clock
	poll        time.Duration
	retry       time.Duration
	callTimeout time.Duration
	logger      *slog.Logger
}

// New returns a Runner for job on st. Options are validated; an invalid one
// is an error naming the field.
func New(st store.Store, job Job, exec Executor, opts ...Option) (*Runner, error) {
	r := &Runner{st: st, job: job, exec: exec, clock: baton.RealClock{},
		poll: DefaultPoll, retry: DefaultRetry, callTimeout: DefaultCallTimeout}
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
	case r.clock == nil:
		return nil, errors.New("schedule: clock must not be nil")
	case r.poll <= 0:
		return nil, fmt.Errorf("schedule: poll interval must be positive, got %v", r.poll)
	case r.retry <= 0:
		return nil, fmt.Errorf("schedule: retry interval must be positive, got %v", r.retry)
	case r.callTimeout <= 0:
		return nil, fmt.Errorf("schedule: call timeout must be positive, got %v", r.callTimeout)
	}
	if err := job.Policy.Validate(); err != nil {
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
	desc := "manual triggers only"
	if r.job.Schedule != nil {
		desc = r.job.Schedule.String()
	}
	return r.st.EnsureJob(ctx, store.Job{Name: r.job.Name, Schedule: desc})
}

// Run works through the job's due periods while t lasts. It returns when t
// ends, with the term's cause (context.Cause of t.Context()), or when ctx
// ends, with ctx's error. It never returns nil.
//
// Before starting an effect it checks t.Valid(); the effect runs under a
// context that ends with the term. A write refused with
// fence.ErrStaleToken means a newer leader exists: Run writes nothing more
// and waits for t to end.
func (r *Runner) Run(ctx context.Context, t Term) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(t.Context(), func() { cancel(context.Cause(t.Context())) })
	defer stop()
	log := r.logger.With("token", t.Token(), "node", t.Node())

	var job store.Job
	for {
		cctx, ccancel := context.WithTimeout(ctx, r.callTimeout)
		var err error
		job, err = r.Register(cctx)
		ccancel()
		if err == nil {
			break
		}
		log.Warn("registering the job failed", "err", err)
		if !r.sleep(ctx, r.retry) {
			return context.Cause(ctx)
		}
	}

	for {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		cctx, ccancel := context.WithTimeout(ctx, r.callTimeout)
		rows, err := r.st.Runs(cctx, r.job.Name, "", 0)
		ccancel()
		if err != nil {
			log.Warn("reading the ledger failed", "err", err)
			if !r.sleep(ctx, r.retry) {
				return context.Cause(ctx)
			}
			continue
		}
		now := r.clock.Now()
		plan := Decide(Input{Now: now, Created: job.Created, Schedule: r.job.Schedule,
			Policy: r.job.Policy, Token: t.Token(), Rows: rows})
		wait, err := r.apply(ctx, t, plan, log)
		switch {
		case errors.Is(err, fence.ErrStaleToken):
			log.Info("a newer leader exists; waiting for the term to end", "err", err)
			<-ctx.Done()
			return context.Cause(ctx)
		case err != nil && ctx.Err() != nil:
			return context.Cause(ctx)
		case err != nil:
			log.Warn("ledger write failed; planning again", "err", err)
			if errors.Is(err, store.ErrUnavailable) && !r.sleep(ctx, r.retry) {
				return context.Cause(ctx)
			}
			continue
		case !wait:
			continue // a period ran: plan again at once
		}
		d := r.poll
		if !plan.Wake.IsZero() {
			d = min(d, max(plan.Wake.Sub(r.clock.Now()), 0))
		}
		if !r.sleep(ctx, d) {
			return context.Cause(ctx)
		}
	}
}

// apply applies plan's actions in order up to and including the first
// claim. wait is true when nothing ran, so the caller may sleep.
func (r *Runner) apply(ctx context.Context, t Term, plan Plan, log *slog.Logger) (wait bool, err error) {
	for _, a := range plan.Actions {
		sw := a.Swap(r.job.Name, t.Token(), t.Node(), r.clock.Now())
		cctx, ccancel := context.WithTimeout(ctx, r.callTimeout)
		row, err := r.st.SwapRun(cctx, sw)
		ccancel()
		if err != nil {
			return false, fmt.Errorf("%s %s: %w", a.Step, a.Period.Key, err)
		}
		if a.Step == Skip {
			log.Info("period skipped", "period", a.Period.Key, "reason", a.Reason)
			continue
		}
		r.runClaimed(ctx, t, a.Period, row, log)
		return false, nil
	}
	return true, nil
}

// runClaimed runs one claimed period and records its outcome.
func (r *Runner) runClaimed(ctx context.Context, t Term, p Period, row store.Run, log *slog.Logger) {
	log = log.With("period", p.Key, "attempt", row.Attempt)
	if !t.Valid() {
		// The term may already be over: start nothing. The row stays
		// running; the next leader takes it over.
		log.Info("term no longer valid after the claim; not starting")
		<-ctx.Done()
		return
	}
	log.Info("period started", "delay", Delay(row))
	code, out, execErr := r.exec(ctx, p, t.Token())
	if execErr != nil && ctx.Err() != nil {
		log.Info("period interrupted by the end of the term; the next leader runs it again", "err", execErr)
		return
	}
	sw := Complete(row, code, out, execErr, r.clock.Now())
	for {
		// Recording the outcome must not be cut short by the term ending
		// now: the fence decides whether it still counts.
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), r.callTimeout)
		_, err := r.st.SwapRun(cctx, sw)
		if errors.Is(err, store.ErrUnavailable) {
			// The write may have been applied: read it back.
			if got, gerr := r.st.GetRun(cctx, r.job.Name, p.Key); gerr == nil && got.Version != sw.Expect {
				if got.State == sw.Run.State && got.Token == sw.Run.Token {
					err = nil
				} else {
					err = fmt.Errorf("%w: the row changed under us", store.ErrConflict)
				}
			}
		}
		ccancel()
		switch {
		case err == nil:
			log.Info("period finished", "state", sw.Run.State, "exit", code)
			return
		case !errors.Is(err, store.ErrUnavailable):
			log.Warn("recording the outcome was refused; it does not count", "err", err)
			return
		case ctx.Err() != nil:
			log.Warn("recording the outcome failed and the term ended; the next leader runs the period again", "err", err)
			return
		}
		log.Warn("recording the outcome failed; retrying", "err", err)
		if !r.sleep(ctx, r.retry) {
			return
		}
	}
}

// sleep waits d on the clock; false if ctx ended first.
func (r *Runner) sleep(ctx context.Context, d time.Duration) bool {
	tm := r.clock.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C():
		return true
	case <-ctx.Done():
		return false
	}
}
