//go:build !linux

package netns

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
)

// linuxOnly says that network namespaces need Linux: Available returns
// it, so New fails before anything below is called.
func linuxOnly() error {
	return fmt.Errorf("network namespaces need Linux (this is %s/%s)", runtime.GOOS, runtime.GOARCH)
}

func dieWithParent(cmd *exec.Cmd) {}

func contPid(pid int) {}

func killPid(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

// pidAlive says yes: without namespaces there is nothing stale to sweep.
func pidAlive(pid int) bool { return true }
