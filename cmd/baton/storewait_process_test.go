//go:build unix

package main

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
)

// notifySocket is a service manager's notify socket for a test: a
// unixgram listener that keeps every datagram with the time it came.
type notifySocket struct {
	path string
	mu   sync.Mutex
	msgs []notifyMsg
}

type notifyMsg struct {
	at   time.Time
	text string
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	// A unix socket's path must fit 108 bytes: not under t.TempDir().
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	n := &notifySocket{path: filepath.Join(dir, "notify")}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := c.Read(buf)
			if err != nil {
				return
			}
			n.mu.Lock()
			n.msgs = append(n.msgs, notifyMsg{time.Now(), string(buf[:k])})
			n.mu.Unlock()
		}
	}()
	return n
}

// since returns the messages that came at or after from.
func (n *notifySocket) since(from time.Time) []notifyMsg {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []notifyMsg
	for _, m := range n.msgs {
		if !m.at.Before(from) {
			out = append(out, m)
		}
	}
	return out
}

// first returns the first message containing s, and whether one came.
func (n *notifySocket) first(s string) (notifyMsg, bool) {
	for _, m := range n.since(time.Time{}) {
		if strings.Contains(m.text, s) {
			return m, true
		}
	}
	return notifyMsg{}, false
}

func count(msgs []notifyMsg, s string) int {
	k := 0
	for _, m := range msgs {
		if strings.Contains(m.text, s) {
			k++
		}
	}
	return k
}

// The acceptance test of a daemon that waits: baton run started while its
// PostgreSQL server is down logs that it waits, does not exit, tells the
// service manager nothing is ready; the server starts 5s later and the
// job runs within one lease of it answering, in the same process, which
// says READY=1 only then. Its watchdog pings stop while it is stopped
// (SIGSTOP) and come again when it continues. COMMAND does not inherit
// $NOTIFY_SOCKET.
func TestRunWaitsForPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes and a PostgreSQL server")
	}
	testenv.ParallelUnlessLong(t)
	delay := testenv.MeasureDelay(t)
	srv := pgtest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	sock := newNotifySocket(t)
	// Retries wait at most half the lease and periods come every second:
	// the job runs at most lease/2 + 1s after the store answers.
	const lease = 4 * time.Second
	const watchdog = 600 * time.Millisecond
	cmd := exec.Command(os.Args[0], "run", "--store", srv.URL(db), "--node", "n1", "--lease", lease.String(), "--every", "1s",
		"billing", "--", "sh", "-c", `echo "ran $BATON_PERIOD notify=${NOTIFY_SOCKET:-none} watchdog=${WATCHDOG_USEC:-none}"`)
	cmd.Env = append(os.Environ(), "BATON_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0",
		"NOTIFY_SOCKET="+sock.path, "WATCHDOG_USEC="+strconv.FormatInt(watchdog.Microseconds(), 10))
	out, errb := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGCONT); cmd.Process.Kill(); <-exited })

	if !testenv.WaitFor(30*time.Second, func() bool { return strings.Contains(errb.String(), "store unavailable; waiting for it") }) {
		t.Fatalf("no line saying baton waits for the store:\n%s", errb.String())
	}
	select {
	case <-time.After(5 * time.Second):
	case <-exited:
		t.Fatalf("baton exited while the store was down: %v\n%s", cmd.ProcessState, errb.String())
	}
	if _, ok := sock.first("READY=1"); ok {
		t.Fatalf("READY=1 before the store answered")
	}
	if _, ok := sock.first("STATUS=waiting for the store"); !ok {
		t.Errorf("no STATUS saying baton waits for the store: %v", sock.since(time.Time{}))
	}
	if n := strings.Count(errb.String(), "\n"); n > 2 {
		t.Errorf("%d log lines in 5s of waiting, want the start line and the one saying it waits:\n%s", n, errb.String())
	}

	// The server may answer before Start returns (Start waits for it to
	// say so): READY=1 is checked against starting, the job's delay is
	// bounded from up.
	starting := time.Now()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	if !testenv.WaitFor(30*time.Second, func() bool { return strings.Contains(out.String(), "ran ") }) {
		t.Fatalf("the job did not run after the store came back:\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	ran := time.Now()
	if bound := delay.Slack(lease, up, ran); ran.Sub(up) > bound {
		t.Errorf("the job ran %v after the store came back, want within one lease (%v with the measured scheduling delay)", ran.Sub(up), bound)
	}
	t.Logf("the store answered; the job ran %v later; log:\n%s", ran.Sub(up), errb.String())
	ready, ok := sock.first("READY=1")
	if !ok || ready.at.Before(starting) {
		t.Fatalf("READY=1 %v (ok %v), want after the store was started again at %v", ready.at, ok, starting)
	}
	if !strings.Contains(out.String(), "notify=none watchdog=none") {
		t.Errorf("COMMAND inherited the notify socket or watchdog: %q", out.String())
	}
	select {
	case <-exited:
		t.Fatalf("baton exited: %v", cmd.ProcessState)
	default:
	}
	if !testenv.WaitFor(10*time.Second, func() bool { _, ok := sock.first("STATUS=leader of billing, token 1"); return ok }) {
		t.Errorf("no STATUS saying baton leads: %v", sock.since(time.Time{}))
	}

	// The watchdog: pings every half interval while baton runs, none
	// while it is stopped, pings again when it continues.
	from := time.Now()
	time.Sleep(4 * watchdog)
	if n := count(sock.since(from), "WATCHDOG=1"); n < 2 {
		t.Fatalf("%d WATCHDOG=1 in %v while leading, want about %d", n, 4*watchdog, 8)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // a datagram sent as it stopped arrives
	stopped := time.Now()
	time.Sleep(3 * watchdog)
	if n := count(sock.since(stopped), "WATCHDOG=1"); n != 0 {
		t.Errorf("%d WATCHDOG=1 while baton was stopped, want none", n)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	cont := time.Now()
	if !testenv.WaitFor(10*time.Second, func() bool { return count(sock.since(cont), "WATCHDOG=1") > 0 }) {
		t.Errorf("no WATCHDOG=1 after SIGCONT")
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-exited
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0:\n%s", code, errb.String())
	}
	// baton sent STOPPING=1 before it exited; the socket's reader may
	// not have taken it off the socket yet.
	if !testenv.WaitFor(5*time.Second, func() bool { _, ok := sock.first("STOPPING=1"); return ok }) {
		t.Errorf("no STOPPING=1 at exit")
	}
}

// A PostgreSQL server that answers but refuses (here: the database does
// not exist, 3D000) is not waited for: baton run says so in one line and
// exits 2 at once, as a bad URL.
func TestRunDoesNotWaitForWrongPostgres(t *testing.T) {
	u, err := url.Parse(pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/no_such_database_baton"
	began := time.Now()
	code, _, stderr := runBaton(t, "run", "--store", u.String(), "--lease", "2s", "j", "--", "true")
	if took := time.Since(began); code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "3D000") || took > 10*time.Second {
		t.Fatalf("exit %d after %v, want 2 at once; stderr %q", code, took, stderr)
	}
}
