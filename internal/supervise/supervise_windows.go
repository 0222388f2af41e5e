//go:build windows

package supervise

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"
)

// errWindows is Run's error on Windows, where no supervisor exists yet.
var errWindows = errors.New("a command run by baton needs a supervisor, which exists for Unix only (Linux, macOS, FreeBSD), not for Windows")

// Supported returns an error where Run cannot run a command: Windows has
// no supervisor yet.
func Supported() error { return errWindows }

const subreaper = false

func supervisorAttr() *syscall.SysProcAttr { return nil }

func killGroup(pgid int) bool { return false }

func signalName(sig syscall.Signal) string { return sig.String() }

// Main is the supervisor's entry point; on Windows it reports that there
// is none and returns 2.
func Main(args []string) int { return MainRecording(args, nil) }

// MainRecording is Main with a Recorder; on Windows it reports that there
// is no supervisor and returns 2.
func MainRecording(args []string, rec Recorder) int {
	fmt.Fprintln(os.Stderr, errWindows)
	return 2
}

// Adopt does nothing on Windows (there is no supervisor to adopt the
// orphans of).
func Adopt() error { return nil }

func startSupervisor(start func() error, pid func() int) error { return start() }

func forgetSupervisor(pid int) {}

func sweep(supervisor int, log *slog.Logger) int { return 0 }
