package storedriver

import (
	"fmt"
	"time"

	"github.com/batonhq/baton/store"
)

// InvalidOption returns the error of an invalid option value, in the one
// shape every backend's options have: it wraps store.ErrInvalid and names
// the backend and the option ("sqlite: WithBusyTimeout: invalid request:
// ..."). why says what is wrong with the value and what to give instead.
func InvalidOption(backend, option, why string) error {
	return fmt.Errorf("%s: %s: %w: %s", backend, option, store.ErrInvalid, why)
}

// CheckPositive returns InvalidOption's error unless d is positive;
// example is a valid value to suggest, such as "5s".
func CheckPositive(backend, option string, d time.Duration, example string) error {
	if d <= 0 {
		return InvalidOption(backend, option, fmt.Sprintf("%v is not positive; use a duration such as %s", d, example))
	}
	return nil
}

// CheckClock returns the error of a WithTime option given a nil clock,
// nil for any other.
func CheckClock(backend string, now func() time.Time) error {
	if now == nil {
		return InvalidOption(backend, "WithTime", "now is nil; pass a clock function such as time.Now")
	}
	return nil
}
