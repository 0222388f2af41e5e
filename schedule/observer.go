package schedule

import (
	"time"

	"github.com/batonhq/baton/store"
)

// Observer is told what a Runner does with its job's periods, for metrics:
// batonprom.Metrics implements it. Its methods are called from the Runner's
// goroutine and must return quickly.
type Observer interface {
	// PeriodState says the Runner moved a period of job to state
	// (running when it claims it, then done, failed or skipped).
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

// WithObserver makes the Runner report to o (default: nobody).
func WithObserver(o Observer) Option { return func(r *Runner) { r.cfg.Observer = o } }
