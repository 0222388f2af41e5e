package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/supervise"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store/memstore"
)

// TestMain lets the test binary act as baton itself: with BATON_TEST_MAIN
// set it runs main, so the tests below start real baton processes.
// Otherwise it runs the tests, and stops the PostgreSQL server that
// pgtest.Start may have started for them.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == supervise.Arg {
		if os.Getenv(noRecordVar) == "1" {
			// The negative control of the supervisor's record: a
			// supervisor that cannot record, as before it could.
			os.Exit(supervise.Main(os.Args[2:]))
		}
		if os.Getenv(recordAsBeforeVar) == "1" {
			os.Exit(supervise.MainRecording(os.Args[2:], recordAsBefore))
		}
		os.Exit(supervise.MainRecording(os.Args[2:], recordOutcome))
	}
	if len(os.Args) > 1 && os.Args[1] == fencedWriteArg {
		os.Exit(fencedWrite(os.Args[2:]))
	}
	// The supervisors that the tests start are this binary: built with
	// -race, each would sleep a second at exit.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	if os.Getenv("BATON_TEST_MAIN") == "1" {
		main()
		return
	}
	// The parallel tests (real processes, browsers, benchmarks of seconds)
	// mostly wait: eight at a time in a developer's run (the package alone
	// used 71 s of CPU in 172 s, four at a time), four under the race
	// detector; in CI, under the race detector, one per CPU.
	if !testenv.Long() {
		n := 8
		if raceEnabled {
			n = 4
		}
		testenv.DefaultParallel(n)
	}
	pgtest.Main(m)
}

// startBaton starts a real baton process with args.
func startBaton(t *testing.T, args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	t.Helper()
	return startBatonEnv(t, nil, args...)
}

// startBatonEnv is startBaton with env (NAME=VALUE) added to the
// process's environment, and so to its supervisors': unlike t.Setenv, it
// lets the test run in parallel.
func startBatonEnv(t *testing.T, env []string, args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	// GORACE: a race-enabled binary otherwise sleeps a second at exit.
	cmd.Env = append(append(os.Environ(), "BATON_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0"), env...)
	out, errb := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, out, errb
}

// A real baton process runs a scheduled command and, on SIGTERM, stops and
// exits 0 after releasing the lease.
func TestProcessRunScheduled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	testenv.ParallelUnlessLong(t) // its own store, files and processes
	cmd, out, errb := startBaton(t, "run", "--store", "mem:", "--lease", "3s", "--grace", "1s", "--every", "1s",
		"billing", "--", "sh", "-c", `echo "period=$BATON_PERIOD token=$BATON_TOKEN"`)
	testenv.WaitFor(20*time.Second, func() bool { return strings.Count(errb.String(), "period finished: done") >= 2 })
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("baton: %v\nstderr:\n%s", err, errb.String())
	}
	if n := strings.Count(out.String(), "token=1\n"); n < 2 {
		t.Errorf("%d runs:\n%s", n, out.String())
	}
	if !strings.Contains(errb.String(), "leadership released") {
		t.Errorf("stderr:\n%s", errb.String())
	}
}

// SIGINT to baton stops a singleton command with SIGTERM to its process
// group (a grandchild too) and exits 0.
func TestProcessSingletonStops(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	delay := testenv.MeasureDelay(t)
	cmd, out, errb := startBaton(t, "run", "--store", "mem:", "--lease", "3s", "--grace", "1s", "svc", "--",
		"sh", "-c", `sh -c 'trap "echo grandchild got TERM; exit 0" TERM; echo grandchild up; while :; do sleep 0.05; done' & trap 'echo got TERM; wait; exit 0' TERM; wait`)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "grandchild up") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	began := time.Now()
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("baton: %v\nstderr:\n%s", err, errb.String())
	}
	// SIGTERM was enough: baton logs every signal it sends the group.
	if strings.Contains(errb.String(), "signal=SIGKILL") {
		t.Errorf("the group needed SIGKILL:\n%s", errb.String())
	}
	// And soon: 900ms, plus the scheduling delay measured meanwhile.
	if took, bound := time.Since(began), delay.Slack(900*time.Millisecond, began, time.Now()); took > bound {
		t.Errorf("stopping took %v, over %v", took, bound)
	}
	for _, want := range []string{"got TERM", "grandchild got TERM"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
}

// A bad invocation of the real binary: one line, exit 2.
func TestProcessBadInput(t *testing.T) {
	cmd := exec.Command(os.Args[0], "run", "--store", "mem:", "--cron", "nope", "j", "--", "true")
	cmd.Env = append(os.Environ(), "BATON_TEST_MAIN=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage || strings.Count(errb.String(), "\n") != 1 {
		t.Fatalf("err %v stderr %q", err, errb.String())
	}
}

// stopBefore ends the command's context grace before the term's deadline
// when renewals fail, before the term itself ends.
func TestStopBeforeDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		e, err := baton.New(ms.Client("a"), "svc", baton.WithNode("a"), baton.WithLease(3*time.Second), baton.WithRenew(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close(context.Background())
		term, err := e.Campaign(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := stopBefore(context.Background(), term, 500*time.Millisecond)
		defer cancel(nil)
		time.Sleep(10 * time.Second) // renewals keep it going
		if ctx.Err() != nil {
			t.Fatalf("stopped while renewals succeed: %v", context.Cause(ctx))
		}
		ms.SetUnreachable("a", true)
		<-ctx.Done()
		if left := time.Until(term.Deadline()); left != 500*time.Millisecond || term.Err() != nil {
			t.Fatalf("stopped %v before the deadline (term err %v), want 500ms", left, term.Err())
		}
		if context.Cause(ctx) != errLeaseEnding {
			t.Fatalf("cause %v", context.Cause(ctx))
		}
		<-term.Done()
	})
}

// noRecordVar, set to 1, makes this test binary's supervisors unable to
// record an outcome (supervise.Main, not MainRecording): the negative
// control of TestProcessRunFrozenAfterExit.
const noRecordVar = "BATON_TEST_NO_RECORD"

// recordAsBeforeVar, set to 1, makes this test binary's supervisors
// record as they did before an outcome seen inside the term could be
// recorded after it: fenced by the token, and given up at the lease
// deadline (at least a second from the call): the negative control of
// TestProcessRunFrozenInsideWrite.
const recordAsBeforeVar = "BATON_TEST_RECORD_AS_BEFORE"

// recordAsBefore is recordOutcome as it was before scheduler.CompleteSeen:
// its context ends at the lease deadline (RecordPatience before the end of
// the one an exit seen inside the lease gets), at least a second away.
func recordAsBefore(ctx context.Context, data []byte, st supervise.Status, _ bool, tail []byte) error {
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, later(dl.Add(-supervise.RecordPatience), time.Now().Add(time.Second)))
		defer cancel()
	}
	return recordOutcome(ctx, data, st, false, tail)
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
