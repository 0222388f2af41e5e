//go:build unix

package monoclock

import (
	"math"

	"golang.org/x/sys/unix"
)

// Now returns the shared monotonic clock's reading in nanoseconds.
// Should the clock be unreadable (it cannot be on a supported system), it
// returns math.MaxInt64: an instant that is always past, so that a
// deadline compared with it has come rather than never comes.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return math.MaxInt64
	}
	return ts.Nano()
}
