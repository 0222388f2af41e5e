//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

// frozenScript appends "PERIOD NODE" to the file $1 and, the first time
// node A runs it (the directory $2 made), stops A's baton (its
// supervisor's parent) with SIGSTOP before it exits 0: baton is frozen
// between the command's exit and its own record, deterministically.
const frozenScript = `echo "$BATON_PERIOD $BATON_NODE" >> "$1"
if [ "$BATON_NODE" = A ] && mkdir "$2" 2>/dev/null; then kill -STOP "$(cut -d' ' -f4 /proc/$PPID/stat)"; fi
exit 0`

// Issue 42's item: a command that exits inside its term is recorded done
// even when baton is frozen at that moment, because its supervisor, which
// a stop of baton does not freeze, records it; so the next leader does
// not run the period again. Two nodes at --every 1s, lease 2s: A's
// command stops A's baton at its first run and exits; B takes over; A is
// let go once B has run two periods. With the record, that period ran
// once, done under A's token; in the control (a supervisor that cannot
// record) B runs it a second time, which is the attack.
func TestProcessRunFrozenAfterExit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	testenv.ParallelUnlessLong(t)
	for _, tc := range []struct {
		name   string
		record bool
	}{{"recorded by the supervisor", true}, {"control: no record", false}} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.ParallelUnlessLong(t) // its own store, files and processes
			var env []string
			if !tc.record {
				env = []string{noRecordVar + "=1"}
			}
			var (
				db, frozen string
				errA, errB *syncBuffer
				read       func() []string
			)
			// A's command stops A's baton at an instant of its own: on a
			// loaded machine, now and then inside one of A's writes, and
			// A then holds SQLite's write lock while stopped, so B cannot
			// take over at all (TestProcessRunFrozenInsideWrite is that
			// case). The scenario is then run again on a new store, up
			// to three times.
			for attempt := 1; ; attempt++ {
				dir := t.TempDir()
				db = "sqlite:" + filepath.Join(dir, "b.db")
				runs, mark := filepath.Join(dir, "runs"), filepath.Join(dir, "mark")
				args := func(node string) []string {
					return []string{"run", "--store", db, "--node", node, "--lease", "2s", "--clock-margin", "100ms", "--grace", "500ms",
						"--every", "1s", "frz", "--", "sh", "-c", frozenScript, "sh", runs, mark}
				}
				var a, b *exec.Cmd
				a, _, errA = startBatonEnv(t, env, args("A")...)
				t.Cleanup(func() { a.Process.Signal(syscall.SIGCONT) })
				if !testenv.WaitFor(20*time.Second, func() bool { return strings.Contains(errA.String(), "elected") }) {
					t.Fatalf("A not elected:\n%s", errA.String())
				}
				b, _, errB = startBatonEnv(t, env, args("B")...)
				read = func() []string {
					data, _ := os.ReadFile(runs)
					return strings.Fields(string(data))
				}
				if !testenv.WaitFor(20*time.Second, func() bool { return procState(a.Process.Pid) == "T" }) {
					t.Fatalf("A's command did not stop A; A's log:\n%s", errA.String())
				}
				// The period A's command ran when it stopped A: A's last line.
				f := read()
				for i := 0; i+1 < len(f); i += 2 {
					if f[i+1] == "A" {
						frozen = f[i]
					}
				}
				byB := func() int { return strings.Count(strings.Join(read(), " "), " B") }
				took := testenv.WaitFor(30*time.Second, func() bool { return byB() >= 2 })
				locked := !took && byB() == 0 && strings.Contains(errB.String(), "store unavailable")
				a.Process.Signal(syscall.SIGCONT)
				a.Process.Signal(syscall.SIGTERM)
				b.Process.Signal(syscall.SIGTERM)
				a.Wait()
				b.Wait()
				if took {
					break
				}
				if !locked || attempt == 3 {
					t.Fatalf("B did not take over (attempt %d); B's log:\n%s", attempt, errB.String())
				}
				t.Logf("attempt %d: A was stopped holding the store's write lock, and B could not write; again on a new store", attempt)
			}

			f := read()
			count := map[string]int{}
			for i := 0; i+1 < len(f); i += 2 {
				count[f[i]]++
			}
			st, err := openStore(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			row, err := st.GetRun(context.Background(), "frz", frozen)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("period %s, run by A when it was stopped: %d run(s); its row: %s, token %d, attempt %d", frozen, count[frozen], row.State, row.Token, row.Attempt)
			if !tc.record {
				if count[frozen] < 2 {
					t.Fatalf("control: period %s ran %d time(s) without the supervisor's record; the test shows nothing. Runs: %v", frozen, count[frozen], f)
				}
				return
			}
			for p, n := range count {
				if n > 1 {
					t.Errorf("period %s ran %d times; runs: %v\nA's log:\n%s\nB's log:\n%s", p, n, f, errA.String(), errB.String())
				}
			}
			if row.State != store.Done || row.Token != 1 || row.Attempt != 1 {
				t.Errorf("row of %s: %s, token %d, attempt %d; want done under A's token 1, attempt 1", frozen, row.State, row.Token, row.Attempt)
			}
			if !strings.Contains(errA.String(), "the supervisor recorded the command's outcome") {
				t.Errorf("A's log does not say its supervisor recorded the outcome:\n%s", errA.String())
			}
		})
	}
}
