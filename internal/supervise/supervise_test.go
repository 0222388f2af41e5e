//go:build unix

package supervise

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/batonhq/baton/internal/testenv"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary act as the supervisor (Run re-executes it
// with Arg), and as a parent that runs a command and is then killed.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		os.Exit(MainRecording(os.Args[2:], testRecorder))
	}
	// The supervisors that the tests start are this binary: built with
	// -race, each would sleep a second at exit.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	if os.Getenv("SUPERVISE_TEST_PARENT") == "lease" {
		// Print the command's process group, renewing a lease of 1s every
		// 100ms, until stopped or killed.
		l := newTestLease(time.Now().Add(time.Second))
		go l.renewEvery(context.Background(), 100*time.Millisecond, time.Second)
		_, err := Run(context.Background(), Config{
			Argv: []string{"sh", "-c", "echo $$; sleep 300 & sleep 300"}, Env: os.Environ(),
			Stdout: os.Stdout, Grace: 300 * time.Millisecond, Lease: l,
		})
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if m := os.Getenv("SUPERVISE_TEST_PARENT"); m == "adopt" || m == "no-adopt" {
		// baton run's process, or one that did not call Adopt: run a
		// command that leaves a double-forked, setsid grandchild, which
		// prints its process id, until the supervisor dies.
		if m == "adopt" {
			if err := Adopt(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
		_, err := Run(context.Background(), Config{
			Argv: []string{"sh", "-c", `(setsid sh -c 'echo $$; exec sleep 300' &); exec sleep 300`}, Env: os.Environ(),
			Stdout: os.Stdout, Grace: time.Second,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		})
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if os.Getenv("SUPERVISE_TEST_PARENT") == "1" {
		// Print the command's process group, then wait to be killed.
		_, err := Run(context.Background(), Config{
			Argv: []string{"sh", "-c", "echo $$; sleep 300 & sleep 300"}, Env: os.Environ(),
			Stdout: os.Stdout, Grace: time.Second,
		})
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer = testenv.Buffer

func TestStatus(t *testing.T) {
	tests := []struct {
		script string
		want   Status
		code   int
	}{
		{"exit 0", Status{}, 0},
		{"exit 3", Status{Code: 3}, 3},
		{"kill -KILL $$", Status{Signal: syscall.SIGKILL}, 137},
		{"kill -TERM $$", Status{Signal: syscall.SIGTERM}, 143},
		// A background child left behind is stopped; the status is the
		// first process's.
		{"sleep 300 & exit 4", Status{Code: 4}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			var out syncBuffer
			got, err := Run(context.Background(), Config{Argv: []string{"sh", "-c", tt.script}, Env: os.Environ(), Grace: time.Second,
				Logger: slog.New(slog.NewTextHandler(&out, nil))})
			if err != nil || got != tt.want || got.ExitCode() != tt.code {
				t.Fatalf("Run: %v (exit code %d), %v; want %v (exit code %d)\nlog:\n%s", got, got.ExitCode(), err, tt.want, tt.code, out.String())
			}
		})
	}
}

func TestCommandNotFound(t *testing.T) {
	_, err := Run(context.Background(), Config{Argv: []string{"no-such-command-supervise-test"}, Env: os.Environ(), Grace: time.Second})
	if err == nil || !strings.Contains(err.Error(), "no-such-command-supervise-test") || errors.Is(err, ErrStopped) {
		t.Fatalf("err %v", err)
	}
}

// firstLine waits for the first line written to b and returns it.
func firstLine(t *testing.T, b *syncBuffer) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s, _, ok := strings.Cut(b.String(), "\n"); ok {
			return s
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no output")
	return ""
}

// waitGone waits up to d for the process group to be empty.
func waitGone(t *testing.T, pgid int, d time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	for groupAlive(pgid) {
		if time.Since(began) > d {
			syscall.Kill(-pgid, syscall.SIGKILL)
			t.Fatalf("process group %d still alive %v later", pgid, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(began)
}

// Ending the context stops the whole group: the shell and its background
// child, which ignore nothing and die at the SIGTERM.
func TestStopByContext(t *testing.T) {
	var out, logs syncBuffer
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("leadership lost")
	done := make(chan error, 1)
	var st Status
	go func() {
		var err error
		st, err = Run(ctx, Config{Argv: []string{"sh", "-c", "echo $$; sleep 300 & sleep 300"}, Env: os.Environ(),
			Stdout: &out, Grace: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		done <- err
	}()
	pgid, err := strconv.Atoi(firstLine(t, &out))
	if err != nil {
		t.Fatal(err)
	}
	cancel(cause)
	err = <-done
	if !errors.Is(err, ErrStopped) || !errors.Is(err, cause) || st.Signal != syscall.SIGTERM {
		t.Fatalf("Run: %v, %v", st, err)
	}
	if groupAlive(pgid) {
		t.Fatalf("process group %d alive after Run returned", pgid)
	}
	if !strings.Contains(logs.String(), "signal=SIGTERM pgid="+strconv.Itoa(pgid)) || strings.Contains(logs.String(), "SIGKILL") {
		t.Errorf("log:\n%s", logs.String())
	}
}

// A command that ignores SIGTERM gets SIGKILL after the grace period.
func TestStopEscalates(t *testing.T) {
	var out, logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{Argv: []string{"sh", "-c", "trap '' TERM; echo $$; while :; do sleep 0.05; done"}, Env: os.Environ(),
			Stdout: &out, Grace: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		done <- err
	}()
	pgid, _ := strconv.Atoi(firstLine(t, &out))
	cancel()
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Fatal(err)
	}
	if groupAlive(pgid) {
		t.Fatalf("process group %d alive", pgid)
	}
	if !strings.Contains(logs.String(), "signal=SIGKILL") {
		t.Errorf("log:\n%s", logs.String())
	}
}

// The program that ran Run is killed with SIGKILL: the supervisor stops
// the whole group within the grace period (1s) and a second.
func TestParentKilled(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SUPERVISE_TEST_PARENT=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	pgid, _ := strconv.Atoi(strings.TrimSpace(line))
	if !groupAlive(pgid) {
		t.Fatalf("group %d not running", pgid)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	took := waitGone(t, pgid, 2*time.Second)
	t.Logf("process group gone %v after the parent's SIGKILL", took)
}

// A process that left the command's group (setsid, as a daemon does) is
// an orphan of the supervisor once its parent is gone, and is stopped too:
// when the command is stopped, and when its first process exits by itself.
// On the portable path (no subreaper) it is out of reach and lives on: the
// test checks that the documentation of that limit still holds.
func TestEscapedProcess(t *testing.T) {
	for _, tt := range []struct {
		name, tail string
		stop       bool
	}{{"stopped", "sleep 300", true}, {"exited", "sleep 0.2", false}} {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := Run(ctx, Config{Argv: []string{"sh", "-c", `setsid sh -c 'echo $$; exec sleep 300' & ` + tt.tail}, Env: os.Environ(),
					Stdout: &out, Grace: 2 * time.Second})
				done <- err
			}()
			escaped, err := strconv.Atoi(firstLine(t, &out))
			if err != nil {
				t.Fatal(err)
			}
			if pgid, _ := syscall.Getpgid(escaped); pgid != escaped {
				t.Fatalf("process %d did not leave the group (pgid %d)", escaped, pgid)
			}
			if tt.stop {
				cancel()
			}
			err = <-done
			alive := syscall.Kill(escaped, 0) == nil
			if alive {
				syscall.Kill(escaped, syscall.SIGKILL)
			}
			switch {
			case subreaper && alive:
				t.Fatalf("process %d that left the group survives (Run: %v)", escaped, err)
			case !subreaper && !alive:
				// The portable path cannot see it: the documented limit.
				t.Fatalf("process %d that left the group is gone without a subreaper: update the package's documentation of the portable path", escaped)
			case !subreaper:
				t.Logf("portable path: process %d that left the group lives on, as documented", escaped)
			}
		})
	}
}

// kill -9 of the supervisor alone: the command's process group is gone
// once Run returns, on both paths. Linux kills the first process by its
// parent-death signal; everywhere, Run sees the supervisor die without a
// report and sends SIGKILL to the group (on the portable path the only
// thing that does: remove it from Run and this test fails there).
func TestSupervisorKilledGroup(t *testing.T) {
	testenv.ParallelUnlessLong(t) // mostly waits on its processes
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), Config{Argv: []string{"sh", "-c", "echo $$; sleep 300 & sleep 300"}, Env: os.Environ(),
			Stdout: &out, Grace: time.Second})
		done <- err
	}()
	pgid, err := strconv.Atoi(firstLine(t, &out))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	supervisor := ppid(pgid)
	if supervisor <= 1 {
		t.Fatalf("no supervisor for process %d", pgid)
	}
	syscall.Kill(supervisor, syscall.SIGKILL)
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return 30s after its supervisor's SIGKILL")
	}
	if err == nil {
		t.Error("Run returned no error for a supervisor that died without a report")
	}
	// Run returned: the group must be gone by now, or be going (SIGKILL
	// sent, the kernel reaping). Five seconds are slack for the killed
	// processes to be scheduled and exit on a loaded machine (one second
	// was once too little at load 11-12); a group nobody killed lives 300.
	took := waitGone(t, pgid, 5*time.Second)
	t.Logf("subreaper=%v: group gone %v after Run returned (%v)", subreaper, took, err)
}

// parentOf returns pid's parent (from /proc: the tests run on Linux), or
// 0 once it is gone.
func ppid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}
