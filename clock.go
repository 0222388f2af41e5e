package baton

import "time"

// Clock is the source of time for an Elector. All durations are measured on
// it; a Clock's Now must carry a monotonic reading (as time.Now does) so that
// wall-clock steps never move a deadline. Tests pass a virtual clock, or run
// under testing/synctest with the real one.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer made by a Clock.
type Timer interface {
	// C returns the channel the timer fires on.
	C() <-chan time.Time
	// Stop stops the timer; it reports whether the call stopped it.
	Stop() bool
}

// RealClock is the process's clock: time.Now and time.NewTimer.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// NewTimer returns a real timer.
func (RealClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }
