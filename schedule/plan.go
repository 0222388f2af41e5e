package schedule

import (
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// CatchUp says which overdue periods a leader runs when it finds more than
// one due: after a leaderless stretch, or after a run that outlasted its
// interval.
type CatchUp string

// Catch-up policies.
const (
	// CatchUpAll runs every due period, oldest first.
	CatchUpAll CatchUp = "all"
	// CatchUpLatest runs only the newest due scheduled period and marks the
	// older ones skipped.
	CatchUpLatest CatchUp = "latest"
	// CatchUpNone runs only the current period (the newest scheduled instant
	// not after now) and marks older due periods skipped.
	CatchUpNone CatchUp = "none"
)

// ParseCatchUp parses "all", "latest" or "none".
func ParseCatchUp(s string) (CatchUp, error) {
	c, err := parseCatchUp(s)
	if err != nil {
		return "", fmt.Errorf("schedule: %w", err)
	}
	return c, nil
}

// parseCatchUp is ParseCatchUp with an error to wrap (ParseSpec's).
func parseCatchUp(s string) (CatchUp, error) {
	switch c := CatchUp(s); c {
	case CatchUpAll, CatchUpLatest, CatchUpNone:
		return c, nil
	}
	return "", fmt.Errorf("catch-up policy %q: want all, latest or none", s)
}

// Policy is a job's catch-up policy. The zero Policy runs every due period
// however late (CatchUpAll, no window).
type Policy struct {
	// CatchUp picks among due scheduled periods; "" means CatchUpAll.
	CatchUp CatchUp
	// Window, when positive, marks skipped every scheduled period that is
	// more than Window late when the leader gets to it. Manual triggers
	// are never skipped.
	Window time.Duration
	// Retries is how many times a failed run (non-zero exit, an error, a
	// timeout) is run again: a failed row whose Attempt is at most Retries
	// is claimed again, Attempt one more, RetryBackoff after it finished.
	// 0: a failed run is final. A retry that the catch-up policy or window
	// would skip by then is not run; the row stays failed.
	Retries int
	// RetryBackoff is the wait between a failed attempt and the next; it
	// must be positive when Retries is.
	RetryBackoff time.Duration
	// Max, when positive, caps the catch-up: only the newest Max missed
	// scheduled periods run, older ones are recorded skipped ("outside
	// the catch-up window"). 0: no cap (the zero Policy). baton run's
	// default is DefaultCatchUpMax.
	Max int
	// Overlap says what happens to a period that comes due while the
	// previous run is still going: OverlapQueue ("" too) runs it after
	// it, OverlapSkip records it skipped ("overlap").
	Overlap Overlap
	// Jitter, when positive, delays each scheduled period by a delay in
	// [0, Jitter] derived from the job's name and the period key
	// (JitterOf): the same on every node, not re-drawn by a handover,
	// and part of the run's recorded delay.
	Jitter time.Duration
	// Timeout, when positive, stops a run still going Timeout after it
	// started: the Executor's context is cancelled with the cause
	// ErrTimeout, and the run is recorded failed ("timeout"), retried
	// like any failure. 0: no limit.
	Timeout time.Duration
}

// Bounds of Policy.Max and Policy.Jitter.
const (
	MaxCatchUp = scheduler.MaxCatchUp
	MaxJitter  = scheduler.MaxJitter
)

// DefaultCatchUpMax is baton run's catch-up cap (--catch-up-max): the
// number of missed start times after which a Kubernetes CronJob gives up.
const DefaultCatchUpMax = 100

// Overlap is what a leader does with a period that comes due while its
// previous run is still going.
type Overlap string

// Overlap policies.
const (
	// OverlapQueue runs it once the previous run finished.
	OverlapQueue Overlap = scheduler.OverlapQueue
	// OverlapSkip records it skipped with the reason "overlap".
	OverlapSkip Overlap = scheduler.OverlapSkip
)

// ParseOverlap parses "queue" or "skip".
func ParseOverlap(s string) (Overlap, error) {
	switch o := Overlap(s); o {
	case OverlapQueue, OverlapSkip:
		return o, nil
	}
	return "", fmt.Errorf("schedule: overlap policy %q: want queue or skip", s)
}

// JitterOf returns the delay of the period key of job under a jitter of at
// most max: whole milliseconds in [0, max] from SHA-256 of the name and
// the key, so every node computes the same.
func JitterOf(job, key string, max time.Duration) time.Duration {
	return scheduler.JitterOf(job, key, max)
}

// scheduler returns the machine's form of p.
func (p Policy) scheduler() scheduler.Policy {
	return scheduler.Policy{CatchUp: string(p.CatchUp), Window: p.Window, Retries: p.Retries,
		RetryBackoff: p.RetryBackoff, Max: p.Max, Overlap: string(p.Overlap), Jitter: p.Jitter, Timeout: p.Timeout}
}

// Validate reports a policy that can never be applied. Its bounds are the
// scheduler machine's (the only place they live).
func (p Policy) Validate() error { return p.scheduler().Validate() }

// Period is one scheduled instant of a job, or one manual trigger.
type Period struct {
	// Key is the stable ledger key: Scheduled as KeyLayout.
	Key string
	// Scheduled is the instant the period comes due, in UTC.
	Scheduled time.Time
	// Manual is true for a period written by a manual trigger.
	Manual bool
}

// Delay returns how late a run started: Started - Scheduled, or 0 for a row
// that has not started.
func Delay(r store.Run) time.Duration { return scheduler.Delay(r) }
