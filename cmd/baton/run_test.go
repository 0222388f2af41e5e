package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer = testenv.Buffer

// shared returns an env whose every store URL opens the same in-memory
// store, and that store.
func shared() (*env, *syncBuffer, *syncBuffer, *memstore.Store) {
	ms := memstore.New()
	out, errb := &syncBuffer{}, &syncBuffer{}
	e := &env{stdout: out, stderr: errb, open: func(ctx context.Context, url string) (store.Store, error) {
		if _, err := openStore(ctx, url); err != nil {
			return nil, err
		}
		return ms.Client(""), nil // a client: Close leaves the store open
	}}
	return e, out, errb, ms
}

// untouched fails if anything was written to ms for job.
func untouched(t *testing.T, ms *memstore.Store, job string) {
	t.Helper()
	ctx := context.Background()
	if _, err := ms.Get(ctx, job); err == nil {
		t.Errorf("an election record for %s was written", job)
	}
	if rs, _ := ms.Runs(ctx, job, "", 0); len(rs) != 0 {
		t.Errorf("ledger rows were written: %+v", rs)
	}
}

func TestRunBadInput(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		wants []string
	}{
		{"unparsable cron", []string{"--cron", "61 * * * *", "j", "--", "true"}, []string{"--cron", "61"}},
		{"cron @every", []string{"--cron", "@every 1h", "j", "--", "true"}, []string{"@every"}},
		{"cron matching no date", []string{"--cron", "0 0 30 2 *", "j", "--", "true"}, []string{"--cron", "matches no date within five years"}},
		{"duration without a unit", []string{"--once", "--wait", "5", "j", "--", "true"}, []string{"-wait", `"5" needs a unit, e.g. 5s`}},
		{"lease without a unit", []string{"--lease", "15", "j", "--", "true"}, []string{"-lease", `"15" needs a unit, e.g. 15s`}},
		{"empty store", []string{"--store", "", "j", "--", "true"}, []string{"-store", "must not be empty"}},
		{"empty node", []string{"--node", "", "j", "--", "true"}, []string{"--node", "must not be empty"}},
		{"unparsable duration", []string{"--every", "10q", "j", "--", "true"}, []string{"-every", "10q"}},
		{"interval below a second", []string{"--every", "500ms", "j", "--", "true"}, []string{"--every", "whole number of seconds"}},
		{"offset not below interval", []string{"--every", "10s", "--offset", "10s", "j", "--", "true"}, []string{"offset"}},
		{"offset without every", []string{"--offset", "1s", "j", "--", "true"}, []string{"--offset needs --every"}},
		{"unknown time zone", []string{"--cron", "0 2 * * *", "--tz", "Mars/Olympus", "j", "--", "true"}, []string{"--tz", "Mars/Olympus"}},
		{"tz without cron", []string{"--tz", "UTC", "j", "--", "true"}, []string{"--tz needs --cron"}},
		{"every and cron", []string{"--every", "1m", "--cron", "* * * * *", "j", "--", "true"}, []string{"exclude"}},
		{"bad catch-up", []string{"--every", "1m", "--catch-up", "some", "j", "--", "true"}, []string{"--catch-up", "all, latest or none"}},
		{"catch-up without schedule", []string{"--catch-up", "latest", "j", "--", "true"}, []string{"need a schedule"}},
		{"negative window", []string{"--every", "1m", "--catch-up-window", "-1s", "j", "--", "true"}, []string{"--catch-up-window"}},
		{"missing job", []string{"--every", "1m"}, []string{"missing JOB"}},
		{"missing --", []string{"--every", "1m", "j", "true"}, []string{"missing COMMAND", "--"}},
		{"nothing after --", []string{"--every", "1m", "j", "--"}, []string{"missing COMMAND"}},
		{"flag after job", []string{"j", "--every", "1m", "--", "true"}, []string{"flags go before JOB"}},
		{"command not found", []string{"--every", "1m", "j", "--", "no-such-command-baton-test"}, []string{"no-such-command-baton-test", "not found"}},
		{"step-down below the poll", []string{"--every", "1m", "--clock-step-down", "10ms", "j", "--", "true"}, []string{"--clock-step-down 10ms", "at least the poll"}},
		{"step-down without a schedule", []string{"--clock-step-down", "1m", "j", "--", "true"}, []string{"--clock-step-down needs a schedule"}},
		{"step-down without the guard", []string{"--every", "1m", "--clock-tolerance", "0", "--clock-step-down", "1m", "j", "--", "true"}, []string{"--clock-step-down needs the clock guard"}},
		{"grace not below lease minus renew", []string{"--lease", "15s", "--grace", "10s", "j", "--", "true"}, []string{"--grace", "lease minus the renew interval", "15s - 5s = 10s"}},
		{"renew not below lease", []string{"--lease", "3s", "--renew", "3s", "j", "--", "true"}, []string{"--renew"}},
		{"bad lease", []string{"--lease", "0s", "j", "--", "true"}, []string{"--lease"}},
		{"once with a schedule", []string{"--once", "--every", "1m", "j", "--", "true"}, []string{"--once excludes"}},
		{"wait without once", []string{"--wait", "1s", "j", "--", "true"}, []string{"--wait needs --once"}},
		{"negative wait", []string{"--once", "--wait", "-1s", "j", "--", "true"}, []string{"--wait", "-1s"}},
		{"bad restart", []string{"--restart", "sometimes", "j", "--", "true"}, []string{"--restart", "always, on-failure or never"}},
		{"restart with a schedule", []string{"--restart", "never", "--every", "1m", "j", "--", "true"}, []string{"--restart is for a singleton"}},
		{"timeout without a schedule", []string{"--timeout", "1s", "j", "--", "true"}, []string{"--timeout needs a schedule"}},
		{"negative retries", []string{"--every", "1m", "--retries", "-1", "j", "--", "true"}, []string{"--retries", "-1"}},
		{"retries without a schedule", []string{"--retries", "2", "j", "--", "true"}, []string{"--retries needs a schedule"}},
		{"retry backoff without retries", []string{"--every", "1m", "--retry-backoff", "1s", "j", "--", "true"}, []string{"--retry-backoff needs --retries"}},
		{"prefer without a schedule", []string{"--prefer", "highest-weight", "j", "--", "true"}, []string{"--prefer needs a schedule"}},
		{"bad prefer", []string{"--every", "1m", "--prefer", "heaviest", "j", "--", "true"}, []string{"--prefer", "highest-weight"}},
		{"prefer hysteresis below the lease", []string{"--every", "1m", "--lease", "3s", "--prefer", "highest-weight", "--prefer-hysteresis", "2s", "j", "--", "true"}, []string{"--prefer-hysteresis", "2s", "lease (3s)"}},
		{"prefer hysteresis without prefer", []string{"--every", "1m", "--prefer-hysteresis", "20s", "j", "--", "true"}, []string{"--prefer-hysteresis needs --prefer"}},
		{"bad weight", []string{"--every", "1m", "--weight", "1000001", "j", "--", "true"}, []string{"--weight", "1000001"}},
		{"bad candidate version", []string{"--every", "1m", "--candidate-version", "1.x", "j", "--", "true"}, []string{"--candidate-version", "1.4.2"}},
		{"label without =", []string{"--every", "1m", "--candidate-label", "zone", "j", "--", "true"}, []string{"--candidate-label", "K=V"}},
		{"label twice", []string{"--every", "1m", "--candidate-label", "zone=a", "--candidate-label", "zone=b", "j", "--", "true"}, []string{"--candidate-label", "each key once"}},
		{"label with a control character", []string{"--every", "1m", "--candidate-label", "zone=a\x1b", "j", "--", "true"}, []string{"--candidate-label"}},
		{"zero retry backoff", []string{"--every", "1m", "--retries", "1", "--retry-backoff", "0s", "j", "--", "true"}, []string{"--retry-backoff", "positive"}},
		{"negative timeout", []string{"--every", "1m", "--timeout", "-1s", "j", "--", "true"}, []string{"--timeout"}},
		{"bad log format", []string{"--log-format", "xml", "j", "--", "true"}, []string{"--log-format", "text or json"}},
		{"bad log level", []string{"--log-level", "loud", "j", "--", "true"}, []string{"--log-level", "debug, info, warn or error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _, errb, ms := shared()
			args := append([]string{"run", "--store", "mem:"}, tt.args...)
			code := e.run(context.Background(), args)
			checkOneLine(t, args, code, errb.String(), tt.wants...)
			untouched(t, ms, "j")
		})
	}
}

func TestRunBadStore(t *testing.T) {
	for _, url := range []string{"nowhere", "mem:extra", "sqlite:/nonexistent/dir/baton.db", "ftp://x", ":x"} {
		args := []string{"run", "--store", url, "j", "--", "true"}
		code, _, stderr := runBaton(t, args...)
		checkOneLine(t, args, code, stderr, url)
	}
	t.Setenv("BATON_STORE", "bogus")
	code, _, stderr := runBaton(t, "run", "j", "--", "true")
	checkOneLine(t, []string{"run"}, code, stderr, "bogus")
}

// checkOneLine asserts exit 2 with exactly one line on stderr containing
// every one of wants.
func checkOneLine(t *testing.T, args []string, code int, stderr string, wants ...string) {
	t.Helper()
	if code != exitUsage {
		t.Errorf("baton %s: exit %d, want %d (stderr %q)", strings.Join(args, " "), code, exitUsage, stderr)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("baton %s: stderr is not exactly one line: %q", strings.Join(args, " "), stderr)
	}
	for _, w := range wants {
		if !strings.Contains(stderr, w) {
			t.Errorf("baton %s: stderr %q does not contain %q", strings.Join(args, " "), stderr, w)
		}
	}
}

// A real command, once per one-second period, on the leader: each period
// done once, its environment and output in the ledger. SIGINT (the
// context) stops baton with exit 0 and releases the lease.
func TestRunScheduledCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for a few seconds")
	}
	testenv.ParallelUnlessLong(t)
	e, out, errb, ms := shared()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- e.run(ctx, []string{"run", "--store", "mem:", "--node", "n1", "--lease", "3s", "--grace", "1s",
			"--every", "1s", "billing", "--", "sh", "-c", `echo "period=$BATON_PERIOD token=$BATON_TOKEN node=$BATON_NODE name=$BATON_NAME"`})
	}()
	// Two periods done, then stop half-way between two periods: a stop at
	// a whole second would race the next period's start (its row is left
	// running for the next leader, which is not what this test is about).
	testenv.WaitFor(20*time.Second, func() bool {
		rs, _ := ms.Runs(context.Background(), "billing", "", 0)
		n := 0
		for _, r := range rs {
			if r.State == store.Done {
				n++
			}
		}
		return n >= 2
	})
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(1500*time.Millisecond).Sub(now) % time.Second)
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	rs, _ := ms.Runs(context.Background(), "billing", "", 0)
	if n := len(rs); n > 2 && (rs[n-1].State == store.Running || rs[n-1].State == store.Pending) {
		// On a loaded machine a period can start late (or its command
		// take half a second to start), so that the stop still lands in
		// its run: the row is left running, or released as interrupted
		// (pending again), for the next leader, which is not what this
		// test is about.
		t.Logf("the last period, %s, started at %v and was left %s at the stop (%q)", rs[n-1].Period, rs[n-1].Started, rs[n-1].State, rs[n-1].Output)
		rs = rs[:n-1]
	}
	if len(rs) < 2 {
		t.Fatalf("ledger %+v\nstderr:\n%s", rs, errb.String())
	}
	for _, r := range rs {
		want := "period=" + r.Period + " token=1 node=n1 name=billing\n"
		if r.State != store.Done || r.Output != want || r.Holder != "n1" {
			t.Errorf("row %+v, want done with output %q", r, want)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	rec, _ := ms.Get(context.Background(), "billing")
	if !rec.Free() {
		t.Errorf("lease not released: %+v", rec)
	}
}

// A leader whose wall clock is off the store's (here: the store's clock is
// set 10 minutes back) runs no period, gives its term up after
// --clock-step-down, campaigns no more while the clocks disagree, and
// campaigns, leads and runs periods again once they agree.
func TestRunClockStepDown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real command for a few seconds")
	}
	testenv.ParallelUnlessLong(t)
	var off atomic.Int64
	off.Store(int64(-10 * time.Minute))
	ms := memstore.New(memstore.WithTime(func() time.Time { return time.Now().Add(time.Duration(off.Load())) }))
	out, errb := &syncBuffer{}, &syncBuffer{}
	e := &env{stdout: out, stderr: errb, open: func(context.Context, string) (store.Store, error) { return ms.Client(""), nil }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int)
	go func() {
		done <- e.run(ctx, []string{"run", "--store", "mem:", "--node", "n1", "--lease", "3s", "--grace", "1s",
			"--every", "1s", "--clock-step-down", "2s", "billing", "--", "true"})
	}()
	testenv.WaitFor(20*time.Second, func() bool { return strings.Contains(errb.String(), "not campaigning until the wall clock agrees") })
	if rs, _ := ms.Runs(context.Background(), "billing", "", 0); len(rs) != 0 {
		t.Fatalf("the node ran %d periods with its clock 10 minutes ahead", len(rs))
	}
	if rec, _ := ms.Get(context.Background(), "billing"); !rec.Free() {
		t.Fatalf("the term was not given up: %+v\n%s", rec, errb)
	}
	time.Sleep(2 * time.Second)
	if rec, _ := ms.Get(context.Background(), "billing"); !rec.Free() || rec.Token != 1 {
		t.Fatalf("the node campaigned again with its clock off: %+v\n%s", rec, errb)
	}
	off.Store(0)
	testenv.WaitFor(20*time.Second, func() bool {
		rs, _ := ms.Runs(context.Background(), "billing", "", 0)
		return len(rs) >= 2
	})
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errb)
	}
	rs, _ := ms.Runs(context.Background(), "billing", "", 0)
	if len(rs) < 2 || rs[0].Token != 2 {
		t.Fatalf("after the clocks agreed: %+v, want periods run under token 2\n%s", rs, errb)
	}
	for _, want := range []string{"10m0s ahead of the reference clock (tolerance 1s)", "giving the term up", "agrees with the reference clock again; campaigning"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, errb)
		}
	}
}

// Without a schedule the command runs as a singleton; stopping baton
// stops it with SIGTERM at once and releases the lease; a command that
// exits is restarted.
func TestRunSingleton(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	testenv.ParallelUnlessLong(t)
	delay := testenv.MeasureDelay(t)
	e, out, errb, ms := shared()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- e.run(ctx, []string{"run", "--store", "mem:", "--lease", "3s", "--grace", "1s", "svc", "--",
			"sh", "-c", `echo "up token=$BATON_TOKEN period=$BATON_PERIOD."; trap 'echo got TERM; exit 0' TERM; sleep 0.3; exit 3`})
	}()
	// It exits at 0.3s and is restarted after 1s; stop it once the second
	// run has exited too, in the second restart's wait (a fixed sleep of
	// 1.8s missed the second start on a loaded machine).
	mustWaitFor(t, func() bool {
		return strings.Count(out.String(), "up token=1 period=.") == 2 && strings.Count(errb.String(), `status="exit 3"`) == 2
	})
	began := time.Now()
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	if took, bound := time.Since(began), delay.Slack(time.Second, began, time.Now()); took > bound {
		t.Errorf("stopping took %v, over %v", took, bound)
	}
	if n := strings.Count(out.String(), "up token=1 period=."); n != 2 {
		t.Errorf("started %d times, want 2:\n%s", n, out.String())
	}
	if !strings.Contains(errb.String(), `status="exit 3"`) {
		t.Errorf("restart not logged:\n%s", errb.String())
	}
	rec, _ := ms.Get(context.Background(), "svc")
	if !rec.Free() {
		t.Errorf("lease not released: %+v", rec)
	}
}

// Two baton run on one store: only the leader runs the periods; stopping
// it hands over at once, with the next token, and no period runs twice.
// "At once" is asserted by what happened, not by a clock: the election
// history shows n1's release and then n2 taking the free record, never a
// takeover after expiry (which waits lease + 2e, 4 s here). How long a
// graceful handover takes is measured by BenchmarkRunHandover, not
// bounded here: on a loaded machine any bound is either loose enough to
// hide a slow handover or tight enough to fail without one.
func TestRunHandover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for a few seconds")
	}
	testenv.ParallelUnlessLong(t)
	e1, out1, errb1, ms := shared()
	e2 := &env{stdout: &syncBuffer{}, stderr: &syncBuffer{}, open: e1.open}
	args := func(node string) []string {
		return []string{"run", "--store", "mem:", "--node", node, "--lease", "3s", "--grace", "1s",
			"--every", "1s", "billing", "--", "sh", "-c", `echo "$BATON_PERIOD $BATON_TOKEN $BATON_NODE"`}
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	done1, done2 := make(chan int), make(chan int)
	// Waits on what happened, not on the clock: on a loaded machine (the
	// race suite beside other packages) a period's command can take a
	// second to start.
	doneBy := func(token uint64) bool {
		rs, _ := ms.Runs(context.Background(), "billing", "", 0)
		for _, r := range rs {
			if r.State == store.Done && r.Token == token {
				return true
			}
		}
		return false
	}
	go func() { done1 <- e1.run(ctx1, args("n1")) }()
	if !testenv.WaitFor(30*time.Second, func() bool { return doneBy(1) }) { // n1 leads
		t.Fatalf("n1 ran no period:\n%s", errb1.String())
	}
	go func() { done2 <- e2.run(ctx2, args("n2")) }()
	if !testenv.WaitFor(30*time.Second, func() bool {
		return strings.Contains(e2.stderr.(*syncBuffer).String(), "waiting for leadership")
	}) {
		t.Fatalf("n2 does not wait:\n%s", e2.stderr.(*syncBuffer).String())
	}
	time.Sleep(time.Second)
	cancel1()
	if code := <-done1; code != exitOK {
		t.Fatalf("n1: exit %d\n%s", code, errb1.String())
	}
	stopped := time.Now()
	if !testenv.WaitFor(30*time.Second, func() bool { return doneBy(2) }) {
		t.Errorf("n2 ran no period after the handover:\n%s", e2.stderr.(*syncBuffer).String())
	}
	cancel2()
	if code := <-done2; code != exitOK {
		t.Fatalf("n2: exit %d\n%s", code, e2.stderr.(*syncBuffer).String())
	}
	out2 := e2.stdout.(*syncBuffer).String()
	if !strings.Contains(out1.String(), " 1 n1\n") || !strings.Contains(out2, " 2 n2\n") || strings.Contains(out2, " n1\n") {
		t.Fatalf("n1:\n%s\nn2:\n%s", out1.String(), out2)
	}
	rs, _ := ms.Runs(context.Background(), "billing", "", 0)
	// A stop may catch a node in the middle of a run: the period n1 was
	// running when it stopped is run again by n2 (attempt 2), and the one
	// n2 was running when it stopped is the newest row, released (pending
	// again, for the next leader) or, if the release did not get written,
	// still running. Every other row is done at the first attempt.
	for i, r := range rs {
		switch {
		case (r.State == store.Running || r.State == store.Pending) && i == len(rs)-1 && r.Token == 2:
		case r.State == store.Done && r.Attempt == 1:
		case r.State == store.Done && r.Attempt == 2 && r.Token == 2 && r.Scheduled.Before(stopped):
		default:
			t.Errorf("row %+v", r)
		}
		if r.Token == 2 && r.Scheduled.Before(stopped) {
			t.Logf("n2 started period %s %v after n1 had stopped", r.Period, r.Started.Sub(stopped).Round(time.Millisecond))
		}
	}
	if !doneBy(1) || !doneBy(2) {
		t.Errorf("ledger %+v", rs)
	}
	// The handover was graceful: n1 released the record and n2 took it
	// free, with the next token.
	evs, err := ms.History(context.Background(), "billing", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, fmt.Sprintf("%s %s %d", ev.Kind, ev.Holder, ev.Token))
	}
	want := []string{"acquired n1 1", "released  1", "acquired n2 2", "released  2"}
	if !slices.Equal(kinds, want) {
		t.Errorf("election history %q, want %q: n2 did not take over the record n1 released", kinds, want)
	}
}

// --restart never and on-failure: baton releases the lease and exits with
// the command's status when it is not restarted.
func TestRunRestartPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	tests := []struct {
		policy, script string
		want, starts   int
	}{
		{"never", "exit 3", 3, 1},
		{"on-failure", "exit 0", 0, 1},
		{"on-failure", `test -e "$F" && exit 0; touch "$F"; exit 5`, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.policy+" "+tt.script, func(t *testing.T) {
			e, out, errb, ms := shared()
			t.Setenv("F", filepath.Join(t.TempDir(), "ran"))
			code := e.run(context.Background(), []string{"run", "--store", "mem:", "--lease", "3s", "--grace", "1s", "--restart", tt.policy, "svc", "--",
				"sh", "-c", "echo start; " + tt.script})
			if code != tt.want || strings.Count(out.String(), "start\n") != tt.starts {
				t.Fatalf("exit %d, want %d; stdout %q; log:\n%s", code, tt.want, out.String(), errb.String())
			}
			if rec, _ := ms.Get(context.Background(), "svc"); !rec.Free() {
				t.Errorf("lease not released: %+v", rec)
			}
		})
	}
}

// --once: a leader deposed while its command runs stops the command and
// exits 76.
func TestRunOnceLost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	e, out, errb, ms := shared()
	done := make(chan int)
	go func() {
		done <- e.run(context.Background(), []string{"run", "--once", "--store", "mem:", "--lease", "3s", "--renew", "200ms", "--grace", "1s", "J", "--",
			"sh", "-c", "echo up; sleep 300"})
	}()
	if !testenv.WaitFor(10*time.Second, func() bool { return strings.Contains(out.String(), "up\n") }) {
		t.Fatalf("not started:\n%s", errb.String())
	}
	if err := baton.RequestResign(context.Background(), ms, "J", 1); err != nil {
		t.Fatal(err)
	}
	code := <-done
	if code != exitLost || !strings.Contains(errb.String(), "baton run: J: leadership lost while the command ran; it was stopped (killed by SIGTERM)\n") {
		t.Fatalf("exit %d, want %d; log:\n%s", code, exitLost, errb.String())
	}
}

// A command's lines are never cut by baton's log lines or by its other
// stream: lineWriter holds a partial line back until its end comes.
func TestLineWriter(t *testing.T) {
	var mu sync.Mutex
	var b bytes.Buffer
	out := &lineWriter{out: lockedWriter{&mu, &b}}
	log := lockedWriter{&mu, &b}
	out.Write([]byte("first li"))
	log.Write([]byte("LOG\n"))
	out.Write([]byte("ne\nsecond"))
	log.Write([]byte("LOG\n"))
	out.Flush()
	if got, want := b.String(), "LOG\nfirst line\nLOG\nsecond\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	b.Reset()
	long := strings.Repeat("x", maxLine+10)
	out.Write([]byte(long))
	out.Flush()
	if got := b.String(); got != long[:maxLine]+"\n"+long[maxLine:]+"\n" {
		t.Fatalf("a long line: %d bytes written", len(got))
	}
}

// --retries 2: a command that fails twice then succeeds ends with one done
// row whose attempts are counted, the attempts --retry-backoff apart.
func TestRunRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	e, _, errb, ms := shared()
	t.Setenv("F", filepath.Join(t.TempDir(), "count"))
	// A manual trigger: a period due now, whatever the hour.
	key := schedule.Key(time.Now())
	if _, _, err := schedule.Trigger(context.Background(), ms, "flaky", key); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- e.run(ctx, []string{"run", "--store", "mem:", "--lease", "3s", "--grace", "500ms", "--every", "1h",
			"--retries", "2", "--retry-backoff", "300ms", "flaky", "--",
			"sh", "-c", `n=$(($(cat "$F" 2>/dev/null || echo 0) + 1)); echo $n > "$F"; echo "attempt $n"; [ $n -ge 3 ]`})
	}()
	var r store.Run
	testenv.WaitFor(10*time.Second, func() bool {
		r, _ = ms.GetRun(context.Background(), "flaky", key)
		return r.State == store.Done
	})
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if r.State != store.Done || r.Attempt != 3 || r.Output != "attempt 3\n" {
		t.Fatalf("row %+v; log:\n%s", r, errb.String())
	}
}

// Two nodes of one job with different schedules: the second refuses with
// one line naming both (exit 2) and writes nothing; with --reschedule it
// starts, the first loses its lease at its next renewal, history shows the
// change, and the first stops with the same complaint when it would lead
// again.
func TestRunRefusesAnotherSchedule(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	e, out, errb, ms := shared()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := make(chan int, 1)
	go func() {
		a <- e.run(ctx, []string{"run", "--store", "mem:", "--node", "a", "--lease", "2s", "--every", "10s", "billing", "--", "true"})
	}()
	mustWaitFor(t, func() bool { rec, err := ms.Get(ctx, "billing"); return err == nil && rec.Holder == "a" })

	e2, _, errb2, _ := shared()
	e2.open = e.open
	args := []string{"run", "--store", "mem:", "--node", "b", "--lease", "2s", "--cron", "@hourly", "billing", "--", "true"}
	code := e2.run(ctx, args)
	checkOneLine(t, args, code, errb2.String(), `registered with schedule "every 10s; catch-up all, max 100"`, `this node has "cron \"@hourly\" in UTC; catch-up all, max 100"`, "--reschedule")
	if j, _ := ms.GetJob(ctx, "billing"); j.Schedule != "every 10s; catch-up all, max 100" {
		t.Fatalf("job after a refused start: %+v", j)
	}

	bctx, bcancel := context.WithCancel(ctx)
	b := make(chan int, 1)
	go func() {
		b <- e2.run(bctx, []string{"run", "--store", "mem:", "--node", "b", "--lease", "2s", "--reschedule", "--cron", "@hourly", "billing", "--", "true"})
	}()
	// a loses its lease at its next renewal and, leading again or not,
	// never runs the old schedule: it stops with the complaint.
	select {
	case code := <-a:
		if code != exitUsage || !strings.Contains(errb.String(), `registered with schedule "cron \"@hourly\" in UTC; catch-up all, max 100"`) {
			t.Errorf("a after the reschedule: exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("a still runs after the reschedule; stderr %q", errb.String())
	}
	mustWaitFor(t, func() bool { rec, err := ms.Get(ctx, "billing"); return err == nil && rec.Holder == "b" })
	bcancel()
	<-b

	o := len(out.String())
	if code := e.run(ctx, []string{"history", "--store", "mem:", "billing"}); code != 0 {
		t.Fatalf("history: exit %d", code)
	}
	h := out.String()[o:]
	if !strings.Contains(h, "rescheduled") || !strings.Contains(h, `every 10s; catch-up all, max 100 -> cron "@hourly" in UTC; catch-up all, max 100`) {
		t.Errorf("history does not show the change:\n%s", h)
	}
}

// mustWaitFor is waitFor that fails the test after 20s.
func mustWaitFor(t *testing.T, cond func() bool) {
	t.Helper()
	if !testenv.WaitFor(20*time.Second, cond) {
		t.Fatal("condition not met within 20s")
	}
}

func TestRunKeepFlags(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"--every", "1m", "--keep", "x", "j", "--", "true"}, []string{"--keep"}},
		{[]string{"--every", "1m", "--keep", "-3d", "j", "--", "true"}, []string{"--keep"}},
		{[]string{"--every", "1m", "--keep-rows", "-1", "j", "--", "true"}, []string{"--keep-rows"}},
		{[]string{"--keep", "7d", "j", "--", "true"}, []string{"--keep", "need a schedule"}},
	} {
		e, _, errb, ms := shared()
		args := append([]string{"run", "--store", "mem:"}, tc.args...)
		code := e.run(context.Background(), args)
		checkOneLine(t, args, code, errb.String(), tc.wants...)
		untouched(t, ms, "j")
	}
}
