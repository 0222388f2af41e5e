// Package monoclock reads a monotonic clock that every process of a host
// shares, so that an instant read by one process means the same instant
// to another: baton and its supervisor (package supervise), the nodes of
// a drill and the checker of their histories (package history).
//
// The clock is CLOCK_MONOTONIC on Linux, macOS and the BSDs (clock_gettime,
// one clock for the whole host, or for a time namespace on Linux) and the
// performance counter on Windows (QueryPerformanceCounter, which Windows
// keeps consistent across processors and processes). Its readings are
// nanoseconds since an unspecified start, the same for every process
// until the host reboots; they never go back.
//
// What it does not guarantee: that it advances like Go's monotonic clock
// while the host is suspended. On Linux CLOCK_MONOTONIC stops while the
// host sleeps, as Go's does; on macOS it goes on counting (Go's does not),
// and on Windows the performance counter may. A clock that counts the
// sleep makes every instant in flight come earlier, never later; in any
// case a host suspended is a host frozen whole, which only a fence covers.
// It is not comparable across hosts, nor across a reboot.
package monoclock
