package store

import (
	"fmt"
	"time"
)

// Job is a scheduled job's registration in the store.
type Job struct {
	// Name is the job's name; its election record has the same name.
	Name string
	// Schedule describes the schedule, for people (e.g. "every 24h").
	Schedule string
	// Created is set by the store when the job is first registered. A job's
	// first period is the first scheduled instant after it.
	Created time.Time
	// Suspension is the job's suspension by an operator
	// (Store.SuspendJob); zero: not suspended. While it is active no
	// node claims a period of the job.
	Suspension Suspension
	// Prefer and PreferHysteresis are the job's preference policy and its
	// hysteresis (docs/prefer.md; JobPrefer says what they hold): set
	// when the job is first registered (EnsureJob) and changed by
	// Store.PreferJob. "" and 0: none, as for a job stored by a baton
	// without preferences.
	Prefer           string
	PreferHysteresis time.Duration
}

// RunState is the state of one period in the run ledger.
type RunState string

// Run states.
const (
	// Pending: due (or triggered by hand) and not started.
	Pending RunState = "pending"
	// Running: claimed by the leader with Token.
	Running RunState = "running"
	// Done: completed under Token. A done row never changes again.
	Done RunState = "done"
	// Failed: the command ran and failed under Token.
	Failed RunState = "failed"
	// Skipped: not run by policy (outside the catch-up window, or the
	// catch-up policy said so).
	Skipped RunState = "skipped"
)

// Final reports whether a run in this state is finished for good.
func (s RunState) Final() bool { return s == Done || s == Failed || s == Skipped }

// RunStates lists every state a ledger row can hold. A row in any other
// state is damaged (CheckRunState).
var RunStates = []RunState{Pending, Running, Done, Failed, Skipped}

// Known reports whether s is one of RunStates.
func (s RunState) Known() bool {
	switch s {
	case Pending, Running, Done, Failed, Skipped:
		return true
	}
	return false
}

// maxShownState is the most bytes of an unknown state an error quotes.
const maxShownState = 40

// CheckRunState returns a *DamagedRowError, which wraps ErrCorrupt, when
// the ledger row job/period holds a state that is not one of RunStates:
// no baton wrote it, and no rule says what it means (done? lost?), so the
// row is damaged. Every backend's read of a ledger row calls it and
// refuses the row the same way (a read that meets it returns the error),
// and the scheduler machine checks every row it is handed again: such a
// row is never run again, judged or shown as if it were pending.
func CheckRunState(job, period string, s RunState) error {
	if s.Known() {
		return nil
	}
	return &DamagedRowError{Job: job, Period: period, State: s}
}

// DamagedRowError is a ledger row in a state that is none of RunStates
// (CheckRunState). It wraps ErrCorrupt. Its message names the row and the
// fix in one line; every string in it is quoted (no raw control
// character), the state cut to its first 40 bytes.
type DamagedRowError struct {
	Job, Period string
	State       RunState
}

// Error names the row, says that it is damaged, and gives the fix.
func (e *DamagedRowError) Error() string {
	shown := string(e.State)
	if len(shown) > maxShownState {
		shown = shown[:maxShownState] + "..."
	}
	return fmt.Sprintf("%v: the ledger row of job %q, period %q, has state %q, which baton never writes (it writes pending, running, done, failed or skipped): the row is damaged; fix: restore the store from a backup, or set the row's state with the store's own tools",
		ErrCorrupt, e.Job, e.Period, shown)
}

// Unwrap returns ErrCorrupt.
func (e *DamagedRowError) Unwrap() error { return ErrCorrupt }

// Run is one row of the run ledger: one period of one job.
type Run struct {
	// Job is the job's name.
	Job string
	// Period is the stable key of the scheduled instant: its RFC 3339 time
	// in UTC, the same on every node.
	Period string
	// Scheduled is the instant the period came due.
	Scheduled time.Time
	// State is the row's state.
	State RunState
	// Token is the fencing token of the attempt that claimed or finished it.
	Token uint64
	// Holder is the node that claimed it.
	Holder string
	// Attempt counts claims; a takeover of a running row adds one.
	Attempt int
	// Manual is true for a row written by a manual trigger.
	Manual bool
	// Started and Finished are the attempt's local start and end times.
	Started  time.Time
	Finished time.Time
	// ExitCode is the command's exit status (done or failed rows).
	ExitCode int
	// Output is the tail of the command's output.
	Output string
	// Version changes on every write; 0 means "does not exist".
	Version int64
}

// RunSwap is one compare-and-swap of a run ledger row.
type RunSwap struct {
	// Expect is the version the row must have; 0 means it must not exist.
	Expect int64
	// Run holds the new values. Its Version is ignored.
	Run Run
	// Fenced makes the write conditional on Run.Token being the current
	// token of the election record named Run.Job.
	Fenced bool
}

// Claims reports whether s claims or skips a period: it writes the row
// running (a new attempt, a takeover included) or skipped, which
// Store.SwapRun refuses while the job is suspended.
func (s RunSwap) Claims() bool { return s.Run.State == Running || s.Run.State == Skipped }
