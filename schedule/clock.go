package schedule

import (
	"context"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/internal/scheduler/runner"
	"github.com/batonhq/baton/store"
)

// Reference is a wall clock a Runner trusts more than its own, for the
// wall-clock guard (WithClockGuard): a value with the method
// Now(ctx context.Context) (time.Time, error), which returns the
// reference's current time; an error is retried like a failed store call.
// It is an alias of the one declaration, in the Runner's runtime.
type Reference = runner.Reference

// Tolerances of the wall-clock guard.
const (
	// DefaultClockTolerance is the difference between a node's wall clock
	// and its reference that baton run tolerates: well above what NTP
	// keeps machines to, well below a period of a second-level schedule's
	// worth of harm.
	DefaultClockTolerance = time.Second
	// MinClockTolerance is the smallest tolerance WithClockGuard accepts:
	// a reference read over a network includes the round trip.
	MinClockTolerance = scheduler.MinClockTolerance
	// DefaultClockStepDown is how long baton run's leader stays held off
	// by the guard before it gives its term up (WithClockStepDown): long
	// enough for NTP to set a clock right, short next to the periods of a
	// job worth guarding.
	DefaultClockStepDown = time.Minute
)

// StoreReference returns the clock of a store that has one of its own
// (store.TimeSource: PostgreSQL's server clock). Every node compares itself
// with the same clock, so a node whose clock is wrong from the moment it
// starts is caught.
func StoreReference(ts store.TimeSource) Reference { return storeRef{ts} }

type storeRef struct{ ts store.TimeSource }

func (s storeRef) Now(ctx context.Context) (time.Time, error) { return s.ts.StoreTime(ctx) }

// StepReference returns the wall clock as it stood when StepReference was
// called, carried forward by the monotonic clock: a step detector. A wall
// clock stepped later (by hand, by a bad time source, by a restored VM) no
// longer agrees with it, and the guard waits until the wall clock comes
// back or the process restarts and takes the new clock as its base. It
// cannot catch a clock that was already wrong at start; a store with a
// clock of its own can (StoreReference). It reads the real clock, not an
// injected one.
func StepReference() Reference {
	return stepRef{base: time.Now()}
}

type stepRef struct{ base time.Time }

func (s stepRef) Now(context.Context) (time.Time, error) {
	// base keeps its monotonic reading, so Since is monotonic; the sum
	// is the wall reading at start plus the monotonic time since.
	return s.base.Round(0).Add(time.Since(s.base)), nil
}

// ClockReference returns the best reference for st: its own clock when it
// has one (PostgreSQL), otherwise a step detector. SQLite serves one host,
// whose nodes share one clock; etcd's API carries no time; for both the
// step detector is the guard.
func ClockReference(st store.Store) Reference {
	if ts, ok := store.TimeSourceOf(st); ok {
		return StoreReference(ts)
	}
	return StepReference()
}
