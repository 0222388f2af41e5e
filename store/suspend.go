package store

import (
	"context"
	"time"
)

// Suspended and Resumed are the election log events of Suspender.SuspendJob:
// an operator suspended or resumed the job of this name. Their Detail says
// who and why ("by WHO: WHY"). The record's holder, token and version are
// unchanged: a leader keeps its term (a run in progress finishes), and its
// scheduler learns of the suspension when it next reads the job.
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

// JobSuspend asks Suspender.SuspendJob to suspend (Suspend true) or resume
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

// Suspender is an optional capability: a store that keeps a job's
// suspension (memstore, sqlite, postgres; not etcd, whose election log
// cannot take an event without a write of the record, which would end
// the holder's term). A store without it has no suspended jobs.
type Suspender interface {
	// SuspendJob suspends or resumes job s.Name and returns the job as
	// stored. It is a compare-and-swap on the job's suspension: suspending
	// a suspended job, or resuming one that is not, is ErrConflict, so of
	// two operators racing one wins. In the same atomic write, if the
	// election record of that name exists, it appends a Suspended or
	// Resumed event (Detail "by WHO: WHY") to the election log without
	// changing the record. A missing job is ErrNotFound; By empty or By or
	// Reason longer than MaxReasonLen or not printable text (no control
	// characters: every view shows them as given) is ErrInvalid; nothing
	// is written.
	SuspendJob(ctx context.Context, s JobSuspend) (Job, error)
}
