//go:build unix

package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

// lockedScript appends "PERIOD NODE" to the file $1 and, the first time
// node A runs it, says so ($2/started), waits until the test holds the
// store's write lock ($2/locked), stops A's baton (its supervisor's
// parent) with SIGSTOP and exits 0 ($2/exited): the command ends inside
// its term, with its baton frozen and the store's write lock held by a
// process that does not let it go.
const lockedScript = `echo "$BATON_PERIOD $BATON_NODE" >> "$1"
if [ "$BATON_NODE" = A ] && mkdir "$2" 2>/dev/null; then
  : > "$2/started"
  while [ ! -e "$2/locked" ]; do sleep 0.01; done
  kill -STOP "$(cut -d' ' -f4 /proc/$PPID/stat)"
  : > "$2/exited"
fi
exit 0`

// Issue 42's gap, forced: baton frozen while the SQLite store's write lock
// is held (here by the test, standing in for a baton stopped inside a
// write transaction: every other writer waits, its supervisor's record
// included, and no other node can be elected either). A's command exits
// inside A's term; the test holds the lock 6s, past A's lease (4s) and
// B's wait for it; then lets it go, and B, elected at once, must not run
// the period again: A's
// supervisor, which saw the exit inside the term, records it done under
// A's token (fenced by the row, scheduler.CompleteSeen) while B waits its
// takeover grace. The control, a supervisor recording as before (fenced
// by the token, giving up at the deadline), cannot record while the lock
// is held, and B runs the period a second time.
func TestProcessRunFrozenInsideWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	testenv.ParallelUnlessLong(t)
	for _, tc := range []struct {
		name    string
		control bool
	}{{"recorded after the lock", false}, {"control: recorded as before", true}} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.ParallelUnlessLong(t) // its own store, files and processes
			var env []string
			if tc.control {
				env = []string{recordAsBeforeVar + "=1"}
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "b.db")
			runs, mark := filepath.Join(dir, "runs"), filepath.Join(dir, "mark")
			args := func(node string) []string {
				return []string{"run", "--store", "sqlite:" + path, "--node", node, "--lease", "4s", "--clock-margin", "100ms", "--grace", "500ms",
					"--every", "1s", "frz", "--", "sh", "-c", lockedScript, "sh", runs, mark}
			}
			a, _, errA := startBatonEnv(t, env, args("A")...)
			t.Cleanup(func() { a.Process.Signal(syscall.SIGCONT) })
			if !testenv.WaitFor(20*time.Second, func() bool { return strings.Contains(errA.String(), "elected") }) {
				t.Fatalf("A not elected:\n%s", errA.String())
			}
			b, _, errB := startBatonEnv(t, env, args("B")...)
			// B registered the job and campaigns before the lock is
			// taken (at load, under -race, its start came after the lock
			// and waited for the store instead; CI saw it give up once).
			if !testenv.WaitFor(20*time.Second, func() bool { return strings.Contains(errB.String(), "waiting for leadership") }) {
				t.Fatalf("B does not wait for leadership:\n%s", errB.String())
			}
			if !testenv.WaitFor(20*time.Second, func() bool { _, err := os.Stat(filepath.Join(mark, "started")); return err == nil }) {
				t.Fatalf("A's command did not start; A's log:\n%s", errA.String())
			}
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
				t.Fatal(err)
			}
			locked := time.Now()
			os.WriteFile(filepath.Join(mark, "locked"), nil, 0o600)
			if !testenv.WaitFor(20*time.Second, func() bool { return procState(a.Process.Pid) == "T" }) {
				t.Fatalf("A's command did not stop A; A's log:\n%s", errA.String())
			}
			time.Sleep(6*time.Second - time.Since(locked))
			if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			read := func() []string {
				data, _ := os.ReadFile(runs)
				return strings.Fields(string(data))
			}
			if _, err := os.Stat(filepath.Join(mark, "exited")); err != nil {
				// Its supervisor stopped it first (3.5s after A's last
				// renewal): this test shows nothing then.
				t.Fatalf("A's command did not exit by itself while the lock was held: %v; A's log:\n%s", err, errA.String())
			}
			f := read()
			var frozen string // the period A's command ran when it stopped A: A's last line
			for i := 0; i+1 < len(f); i += 2 {
				if f[i+1] == "A" {
					frozen = f[i]
				}
			}
			byB := func() int { return strings.Count(strings.Join(read(), " "), " B") }
			if !testenv.WaitFor(30*time.Second, func() bool { return byB() >= 2 }) {
				t.Fatalf("B did not take over; B's log:\n%s", errB.String())
			}
			a.Process.Signal(syscall.SIGCONT)
			a.Process.Signal(syscall.SIGTERM)
			b.Process.Signal(syscall.SIGTERM)
			a.Wait()
			b.Wait()

			f = read()
			count := map[string]int{}
			for i := 0; i+1 < len(f); i += 2 {
				count[f[i]]++
			}
			st, err := openStore(context.Background(), "sqlite:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			row, err := st.GetRun(context.Background(), "frz", frozen)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("period %s, run by A when the lock was taken and A stopped: %d run(s); its row: %s, token %d, attempt %d",
				frozen, count[frozen], row.State, row.Token, row.Attempt)
			if tc.control {
				if count[frozen] < 2 {
					t.Fatalf("control: period %s ran %d time(s) with a supervisor recording as before; the test shows nothing. Runs: %v\nA's log:\n%s\nB's log:\n%s",
						frozen, count[frozen], f, errA.String(), errB.String())
				}
				return
			}
			for p, n := range count {
				if n > 1 {
					t.Errorf("period %s ran %d times; runs: %v\nA's log:\n%s\nB's log:\n%s", p, n, f, errA.String(), errB.String())
				}
			}
			if row.State != store.Done || row.Token != 1 || row.Attempt != 1 {
				t.Errorf("row of %s: %s, token %d, attempt %d; want done under A's token 1, attempt 1\nA's log:\n%s\nB's log:\n%s",
					frozen, row.State, row.Token, row.Attempt, errA.String(), errB.String())
			}
		})
	}
}
