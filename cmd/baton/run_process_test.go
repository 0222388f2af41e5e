//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"

	"github.com/batonhq/baton/store"
)

// The real-process tests of 'baton run' as a supervisor. They use real
// time, a lease of 2s and a grace of 1s, and run in parallel.

// pgidRE finds the process group of a started command in baton's log.
var pgidRE = regexp.MustCompile(`msg="command started" pid=\d+ pgid=(\d+)`)

// commandGroup waits for the n-th (from 1) command started by a baton
// whose log is errb, and returns its process group.
func commandGroup(t *testing.T, errb *syncBuffer, n int) int {
	t.Helper()
	var pgid int
	if !testenv.WaitFor(10*time.Second, func() bool {
		m := pgidRE.FindAllStringSubmatch(errb.String(), -1)
		if len(m) < n {
			return false
		}
		pgid, _ = strconv.Atoi(m[n-1][1])
		return true
	}) {
		t.Fatalf("no command started; log:\n%s", errb.String())
	}
	return pgid
}

// groupAlive reports whether a process of group pgid is alive.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func killGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }

// The acceptance test of the supervisor: two singleton nodes on one SQLite
// file run sh -c 'sleep 300 & sleep 300'. The first baton dies (SIGKILL,
// or SIGHUP as from a closed terminal); within grace + 1s no process of
// its command's group is left, and the second node's command is the only
// one running. After SIGHUP the lease was released and the second node
// takes over at once.
func TestProcessRunNoOrphan(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Parallel() // its subtests are: each on its own SQLite file and processes
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			db := "sqlite:" + filepath.Join(t.TempDir(), "b.db")
			args := func(node string) []string {
				return []string{"run", "--store", db, "--node", node, "--lease", "2s", "--grace", "1s", "--clock-margin", "100ms",
					"orph", "--", "sh", "-c", "sleep 300 & sleep 300"}
			}
			a, _, errA := startBaton(t, args("A")...)
			groupA := commandGroup(t, errA, 1)
			t.Cleanup(func() { killGroup(groupA) })
			_, _, errB := startBaton(t, args("B")...)
			if !testenv.WaitFor(5*time.Second, func() bool { return strings.Contains(errB.String(), "waiting for leadership") }) {
				t.Fatalf("B does not wait:\n%s", errB.String())
			}
			if !groupAlive(groupA) {
				t.Fatalf("A's command is not running")
			}

			delay := testenv.MeasureDelay(t)
			a.Process.Signal(sig)
			killed := time.Now()
			waitErr := make(chan error, 1)
			go func() { waitErr <- a.Wait() }()
			if !testenv.WaitFor(2*time.Second, func() bool { return !groupAlive(groupA) }) {
				t.Fatalf("A's process group %d still alive 2s (grace + 1s) after %v; A's log:\n%s", groupA, sig, errA.String())
			}
			gone := time.Since(killed)
			groupB := commandGroup(t, errB, 1)
			t.Cleanup(func() { killGroup(groupB) })
			tookOver := time.Since(killed)
			if !groupAlive(groupB) || groupAlive(groupA) {
				t.Fatalf("after the takeover: A's group alive %v, B's %v", groupAlive(groupA), groupAlive(groupB))
			}
			t.Logf("%v: A's group gone after %v, B's command started after %v", sig, gone.Round(time.Millisecond), tookOver.Round(time.Millisecond))
			err := <-waitErr
			switch sig {
			case syscall.SIGHUP:
				if err != nil {
					t.Errorf("A after SIGHUP: %v, want exit 0; log:\n%s", err, errA.String())
				}
				// Released: B acquired a free record, not one taken over
				// after lease + 2e = 2.2s. The store's history says which;
				// the time only bounds it loosely: 2s and the scheduling
				// delay measured meanwhile.
				if bound := delay.Slack(2*time.Second, killed, time.Now()); tookOver > bound {
					t.Errorf("B took over %v after A's SIGHUP, over %v; want at once", tookOver, bound)
				}
				if kind := lastAcquisition(t, db, "orph"); kind != store.Acquired {
					t.Errorf("B's acquisition after A's SIGHUP is %q, want %q (A released the record)", kind, store.Acquired)
				}
				for _, want := range []string{"signal=SIGTERM pgid=" + strconv.Itoa(groupA), "leadership released"} {
					if !strings.Contains(errA.String(), want) {
						t.Errorf("A's log lacks %q:\n%s", want, errA.String())
					}
				}
			case syscall.SIGKILL:
				if tookOver < 2*time.Second {
					t.Errorf("B took over %v after A's SIGKILL, before lease + 2e", tookOver)
				}
			}
		})
	}
}

// exitCode runs a real baton with args and returns its exit code, stderr
// and how long it took.
func exitCode(t *testing.T, args ...string) (int, string, time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "BATON_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, errb.String(), took
	case errors.As(err, &ee):
		return ee.ExitCode(), errb.String(), took
	}
	t.Fatal(err)
	return 0, "", 0
}

// --once: the command's status; 75 at once or after --wait when another
// node holds the job, naming it; two started together run it once.
func TestProcessRunOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	testenv.ParallelUnlessLong(t)
	db := "sqlite:" + filepath.Join(t.TempDir(), "b.db")
	t.Run("status", func(t *testing.T) {
		for script, want := range map[string]int{"exit 3": 3, "exit 0": 0, "kill -TERM $$": 143} {
			if code, stderr, _ := exitCode(t, "run", "--once", "--store", db, "J", "--", "sh", "-c", script); code != want {
				t.Errorf("--once sh -c %q: exit %d, want %d; stderr:\n%s", script, code, want, stderr)
			}
		}
	})
	t.Run("stdin", func(t *testing.T) {
		// --once passes baton's standard input to COMMAND, as flock does.
		cmd := exec.Command(os.Args[0], "run", "--once", "--store", db, "S", "--", "sh", "-c", `read v; echo "[$v]"`)
		cmd.Env = append(os.Environ(), "BATON_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
		cmd.Stdin = strings.NewReader("x\n")
		out, err := cmd.Output()
		if err != nil || string(out) != "[x]\n" {
			t.Errorf("echo x | baton run --once: %q, %v; want [x]", out, err)
		}
	})
	t.Run("held", func(t *testing.T) {
		_, _, errb := startBaton(t, "run", "--store", db, "--node", "holder", "--lease", "2s", "H", "--", "sleep", "300")
		t.Cleanup(func() { killGroup(commandGroup(t, errb, 1)) })
		commandGroup(t, errb, 1)
		// What a --once costs here without any wait (start, open the
		// store, campaign, run true, resign, exit): on two loaded cores
		// it is over a second, so the bounds below are above it.
		if code, stderr, _ := exitCode(t, "run", "--once", "--store", db, "F", "--", "true"); code != exitOK {
			t.Fatalf("--once on a free name: exit %d; stderr:\n%s", code, stderr)
		}
		_, _, overhead := exitCode(t, "run", "--once", "--store", db, "F", "--", "true")
		code, stderr, took := exitCode(t, "run", "--once", "--wait", "0", "--store", db, "H", "--", "echo", "ran")
		line := "baton run: H: leadership not obtained within --wait 0s: held by holder (token 1)\n"
		if code != exitNotLeader || !strings.HasSuffix(stderr, line) || took > overhead+time.Second {
			t.Errorf("--wait 0: exit %d after %v (a --once without a wait: %v), want %d at once; stderr:\n%s", code, took, overhead, exitNotLeader, stderr)
		}
		code, stderr, took = exitCode(t, "run", "--once", "--wait", "2s", "--store", db, "H", "--", "echo", "ran")
		if code != exitNotLeader || !strings.Contains(stderr, "held by holder (token 1)") || took < 2*time.Second || took > 2*time.Second+overhead+1500*time.Millisecond {
			t.Errorf("--wait 2s: exit %d after %v (a --once without a wait: %v), want %d after about 2s; stderr:\n%s", code, took, overhead, exitNotLeader, stderr)
		}
		t.Logf("--wait 2s gave up after %v (a --once without a wait: %v)", took.Round(time.Millisecond), overhead.Round(time.Millisecond))
	})
	t.Run("together", func(t *testing.T) {
		// The winner's command holds the name until the loser has exited,
		// so that the two overlap however slowly each process starts on
		// a loaded machine: the loser must exit 75 while the winner's
		// command runs, and only then is the winner let go.
		marks, release := t.TempDir(), filepath.Join(t.TempDir(), "release")
		codes := make(chan int, 2)
		for i := range 2 {
			go func() {
				code, _, _ := exitCode(t, "run", "--once", "--wait", "0", "--store", db, "T", "--",
					"sh", "-c", "touch "+filepath.Join(marks, strconv.Itoa(i))+"; while [ ! -e "+release+" ]; do sleep 0.05; done")
				codes <- code
			}()
		}
		var first int
		select {
		case first = <-codes:
		case <-time.After(time.Minute):
			ran, _ := os.ReadDir(marks)
			t.Fatalf("two --once --wait 0 together: neither exited within a minute; the command ran %d times", len(ran))
		}
		if err := os.WriteFile(release, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		got := []int{first, <-codes}
		ran, _ := os.ReadDir(marks)
		if len(ran) != 1 || got[0] != exitNotLeader || got[1] != exitOK {
			t.Errorf("two --once --wait 0 together: exits %v (in order), the command ran %d times; want 75 while the other's command ran, then 0, and one run", got, len(ran))
		}
	})
}

// A scheduled run that hangs past --timeout is stopped and recorded
// failed, with the reason; --log-format json lines parse as JSON.
func TestRunTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	testenv.ParallelUnlessLong(t)
	delay := testenv.MeasureDelay(t)
	e, _, errb, ms := shared()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- e.run(ctx, []string{"run", "--store", "mem:", "--lease", "3s", "--grace", "500ms", "--every", "1s", "--timeout", "1s",
			"--log-format", "json", "hang", "--", "sleep", "300"})
	}()
	var failed []store.Run
	testenv.WaitFor(10*time.Second, func() bool {
		rs, _ := ms.Runs(context.Background(), "hang", "", 0)
		failed = failed[:0]
		for _, r := range rs {
			if r.State == store.Failed {
				failed = append(failed, r)
			}
		}
		return len(failed) > 0
	})
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if len(failed) == 0 || !strings.Contains(failed[0].Output, "timeout") || failed[0].ExitCode != 128+int(syscall.SIGTERM) {
		t.Fatalf("failed rows %+v; log:\n%s", failed, errb.String())
	}
	// Never before --timeout; after it by at most a second and the
	// scheduling delay measured meanwhile (a loaded CI run: 2.2 s).
	if d, bound := failed[0].Finished.Sub(failed[0].Started), delay.Slack(2*time.Second, failed[0].Started, failed[0].Finished); d < time.Second || d > bound {
		t.Errorf("the run lasted %v, want about --timeout 1s (at most %v)", d, bound)
	}
	for _, line := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil || v["msg"] == nil {
			t.Errorf("not a JSON log line: %q (%v)", line, err)
		}
	}
	if !strings.Contains(errb.String(), `"msg":"run timed out; recorded failed"`) {
		t.Errorf("log:\n%s", errb.String())
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := runBaton(t, args...)
		if code != exitOK || !regexp.MustCompile(`^baton \S+.* go1\.\d+`).MatchString(out) {
			t.Errorf("baton %s: exit %d, %q", args[0], code, out)
		}
	}
}

// lastAcquisition returns the kind of the newest acquisition or takeover
// in the history of name in the store at url.
func lastAcquisition(t *testing.T, url, name string) store.EventKind {
	t.Helper()
	st, err := openStore(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.History(t.Context(), name, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if k := evs[i].Kind; k == store.Acquired || k == store.TakenOver {
			return k
		}
	}
	return ""
}
