//go:build unix

package supervise

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
)

// testLease is a lease renewed by the test, as a baton.Term is by its
// elector.
type testLease struct {
	mu       sync.Mutex
	deadline time.Time
	renewed  chan struct{}
	done     chan struct{}
}

func newTestLease(d time.Time) *testLease {
	return &testLease{deadline: d, renewed: make(chan struct{}), done: make(chan struct{})}
}

func (l *testLease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

func (l *testLease) Renewed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewed
}

func (l *testLease) Done() <-chan struct{} { return l.done }

func (l *testLease) set(d time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deadline = d
	close(l.renewed)
	l.renewed = make(chan struct{})
}

// renewEvery renews the lease for lease from now, every interval, until
// ctx ends.
func (l *testLease) renewEvery(ctx context.Context, every, lease time.Duration) {
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			l.set(time.Now().Add(lease))
		}
	}
}

// The deadlines forwarded after every renewal keep the command running
// for longer than a lease; it exits by itself, and nothing is stopped.
func TestLeaseRenewalsKeepCommand(t *testing.T) {
	testenv.ParallelUnlessLong(t) // mostly waits on its lease
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := newTestLease(time.Now().Add(time.Second))
	go l.renewEvery(ctx, 100*time.Millisecond, time.Second)
	st, err := Run(context.Background(), Config{Argv: []string{"sh", "-c", "sleep 2.5; exit 7"}, Env: os.Environ(),
		Grace: 300 * time.Millisecond, Lease: l, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil || st.Code != 7 {
		t.Fatalf("Run: %v, %v; want exit 7, nil\nlog:\n%s", st, err, logs.String())
	}
	if strings.Contains(logs.String(), "signal=") {
		t.Errorf("a signal was sent:\n%s", logs.String())
	}
}

// Without a renewal the supervisor stops the group on its own: SIGTERM
// grace before the deadline, SIGKILL at it, and not before, to a command
// that ignores SIGTERM; Run says the lease deadline did it.
func TestLeaseDeadlineStops(t *testing.T) {
	testenv.ParallelUnlessLong(t) // mostly waits on its lease
	var out, logs syncBuffer
	const grace = 300 * time.Millisecond
	deadline := time.Now().Add(time.Second)
	// Without a supervisor that holds the deadline, the context ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := Run(ctx, Config{Argv: []string{"sh", "-c", "trap '' TERM; echo $$; sleep 300 & while :; do sleep 0.05; done"}, Env: os.Environ(),
		Stdout: &out, Grace: grace, Lease: newTestLease(deadline), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	returned := time.Now()
	if !errors.Is(err, ErrStopped) || !errors.Is(err, ErrDeadline) || st.Signal != syscall.SIGKILL {
		t.Fatalf("Run: %v, %v; want killed, ErrStopped and ErrDeadline\nlog:\n%s", st, err, logs.String())
	}
	pgid, _ := strconv.Atoi(strings.TrimSpace(out.String()))
	if pgid == 0 || groupAlive(pgid) {
		t.Fatalf("process group %q alive after Run returned", out.String())
	}
	// Only SIGKILL ends it, and that comes at the deadline: not before,
	// and within a second after on a loaded machine.
	if returned.Before(deadline) || returned.After(deadline.Add(time.Second)) {
		t.Errorf("Run returned %v after the deadline; want within [0, 1s]", returned.Sub(deadline))
	}
	for _, want := range []string{"signal=SIGTERM", "signal=SIGKILL", `why="the lease could expire within the grace period`, `why="the lease deadline passed`, `msg="the command's process group is gone"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	t.Logf("Run returned %v after the deadline", returned.Sub(deadline).Round(time.Millisecond))
}

// A command is never started within grace of its deadline.
func TestLeaseExpiredNotStarted(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "ran")
	var logs syncBuffer
	st, err := Run(context.Background(), Config{Argv: []string{"touch", mark}, Env: os.Environ(),
		Grace: time.Second, Lease: newTestLease(time.Now().Add(500 * time.Millisecond)), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if !errors.Is(err, ErrStopped) || !errors.Is(err, ErrDeadline) || !errors.Is(err, ErrNotStarted) || st != (Status{}) {
		t.Fatalf("Run: %v, %v; want ErrStopped, ErrDeadline and ErrNotStarted", st, err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the command ran")
	}
	if !strings.Contains(logs.String(), "command not started: its lease deadline is within the grace period") {
		t.Errorf("log:\n%s", logs.String())
	}
}

// The program that runs Run renews a lease of 1s every 100ms, and is
// stopped (SIGSTOP): the supervisor, getting no renewal, stops the group
// by the deadline, whatever its parent, alive but frozen, does not do.
func TestParentStopped(t *testing.T) {
	testenv.ParallelUnlessLong(t) // mostly waits on its lease
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SUPERVISE_TEST_PARENT=lease")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pgid, _ := strconv.Atoi(strings.TrimSpace(line))
	// Longer than a lease: the renewals reach the supervisor.
	time.Sleep(2 * time.Second)
	if !groupAlive(pgid) {
		t.Fatalf("group %d stopped while its lease was renewed", pgid)
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	took := waitGone(t, pgid, 3*time.Second)
	// The last renewal came at most 100ms (and the scheduling of a
	// loaded machine) before the stop: SIGTERM at deadline - grace.
	if took < 400*time.Millisecond {
		t.Errorf("group gone %v after its parent stopped; before deadline - grace", took)
	}
	t.Logf("group gone %v after its parent was stopped (lease 1s, grace 300ms, renewed every 100ms)", took.Round(time.Millisecond))
}

// The supervisor, holding the deadline, is not stopped by job-control
// signals; the command still gets their default action, even when the
// program running Run ignores them (as baton run does SIGTTIN and
// SIGTTOU).
func TestSupervisorIgnoresJobControl(t *testing.T) {
	signal.Ignore(syscall.SIGTTIN, syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTIN, syscall.SIGTTOU)
	var out, logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{Argv: []string{"sh", "-c", "echo $$ $PPID; exec sleep 300"}, Env: os.Environ(),
			Stdout: &out, Grace: time.Second, Lease: newTestLease(time.Now().Add(time.Hour)), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		done <- err
	}()
	var cmdPid, sup int
	fmt.Sscan(firstLine(t, &out), &cmdPid, &sup)
	for _, sig := range []syscall.Signal{syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU} {
		syscall.Kill(sup, sig)
	}
	if !testenv.WaitFor(5*time.Second, func() bool { return strings.Count(logs.String(), "ignored a job-control signal") == 3 }) {
		t.Fatalf("log:\n%s", logs.String())
	}
	if s := procState(sup); s != "S" && s != "R" {
		t.Fatalf("supervisor %d in state %q after job-control signals", sup, s)
	}
	// The command's own dispositions: SIGTSTP (20), SIGTTIN (21) and
	// SIGTTOU (22) not ignored.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmdPid))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
			mask, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if mask&(7<<19) != 0 {
				t.Errorf("command ignores job-control signals: SigIgn %x", mask)
			}
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Fatalf("Run: %v", err)
	}
}

// procState returns the state letter of process pid, "" if it is gone.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(b), ')')
	if f := strings.Fields(string(b[i+1:])); len(f) > 0 {
		return f[0]
	}
	return ""
}

// A supervisor started without a deadline argument (as by a baton of an
// older version) refuses to start the command, and says so.
func TestSupervisorUsage(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "ran")
	ctlR, ctlW, _ := os.Pipe()
	evR, evW, _ := os.Pipe()
	defer ctlW.Close()
	cmd := exec.Command(os.Args[0], Arg, "1s", "--", "touch", mark)
	cmd.ExtraFiles = []*os.File{ctlR, evW}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctlR.Close()
	evW.Close()
	report, _ := io.ReadAll(evR)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(report), "restart baton if its binary was replaced") {
		t.Fatalf("supervisor: %v, report %q", err, report)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the command ran")
	}
}

// A supervisor that starts late, its first deadline within grace by then,
// takes the renewals baton sent meanwhile: it starts the command on the
// newest deadline, and only without one reports the command not started.
func TestLateSupervisorTakesRenewals(t *testing.T) {
	for _, renewed := range []bool{false, true} {
		t.Run(fmt.Sprintf("renewed=%v", renewed), func(t *testing.T) {
			ctlR, ctlW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer ctlW.Close()
			evR, evW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer evR.Close()
			now := monoNow()
			if renewed {
				io.WriteString(ctlW, formatDeadline(now+int64(time.Hour)))
				io.WriteString(ctlW, formatDeadline(now+int64(2*time.Hour)))
			}
			cmd := exec.Command(os.Args[0], Arg, "1s", formatFirst(now+int64(100*time.Millisecond)), "--", "sh", "-c", "exit 7")
			cmd.ExtraFiles = []*os.File{ctlR, evW}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ctlR.Close()
			evW.Close()
			var kinds []string
			sc := bufio.NewScanner(evR)
			for sc.Scan() {
				kinds = append(kinds, sc.Text())
			}
			cmd.Wait()
			got := strings.Join(kinds, "; ")
			switch {
			case renewed && (!strings.HasPrefix(got, "pid ") || !strings.HasSuffix(got, "exit 7 0")):
				t.Errorf("events %q; want the command started and its exit", got)
			case !renewed && !strings.HasPrefix(got, "expired "):
				t.Errorf("events %q; want expired", got)
			}
		})
	}
}
