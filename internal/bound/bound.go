// Package bound holds what the machines' Config validators share: the
// error that names a field outside its bounds (the module's one such
// type, public as baton.OptionError), and saturating arithmetic
// on durations; the duration parser of every place a user writes one
// (flags, store URLs, schedules) and the instant parser of every time
// flag (ParseInstant). It is pure and tiny, so that both
// machines (internal/election, internal/scheduler) can use it.
package bound

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// Error is the error of an option, configuration field or argument outside
// its bounds. It is declared here once, at the bottom of the module, so
// that the machines' validators return it and every public constructor
// returns it too; baton.OptionError is its public name (an alias), the one
// a caller matches with errors.As. Option is named as baton run's flag is
// (lease, renew, clock-margin, poll, ...), so that a command can say which
// flag to fix.
type Error struct {
	Option string // the option's (or argument's) name, as its flag is named
	Got    string // the value given
	Want   string // what is allowed
}

// Error says which option is invalid, the value given and what is allowed.
// A package that returns it wraps it with its name ("baton: ",
// "schedule: ").
func (e *Error) Error() string {
	return fmt.Sprintf("invalid %s %s; want %s", e.Option, e.Got, e.Want)
}

// Errorf returns an *Error for option with value got; want is formatted
// with a.
func Errorf(option string, got any, want string, a ...any) error {
	return &Error{Option: option, Got: fmt.Sprint(got), Want: fmt.Sprintf(want, a...)}
}

// Add returns a + b, saturated at the largest and smallest Duration
// instead of wrapping around.
func Add(a, b time.Duration) time.Duration {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// Mul returns d * n, saturated instead of wrapping around.
func Mul(d time.Duration, n int64) time.Duration {
	if d == 0 || n == 0 {
		return 0
	}
	p := d * time.Duration(n)
	if p/time.Duration(n) != d || (d == math.MinInt64 && n == -1) {
		if (d > 0) == (n > 0) {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return p
}

// ParseDuration is time.ParseDuration with errors that say the fix: a
// number without a unit needs one ("5" is refused, "5s" is not); a
// duration past the largest a time.Duration holds (about 292 years) is
// out of range, which time.ParseDuration reports as invalid; anything
// else is not a duration. Each error quotes s.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, nil
	}
	if _, nerr := strconv.ParseFloat(s, 64); nerr == nil && s != "0" {
		return 0, fmt.Errorf("%q needs a unit, e.g. %ss", s, s)
	}
	if durationSyntax().MatchString(s) {
		return 0, fmt.Errorf("%q is out of range: a duration is at most %v (about 292 years)", s, time.Duration(math.MaxInt64))
	}
	return 0, fmt.Errorf("%q is not a duration; want a number with a unit, e.g. 5s, 1m30s or 2h", s)
}

// durationSyntax is what time.ParseDuration accepts, whatever the size:
// a string it matches but ParseDuration refuses is out of range.
// Compiled on first use, not at start-up: every process links it, few use it.
var durationSyntax = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)
})
