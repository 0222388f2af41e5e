package storedriver

import (
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store"
)

// InvalidOption returns the error of an invalid option value, in the one
// shape every backend's options have: it names the backend, wraps
// store.ErrInvalid, and wraps the module's one field-error type
// (*baton.OptionError, which errors.As finds) naming the option, the
// value given and what is allowed: "sqlite: invalid request: invalid
// busy-timeout 0s; want at least 1ms, such as 5s". option is named as
// the store URL's parameter for it is, or would be (busy-timeout for
// WithBusyTimeout); want says what to give instead.
func InvalidOption(backend, option string, got any, want string) error {
	return fmt.Errorf("%s: %w: %w", backend, store.ErrInvalid, &bound.Error{Option: option, Got: fmt.Sprint(got), Want: want})
}

// CheckPositive returns InvalidOption's error unless d is positive;
// example is a valid value to suggest, such as "5s".
func CheckPositive(backend, option string, d time.Duration, example string) error {
	if d <= 0 {
		return InvalidOption(backend, option, d, "a positive duration, such as "+example)
	}
	return nil
}

// CheckClock returns the error of a WithTime option given a nil clock,
// nil for any other.
func CheckClock(backend string, now func() time.Time) error {
	if now == nil {
		return InvalidOption(backend, "clock", "nil", "a clock function such as time.Now")
	}
	return nil
}
