//go:build !linux

package pgtest

import "os/exec"

// quitWithParent does nothing: only Linux has a parent-death signal. A
// test binary killed leaves its server running, in its temporary
// directory.
func quitWithParent(cmd *exec.Cmd) {}
