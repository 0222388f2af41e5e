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
}

// Validate reports a policy that can never be applied. Its bounds are the
// scheduler machine's (the only place they live).
func (p Policy) Validate() error { return p.machine().Validate() }

// machine returns the policy as the scheduler machine takes it.
func (p Policy) machine() scheduler.Policy {
	return scheduler.Policy{CatchUp: string(p.CatchUp), Window: p.Window, Retries: p.Retries, RetryBackoff: p.RetryBackoff}
}

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
func Delay(r store.Run) time.Duration {
	if r.Started.IsZero() {
		return 0
	}
	return r.Started.Sub(r.Scheduled)
}
