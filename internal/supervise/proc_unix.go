//go:build unix

package supervise

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Supported returns nil where Run can run a command: on Unix.
func Supported() error { return nil }

// killGroup sends SIGKILL to the process group pgid, and reports whether
// it had a process left.
func killGroup(pgid int) bool {
	if !groupAlive(pgid) {
		return false
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	return true
}

// signalName returns sig's name, such as "SIGKILL".
func signalName(sig syscall.Signal) string { return unix.SignalName(sig) }
