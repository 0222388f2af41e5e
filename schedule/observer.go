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

// ClockObserver is an Observer that is also told when the wall-clock guard
// (WithClockGuard) holds the leader off: batonprom.Metrics implements it
// (baton_job_clock_held). A leader held off claims and skips nothing and,
// until it gives its term up (WithClockStepDown), keeps it, so that no
// other node runs the job either: an operator wants to know. Its method is
// called from the Runner's goroutine and must return quickly.
type ClockObserver interface {
	Observer
	// ClockHeld says the guard began (held) or stopped holding the leader
	// of job off: its wall clock was skew ahead of the reference, behind
	// when negative. A term that ends while held off is told held false
	// with skew 0.
	ClockHeld(job string, held bool, skew time.Duration)
}

// WithObserver makes the Runner report to o (default: nobody). When o is a
// ClockObserver it is told of the clock guard too.
func WithObserver(o Observer) Option {
	return func(r *Runner) {
		if o == nil {
			r.cfg.Observer = nil // refused by New
			return
		}
		r.cfg.Observer = clockObserver{o}
	}
}

// clockObserver makes an Observer a runner.Observer: ClockHeld goes to it
// when it is a ClockObserver.
type clockObserver struct{ Observer }

func (o clockObserver) ClockHeld(job string, held bool, skew time.Duration) {
	if c, ok := o.Observer.(ClockObserver); ok {
		c.ClockHeld(job, held, skew)
	}
}
