package netns

import (
	"os/exec"
	"syscall"
)

// linuxOnly returns nil: this is Linux.
func linuxOnly() error { return nil }

// dieWithParent gives cmd a parent-death SIGKILL.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// contPid resumes process pid, should it be stopped.
func contPid(pid int) { syscall.Kill(pid, syscall.SIGCONT) }

// killPid sends SIGKILL to process pid.
func killPid(pid int) { syscall.Kill(pid, syscall.SIGKILL) }

// pidAlive reports whether process pid exists.
func pidAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }
