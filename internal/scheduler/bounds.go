package scheduler

import (
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store"
)

// Bounds of a Config. Validate is the only place they are checked: the
// schedule package's Runner, the simulator and both drill modes call it.
const (
	// MinInterval is the shortest poll, rescan, retry and prune interval:
	// a shorter one spins on the store.
	MinInterval = time.Millisecond
	// MaxInterval is the longest of them: a leader looks at its ledger at
	// least once a week, and no deadline the machine computes from an
	// interval can overflow.
	MaxInterval = 7 * 24 * time.Hour
	// MinClockTolerance is the smallest tolerance of the wall-clock guard:
	// below it, ordinary jitter between two clocks read a moment apart
	// would stop the leader.
	MinClockTolerance = 10 * time.Millisecond
	// MaxRetries is the most retries a policy may ask for: a period is
	// attempted at most MaxRetries + 1 times.
	MaxRetries = 1000
	// MaxJitter bounds Policy.Jitter: a day, beyond which a period would
	// be run after most of its successors came due.
	MaxJitter = 24 * time.Hour
	// MaxCatchUp bounds Policy.Max.
	MaxCatchUp = 100_000
)

// Validate reports the first field of c outside its bounds as a
// *bound.Error, or nil.
func (c Config) Validate() error {
	interval := func(field string, d time.Duration) error {
		if d < MinInterval || d > MaxInterval {
			return bound.Errorf(field, d, "between %v and %v", MinInterval, MaxInterval)
		}
		return nil
	}
	if err := store.CheckName(c.Job); err != nil {
		return bound.Errorf("job", c.Job, "a job name (%v)", err)
	}
	for _, f := range []struct {
		field string
		d     time.Duration
	}{{"poll", c.Poll}, {"rescan", c.Rescan}, {"retry", c.Retry}} {
		if err := interval(f.field, f.d); err != nil {
			return err
		}
	}
	switch {
	case c.Limit < 0:
		return bound.Errorf("limit", c.Limit, "0 (no limit) or more")
	case c.ClockTolerance < 0 || (c.ClockTolerance > 0 && c.ClockTolerance < MinClockTolerance):
		return bound.Errorf("clock-tolerance", c.ClockTolerance, "0 (off) or at least %v", MinClockTolerance)
	case c.ClockStepDown < 0 || (c.ClockStepDown > 0 && c.ClockStepDown < c.Poll):
		return bound.Errorf("clock-step-down", c.ClockStepDown, "0 (keep the term) or at least the poll %v", c.Poll)
	case c.ClockStepDown > 0 && c.ClockTolerance == 0:
		return bound.Errorf("clock-step-down", c.ClockStepDown, "0 while the clock guard is off (clock-tolerance 0)")
	case c.TakeoverGrace < 0 || c.TakeoverGrace > MaxInterval:
		return bound.Errorf("takeover-grace", c.TakeoverGrace, "between 0 and %v", MaxInterval)
	case c.Retention.Age < 0:
		return bound.Errorf("keep", c.Retention.Age, "0 (keep every row) or more")
	case c.Retention.Rows < 0:
		return bound.Errorf("keep-rows", c.Retention.Rows, "0 (keep every row) or more")
	case c.Retention.On() && c.PruneBatch < 1:
		return bound.Errorf("prune-batch", c.PruneBatch, "at least 1 with a retention")
	}
	if c.Retention.On() {
		if err := interval("prune-every", c.PruneEvery); err != nil {
			return err
		}
	}
	return c.Policy.Validate()
}

// Validate reports the first field of p outside its bounds as a
// *bound.Error, or nil.
func (p Policy) Validate() error {
	switch {
	case p.CatchUp != "" && p.CatchUp != CatchUpAll && p.CatchUp != CatchUpLatest && p.CatchUp != CatchUpNone:
		return bound.Errorf("catch-up", p.CatchUp, "%s, %s or %s", CatchUpAll, CatchUpLatest, CatchUpNone)
	case p.Window < 0:
		return bound.Errorf("catch-up-window", p.Window, "0 (no window) or more")
	case p.Retries < 0 || p.Retries > MaxRetries:
		return bound.Errorf("retries", p.Retries, "between 0 and %d", MaxRetries)
	case p.RetryBackoff < 0 || p.RetryBackoff > MaxInterval:
		return bound.Errorf("retry-backoff", p.RetryBackoff, "between 0 and %v", MaxInterval)
	case p.Retries > 0 && p.RetryBackoff == 0:
		return bound.Errorf("retry-backoff", p.RetryBackoff, "positive with retries (e.g. 30s)")
	case p.Max < 0 || p.Max > MaxCatchUp:
		return bound.Errorf("catch-up-max", p.Max, "0 (no cap) to %d", MaxCatchUp)
	case p.Overlap != "" && p.Overlap != OverlapQueue && p.Overlap != OverlapSkip:
		return bound.Errorf("overlap", p.Overlap, "%s or %s", OverlapQueue, OverlapSkip)
	case p.Jitter < 0 || p.Jitter > MaxJitter || (p.Jitter > 0 && p.Jitter < time.Millisecond):
		return bound.Errorf("jitter", p.Jitter, "0 or from 1ms to %v", MaxJitter)
	case p.Timeout < 0 || p.Timeout > MaxInterval || (p.Timeout > 0 && p.Timeout < time.Millisecond):
		return bound.Errorf("timeout", p.Timeout, "0 (no limit) or from 1ms to %v", MaxInterval)
	}
	return nil
}
