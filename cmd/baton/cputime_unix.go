//go:build unix

package main

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time this process used so far, user plus system
// (getrusage(RUSAGE_SELF)).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
