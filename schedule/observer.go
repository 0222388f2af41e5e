package schedule

import "github.com/batonhq/baton/internal/scheduler/runner"

// Observer is told what a Runner does with its job's periods, for metrics:
// batonprom.Metrics implements it. Its methods are called from the Runner's
// goroutine and must return quickly:
//
//	PeriodState(job string, state store.RunState) // the Runner moved a period of job to state (running when it claims it, then done, failed or skipped)
//	RunStarted(job string, delay time.Duration)   // a run of job started delay after its period's scheduled time
//	RunSucceeded(job string, t time.Time)         // a run of job finished done at t
//	FenceRejected(name string)                    // a ledger write for name was refused: its token was stale
//	JobSuspended(job string, suspended bool)      // whether job was suspended ('baton suspend') when last read: at registration and at each of the leader's passes
//
// It is an alias of the one declaration, in the Runner's runtime.
type Observer = runner.Observer

// ClockObserver is an Observer that is also told when the wall-clock guard
// (WithClockGuard) holds the leader off: batonprom.Metrics implements it
// (baton_job_clock_held). A leader held off claims and skips nothing and,
// until it gives its term up (WithClockStepDown), keeps it, so that no
// other node runs the job either: an operator wants to know. Its one more
// method is called from the Runner's goroutine and must return quickly:
//
//	ClockHeld(job string, held bool, skew time.Duration)
//
// says the guard began (held) or stopped holding the leader of job off:
// its wall clock was skew ahead of the reference, behind when negative. A
// term that ends while held off is told held false with skew 0. It is an
// alias of the one declaration, in the Runner's runtime.
type ClockObserver = runner.ClockObserver

// WithObserver makes the Runner report to o (default: nobody). When o is a
// ClockObserver it is told of the clock guard too.
func WithObserver(o Observer) Option {
	return func(cfg *config) error { cfg.Observer = o; return nil } // nil is refused by New
}
