//go:build unix

package sqlite

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the CPU time the process used so far, user and system, for
// the benchmarks' cpu-ns metrics.
func CPUTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
