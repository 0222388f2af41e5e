package store

import "time"

// Suspended and Resumed are the election log events of Store.SuspendJob:
// an operator suspended or resumed the job of this name. Their Detail says
// who and why ("by WHO: WHY"). The record's holder, token and version are
// unchanged: a leader keeps its term (a run in progress finishes), and its
// scheduler learns of the suspension when it next reads the job; a claim
// or skip it sends meanwhile is refused by SwapRun (ErrSuspended).
const (
	Suspended EventKind = "suspended"
	Resumed   EventKind = "resumed"
)

// Suspension is the operator's suspension of a job, as stored with it
// (Job.Suspension); the zero value means the job is not suspended.
type Suspension struct {
	// By names who suspended it (an operator's user@host, or what
	// --by said).
	By string
	// Reason is why, as the operator said; may be empty.
	Reason string
	// At is the store's time of the suspension, for people to read.
	At time.Time
}

// Active reports whether the job is suspended.
func (s Suspension) Active() bool { return !s.At.IsZero() }

// JobSuspend asks Store.SuspendJob to suspend (Suspend true) or resume
// the job Name. By and Reason are recorded with a suspension and in the
// election log's event of either.
type JobSuspend struct {
	Name    string
	Suspend bool
	By      string
	Reason  string
}

// MaxReasonLen is the longest JobSuspend.By or JobSuspend.Reason, in bytes.
const MaxReasonLen = 500
