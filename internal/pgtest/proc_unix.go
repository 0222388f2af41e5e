//go:build unix

package pgtest

import (
	"os/exec"
	"syscall"
)

// credential is an OS user and group to run the server as.
type credential struct{ uid, gid uint32 }

// runAs makes cmd run as cred, if not nil.
func runAs(cmd *exec.Cmd, cred *credential) {
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if cred != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: cred.uid, Gid: cred.gid}
	}
}
