//go:build windows

package sqlite

import (
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// CPUTime is the CPU time the process used so far, user and system, for
// the benchmarks' cpu-ns metrics.
func CPUTime(tb testing.TB) time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		tb.Fatal(err)
	}
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100) // 100ns units
}
