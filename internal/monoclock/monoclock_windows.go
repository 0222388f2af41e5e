//go:build windows

package monoclock

import (
	"math"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	kernel32 = windows.NewLazySystemDLL("kernel32.dll")
	qpc      = kernel32.NewProc("QueryPerformanceCounter")
	qpf      = kernel32.NewProc("QueryPerformanceFrequency")
	freq     = sync.OnceValue(func() int64 {
		var f int64
		if r, _, _ := qpf.Call(uintptr(unsafe.Pointer(&f))); r == 0 || f <= 0 {
			return 0
		}
		return f
	})
)

// Now returns the shared monotonic clock's reading in nanoseconds: the
// performance counter, which every process reads alike, scaled by its
// frequency (fixed at boot). Should the counter be unreadable (it cannot
// be since Windows XP), it returns math.MaxInt64: an instant that is
// always past, so that a deadline compared with it has come rather than
// never comes.
func Now() int64 {
	f := freq()
	var c int64
	if r, _, _ := qpc.Call(uintptr(unsafe.Pointer(&c))); f == 0 || r == 0 || c < 0 {
		return math.MaxInt64
	}
	// c*1e9/f without overflow: the same arithmetic in every process.
	s, rem := c/f, c%f
	if s > math.MaxInt64/int64(time.Second) || f > math.MaxInt64/int64(time.Second) {
		return math.MaxInt64
	}
	return s*int64(time.Second) + rem*int64(time.Second)/f
}
