package schedule

import (
	"context"

	"github.com/batonhq/baton/store"
)

// CheckOptions validates job and opts as New does, without a store or an
// executor: a command can refuse bad flags before it opens anything. The
// bounds are the scheduler machine's (its Config.Validate), and an error
// outside them names the field as New's does. The Reference given to
// WithClockGuard is kept, not called.
func CheckOptions(job Job, opts ...Option) error {
	_, err := New(unopened{}, job, noEffect, opts...)
	return err
}

// unopened stands for the store CheckOptions has not opened. New keeps it
// and calls none of its methods.
type unopened struct{ store.Store }

// noEffect is the Executor of CheckOptions, never called.
func noEffect(context.Context, Period, uint64) (int, string, error) { return 0, "", nil }
