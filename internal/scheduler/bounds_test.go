package scheduler_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/scheduler"
)

// Validate refuses every field outside its bounds, naming it as the flag
// that sets it.
func TestConfigValidate(t *testing.T) {
	ok := scheduler.Config{Job: "billing", Poll: time.Second, Rescan: time.Minute, Retry: time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid config: %v", err)
	}
	for _, tc := range []struct {
		field string
		mod   func(*scheduler.Config)
	}{
		{"job", func(c *scheduler.Config) { c.Job = "" }},
		{"job", func(c *scheduler.Config) { c.Job = "a\nb" }},
		{"poll", func(c *scheduler.Config) { c.Poll = 0 }},
		{"poll", func(c *scheduler.Config) { c.Poll = math.MaxInt64 }},
		{"rescan", func(c *scheduler.Config) { c.Rescan = -1 }},
		{"retry", func(c *scheduler.Config) { c.Retry = scheduler.MaxInterval + 1 }},
		{"limit", func(c *scheduler.Config) { c.Limit = -1 }},
		{"clock-tolerance", func(c *scheduler.Config) { c.ClockTolerance = time.Millisecond }},
		{"clock-tolerance", func(c *scheduler.Config) { c.ClockTolerance = -1 }},
		{"clock-step-down", func(c *scheduler.Config) { c.ClockTolerance, c.ClockStepDown = time.Second, -1 }},
		{"clock-step-down", func(c *scheduler.Config) { c.ClockTolerance, c.ClockStepDown = time.Second, time.Millisecond }},
		{"clock-step-down", func(c *scheduler.Config) { c.ClockStepDown = time.Minute }},
		{"takeover-grace", func(c *scheduler.Config) { c.TakeoverGrace = -1 }},
		{"takeover-grace", func(c *scheduler.Config) { c.TakeoverGrace = math.MaxInt64 }},
		{"keep", func(c *scheduler.Config) { c.Retention.Age = -1 }},
		{"keep-rows", func(c *scheduler.Config) { c.Retention.Rows = -1 }},
		{"prune-batch", func(c *scheduler.Config) { c.Retention.Rows, c.PruneEvery = 5, time.Minute }},
		{"prune-every", func(c *scheduler.Config) { c.Retention.Rows, c.PruneBatch, c.PruneEvery = 5, 10, math.MaxInt64 }},
		{"catch-up", func(c *scheduler.Config) { c.Policy.CatchUp = "some" }},
		{"catch-up-window", func(c *scheduler.Config) { c.Policy.Window = -1 }},
		{"retries", func(c *scheduler.Config) { c.Policy.Retries = -1 }},
		{"retries", func(c *scheduler.Config) { c.Policy.Retries, c.Policy.RetryBackoff = math.MaxInt, time.Second }},
		{"retry-backoff", func(c *scheduler.Config) { c.Policy.Retries = 2 }},
		{"retry-backoff", func(c *scheduler.Config) { c.Policy.Retries, c.Policy.RetryBackoff = 2, math.MaxInt64 }},
		{"timeout", func(c *scheduler.Config) { c.Policy.Timeout = -1 }},
		{"timeout", func(c *scheduler.Config) { c.Policy.Timeout = time.Microsecond }},
		{"timeout", func(c *scheduler.Config) { c.Policy.Timeout = math.MaxInt64 }},
	} {
		c := ok
		tc.mod(&c)
		var be *bound.Error
		if err := c.Validate(); !errors.As(err, &be) || be.Option != tc.field {
			t.Errorf("%s: %v, want a bound.Error naming %s", tc.field, err, tc.field)
		}
	}
}
