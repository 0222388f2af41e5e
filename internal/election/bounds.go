package election

import (
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store"
)

// Bounds of a Config and of the records the machine trusts. They are the
// only bounds of the protocol's timing: the library's options, the CLI's
// flags, the simulator and both drill modes all end in Validate.
const (
	// MinLease is the shortest lease: a shorter one flaps on any real
	// machine, where one scheduling hiccup outlasts it.
	MinLease = 50 * time.Millisecond
	// MaxLease is the longest lease. A lease is how long a dead leader
	// blocks the work; no deployment wants a dead leader to block a job
	// for more than a day, and a day is the period of the longest
	// schedules baton runs (a daily batch). The bound keeps every sum of
	// durations the machine computes (lease + 2 * margin, deadline +
	// lease) far inside int64 nanoseconds, so none can wrap.
	MaxLease = 24 * time.Hour
	// MinInterval is the shortest renew, poll, retry and check interval:
	// a shorter one spins on the store.
	MinInterval = time.Millisecond
	// MaxToken is the largest fencing token (store.MaxToken). A record at
	// MaxToken can never be acquired again (the next token would not
	// fit), so the machine reports it (store.ErrTokenLimit) rather than
	// wrap or retry.
	MaxToken = store.MaxToken
	// MaxHysteresis is the longest hysteresis of a preference: a week,
	// far inside int64 nanoseconds added to any deadline.
	MaxHysteresis = 7 * 24 * time.Hour
)

// Validate reports the first field of c outside its bounds as a
// *bound.Error naming it as baton run's flag, or nil. A Config that
// passes keeps every deadline the machine computes within int64
// nanoseconds of any instant it is given.
func (c Config) Validate() error {
	half := c.Lease / 2
	switch {
	case c.Lease < MinLease:
		return bound.Errorf("lease", c.Lease, "at least %v (a shorter lease flaps: any pause outlasts it)", MinLease)
	case c.Lease > MaxLease:
		return bound.Errorf("lease", c.Lease, "at most %v (the longest a dead leader may block a job; longer leases are refused so that no deadline can overflow)", MaxLease)
	case c.Renew < MinInterval || c.Renew > half:
		return bound.Errorf("renew", c.Renew, "between %v and half the lease (%v), so that a failed renewal is retried before the lease runs out", MinInterval, half)
	case c.Margin < 0 || c.Margin >= c.Lease:
		return bound.Errorf("clock-margin", c.Margin, "0 or more and less than the lease (%v)", c.Lease)
	case c.Poll < MinInterval || c.Poll > half:
		return bound.Errorf("poll", c.Poll, "between %v and half the lease (%v)", MinInterval, half)
	case c.Retry < MinInterval || c.Retry > half:
		return bound.Errorf("retry", c.Retry, "between %v and half the lease (%v)", MinInterval, half)
	case c.Check != 0 && (c.Check < MinInterval || c.Check > MaxLease):
		return bound.Errorf("check", c.Check, "0 (the poll interval) or between %v and %v", MinInterval, MaxLease)
	case c.Share < 0 || c.Share > MaxWeight:
		return bound.Errorf("share", c.Share, "1 to %d (0: 1), a balanced Group's weight among the Groups that share its names", MaxWeight)
	case c.TakeStep < 0:
		return bound.Errorf("take-step", c.TakeStep, "0 (%d names a step) or more", DefaultTakeStep)
	case c.Node == "":
		return bound.Errorf("node", `""`, "a node id")
	case c.Incarnation == "":
		return bound.Errorf("incarnation", `""`, "a process instance id")
	}
	if err := store.CheckName(c.Node); err != nil {
		return bound.Errorf("node", fmt.Sprintf("%q", c.Node), "printable characters only")
	}
	if err := c.Prefer.Validate(); err != nil {
		return err
	}
	if err := c.Self.Validate(); err != nil {
		return err
	}
	switch {
	case c.Hysteresis != 0 && (c.Hysteresis < c.Lease || c.Hysteresis > MaxHysteresis):
		return bound.Errorf("prefer-hysteresis", c.Hysteresis, "0 (none set) or between the lease (%v) and %v, so that the lead moves at most once a lease", c.Lease, MaxHysteresis)
	case c.Prefer.Kind != PreferNone && c.Hysteresis == 0:
		return bound.Errorf("prefer-hysteresis", c.Hysteresis, "between the lease (%v) and %v when a preference is set (--prefer %s)", c.Lease, MaxHysteresis, c.Prefer)
	}
	return nil
}

// wait is how long a contender must see a record unchanged before its
// holder has passed its own deadline: the record's lease plus twice the
// clock margin, saturated. With Mutate.WrapDeadline (a mutation) the sum wraps,
// as it did before the bounds existed.
func (c *Config) wait(lease time.Duration) time.Duration {
	if c.Mutate.WrapDeadline {
		return lease + 2*c.Margin
	}
	return bound.Add(lease, bound.Mul(c.Margin, 2))
}

// checkLease reports a held record the machine cannot trust to expire: a
// lease outside [MinLease, MaxLease] was written by no valid Config, so
// the record is damaged (or hostile), and no wait derived from it is
// safe. The error wraps store.ErrCorrupt: the campaign for the name ends
// with one line, and the record is never taken over early.
func checkLease(r *store.Record) error {
	if !leaseInBounds(r.Lease) {
		return fmt.Errorf("%w: record %q is held by %q with lease %v, outside [%v, %v]: it cannot be taken over safely; fix or delete the record",
			store.ErrCorrupt, r.Name, r.Holder, r.Lease, MinLease, MaxLease)
	}
	return nil
}

// leaseInBounds is checkLease's test, small enough to inline where
// every read of a held record asks it.
func leaseInBounds(lease time.Duration) bool {
	return lease >= MinLease && lease <= MaxLease
}

// checkToken reports a record whose token leaves no room for the next
// acquisition.
func checkToken(r *store.Record) error {
	if r.Token >= MaxToken {
		return fmt.Errorf("%w: record %q has token %d; the largest token is %d, so it can never be acquired again",
			store.ErrTokenLimit, r.Name, r.Token, MaxToken)
	}
	return nil
}

// Valid reports whether a term whose deadline is deadline is still valid
// at local monotonic time now: strictly before its deadline. Term.Valid
// and the simulator both ask this, so there is one rule.
func Valid(now, deadline time.Time) bool { return now.Before(deadline) }
