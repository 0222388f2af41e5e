//go:build windows

package pgtest

import (
	"io/fs"
	"os/exec"
)

// credential is an OS user to run the server as: never set on Windows,
// where os.Geteuid is -1.
type credential struct{ uid, gid uint32 }

// runAs runs cmd as this process's user.
func runAs(cmd *exec.Cmd, cred *credential) {}

// ownedByMe reports false: on Windows no cached cluster is trusted (its
// owner is not checked), so every server runs initdb.
func ownedByMe(fs.FileInfo) bool { return false }
