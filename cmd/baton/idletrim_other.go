//go:build !linux

package main

// dropExecutablePages does nothing here: only Linux's /proc/self/smaps
// says which of the executable's mappings are clean, safe to drop.
func dropExecutablePages() (int64, error) { return 0, nil }
