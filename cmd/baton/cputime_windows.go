//go:build windows

package main

import (
	"time"

	"golang.org/x/sys/windows"
)

// cpuTime returns the CPU time this process used so far, user plus system
// (GetProcessTimes).
func cpuTime() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		return 0
	}
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100) // 100ns units
}
