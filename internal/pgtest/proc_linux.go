package pgtest

import (
	"os/exec"
	"syscall"
)

// quitWithParent gives cmd (made by runAs) a parent-death SIGQUIT: if the
// test binary dies, the postmaster shuts down at once instead of running
// on.
func quitWithParent(cmd *exec.Cmd) { cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT }
