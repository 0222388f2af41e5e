//go:build unix

package pgtest

import (
	"io/fs"
	"os"
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

// ownedByMe reports whether fi is owned by this process's effective user.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
