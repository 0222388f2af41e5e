//go:build unix && (!linux || batonportable)

package supervise

import (
	"log/slog"
	"syscall"
)

// subreaper is false: this system (or this build: the batonportable tag,
// which CI uses to test this path on Linux) has no child subreaper nor
// parent-death signal, and the supervisor runs the portable path: it
// learns of its parent's death from the control pipe alone, signals the
// command's process group alone, and Run kills that group when the
// supervisor dies without its report. A process that left the group
// (setsid) is out of its reach (see the package documentation).
const subreaper = false

// becomeSubreaper does nothing: there is no subreaper here.
func becomeSubreaper() error { return nil }

// supervisorAttr starts the supervisor in a process group of its own.
func supervisorAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// commandAttr starts the command as the leader of a new process group.
func commandAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// children returns nothing: without a subreaper, the supervisor's only
// child is the command's first process, which it waits for by itself.
func children() []int { return nil }

// Adopt does nothing where the supervisor runs the portable path: there is
// no child subreaper to become. Run still kills the command's process
// group when its supervisor dies without a report; a process that left
// the group then lives on (see the package documentation).
func Adopt() error { return nil }

func startSupervisor(start func() error, pid func() int) error { return start() }

func forgetSupervisor(pid int) {}

// sweep kills nothing: orphans of a dead supervisor go to init here.
func sweep(supervisor int, log *slog.Logger) int { return 0 }
