//go:build !batonportable

package supervise

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
)

// escapee starts this test binary as a parent (SUPERVISE_TEST_PARENT
// mode) running a command that leaves a double-forked, setsid grandchild,
// and returns the parent, the grandchild and its supervisor once the
// grandchild has been re-parented to the supervisor (its subreaper).
func escapee(t *testing.T, mode string) (parent *exec.Cmd, stderr *syncBuffer, escaped, supervisor int) {
	t.Helper()
	parent = exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), "SUPERVISE_TEST_PARENT="+mode)
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr = &syncBuffer{}
	parent.Stderr = stderr
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { parent.Process.Kill(); parent.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no pid from the command: %v; parent's log:\n%s", err, stderr.String())
	}
	if escaped, err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(escaped, syscall.SIGKILL) })
	if pgid, _ := syscall.Getpgid(escaped); pgid != escaped {
		t.Fatalf("process %d did not leave the group (pgid %d)", escaped, pgid)
	}
	// The subshell that started it exits at once: then the supervisor,
	// a subreaper, is its parent.
	if !testenv.WaitFor(10*time.Second, func() bool {
		supervisor = ppid(escaped)
		return supervisor > 0 && ppid(supervisor) == parent.Process.Pid
	}) {
		t.Fatalf("process %d not re-parented to the supervisor (its parent: %d)", escaped, ppid(escaped))
	}
	return parent, stderr, escaped, supervisor
}

// kill -9 of the supervisor: a command's process that left its group and
// was double-forked (a daemon) is killed by the supervisor's parent that
// called Adopt, before Run returns; without Adopt it lives on under init,
// which is what this test sees fail when Adopt or the sweep is removed.
func TestSupervisorKilled(t *testing.T) {
	for _, mode := range []string{"adopt", "no-adopt"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			parent, stderr, escaped, supervisor := escapee(t, mode)
			syscall.Kill(supervisor, syscall.SIGKILL)
			// Run returns after its sweep: the outcome is decided when
			// the parent exits, no race to wait for.
			parent.Wait()
			alive := running(escaped)
			switch {
			case mode == "adopt" && alive:
				t.Fatalf("process %d of the command survives its supervisor's SIGKILL (parent %d); parent's log:\n%s", escaped, ppid(escaped), stderr.String())
			case mode == "adopt" && !strings.Contains(stderr.String(), "orphans of the command's dead supervisor"):
				t.Errorf("no log line for the orphans killed:\n%s", stderr.String())
			case mode == "no-adopt" && !alive:
				t.Fatalf("negative control: process %d is gone without Adopt; the test shows nothing", escaped)
			}
		})
	}
}

// The limit Adopt documents: the supervisor and its parent killed at once
// (the supervisor stopped first, so that it cannot act on its parent's
// death) leave the escaped process running, re-parented above them. Only
// a fence refuses its late work.
func TestSupervisorAndParentKilledLimit(t *testing.T) {
	t.Parallel()
	parent, _, escaped, supervisor := escapee(t, "adopt")
	syscall.Kill(supervisor, syscall.SIGSTOP)
	parent.Process.Kill()
	parent.Wait()
	syscall.Kill(supervisor, syscall.SIGKILL)
	if !testenv.WaitFor(10*time.Second, func() bool { return !running(supervisor) }) {
		t.Fatalf("supervisor %d still running after SIGKILL", supervisor)
	}
	if !running(escaped) {
		t.Fatalf("process %d is gone: the documented limit no longer holds; update Adopt's and the package's docs", escaped)
	}
	t.Logf("process %d lives on, its parent now %d: the documented limit", escaped, ppid(escaped))
}
