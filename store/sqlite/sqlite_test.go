package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
	"github.com/batonhq/baton/store/storetest"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func open(t *testing.T, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(ctx(t), path, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// factory opens the stores of one conformance case on one file.
func factory(t *testing.T) func() store.Store {
	path := filepath.Join(t.TempDir(), "baton.db")
	return func() store.Store {
		s, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatalf("Open(%s): %v", path, err)
		}
		return s
	}
}

func TestConformance(t *testing.T) {
	testenv.ParallelUnlessLong(t) // a file of its own per subtest; 2 s serial
	storetest.Run(t, factory)
}

func TestOpenEmptyPath(t *testing.T) {
	_, err := sqlite.Open(ctx(t), "")
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "empty path") {
		t.Fatalf("Open(\"\") = %v, want ErrInvalid naming the empty path", err)
	}
}

func TestOpenInvalidOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	for _, o := range []struct {
		name string
		opt  sqlite.Option
	}{
		{"busy-timeout", sqlite.WithBusyTimeout(0)},
		{"watch-interval", sqlite.WithWatchInterval(-time.Second)},
		{"clock", sqlite.WithTime(nil)},
		{"max-conns", sqlite.WithMaxConns(1)},
	} {
		_, err := sqlite.Open(ctx(t), path, o.opt)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), o.name) {
			t.Errorf("Open with a bad %s: %v, want ErrInvalid naming the option", o.name, err)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open with bad options created the file: %v", err)
	}
}

// assertRefused opens path, expects an error wrapping store.ErrSchema, and
// checks that the file's bytes did not change.
func assertRefused(t *testing.T, path string, wantInMsg ...string) {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(ctx(t), path)
	if err == nil {
		s.Close()
		t.Fatalf("Open(%s) succeeded, want ErrSchema", path)
	}
	if !errors.Is(err, store.ErrSchema) && !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Open(%s) = %v, want ErrSchema or ErrCorrupt", path, err)
	}
	t.Logf("refused: %v", err)
	for _, w := range wantInMsg {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatalf("Open changed the refused file")
	}
}

func TestRefuseGarbageFile(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"text":    []byte("name,token\nbilling,7\n"),
		"short":   []byte("SQLite"),
		"corrupt": append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xA5}, 8192)...),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".db")
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			assertRefused(t, path, path)
		})
	}
}

func TestRefuseNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	s := open(t, path)
	if _, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 3}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	setMeta(t, path, "schema_version", 999)
	assertRefused(t, path, path, "999", fmt.Sprint(sqlite.SchemaVersion), "newer baton")
}

// setMeta writes a baton_meta row behind the store's back.
func setMeta(t *testing.T, path, key string, value int64) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE baton_meta SET value = ? WHERE key = ?`, value, key); err != nil {
		t.Fatal(err)
	}
}

// TestForeignDatabase: a writer's Open refuses an application's SQLite
// database (tables, an index, a view, a trigger, in either journal mode)
// with the read commands' message, and leaves the file byte for byte as it
// was, with no -wal or -shm file beside it that was not there before.
func TestForeignDatabase(t *testing.T) {
	for _, tc := range []struct{ name, ddl string }{
		{"table", `CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount INTEGER); INSERT INTO invoices (amount) VALUES (42)`},
		{"table in WAL mode", `PRAGMA journal_mode = WAL; CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount INTEGER); INSERT INTO invoices (amount) VALUES (42)`},
		{"view only", `CREATE VIEW v AS SELECT 1`},
		{"baton-like tables without baton_meta", `CREATE TABLE baton_election (name TEXT PRIMARY KEY)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "app.db")
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(tc.ddl); err != nil {
				t.Fatal(err)
			}
			db.Close()
			files := func() []string {
				ents, err := os.ReadDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				return names
			}
			before := files()
			assertRefused(t, path, path, "not a baton store; baton left it untouched")
			if after := files(); !slices.Equal(before, after) {
				t.Fatalf("files beside the refused database: %v before, %v after", before, after)
			}
		})
	}
}

// TestSchemalessDatabase: an SQLite database with no schema at all (as a
// baton process leaves a new store's file for a moment, switched to WAL
// mode before its tables exist) becomes a store, as an empty file does.
func TestSchemalessDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA journal_mode = WAL`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("the schemaless database is empty (%v, %v): the test shows nothing", fi, err)
	}
	s := open(t, path)
	if _, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1}}); err != nil {
		t.Fatal(err)
	}
}

func TestPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd ?name#%41.db")
	s := open(t, path)
	if _, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "a", Token: 1}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the store is not in the named file: %v", err)
	}
}

func TestTokenLimit(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "baton.db"))
	rec, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "big", Holder: "n1", Incarnation: "i1", Token: math.MaxInt64}, Event: store.Acquired})
	if err != nil {
		t.Fatalf("token 2^63-1: %v", err)
	}
	got, err := s.Get(ctx(t), "big")
	if err != nil || got.Token != math.MaxInt64 {
		t.Fatalf("Get = %+v, %v; want token 2^63-1", got, err)
	}
	_, err = s.Swap(ctx(t), store.Swap{Expect: rec.Version, Record: store.Record{Name: "big", Holder: "n2", Incarnation: "i2", Token: math.MaxInt64 + 1}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("token 2^63: %v, want ErrInvalid", err)
	}
	_, err = s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "j", Period: "p", State: store.Running, Token: math.MaxUint64}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("run token 2^64-1: %v, want ErrInvalid", err)
	}
	res, err := s.SwapMany(ctx(t), []store.Swap{{Record: store.Record{Name: "b", Token: math.MaxUint64}}, {Record: store.Record{Name: "c", Token: 1}}})
	if err != nil || !errors.Is(res[0].Err, store.ErrInvalid) || res[1].Err != nil {
		t.Fatalf("SwapMany with one oversized token = %+v, %v", res, err)
	}
}

func TestTimesRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.FixedZone("CET", 3600))
	s := open(t, path, sqlite.WithTime(func() time.Time { return at }))
	rec, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1, Lease: 1500 * time.Millisecond}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Updated.Equal(at) || rec.Updated.Location() != time.UTC {
		t.Fatalf("Updated = %v, want %v in UTC", rec.Updated, at)
	}
	got, err := s.Get(ctx(t), "a")
	if err != nil || got != rec {
		t.Fatalf("Get = %+v, %v; want exactly %+v", got, err, rec)
	}
	evs, err := s.History(ctx(t), "a", 0, 0)
	if err != nil || len(evs) != 1 || !evs[0].Time.Equal(at) || evs[0].Time.Location() != time.UTC {
		t.Fatalf("History = %+v, %v", evs, err)
	}
	run := store.Run{Job: "a", Period: "2026-11-29T11:00:00Z", Scheduled: at.Add(-time.Hour), State: store.Running, Token: 1, Started: at}
	r, err := s.SwapRun(ctx(t), store.RunSwap{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	gr, err := s.GetRun(ctx(t), run.Job, run.Period)
	if err != nil || gr != r || !gr.Finished.IsZero() || !gr.Started.Equal(at) {
		t.Fatalf("GetRun = %+v, %v; SwapRun returned %+v", gr, err, r)
	}
	_, err = s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "a", Period: "x", State: store.Pending, Scheduled: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a time outside int64 nanoseconds: %v, want ErrInvalid", err)
	}
}

func TestClosed(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "baton.db"))
	s.Close()
	if _, err := s.Get(ctx(t), "a"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Get after Close: %v, want ErrUnavailable", err)
	}
	if _, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "a"}}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Swap after Close: %v, want ErrUnavailable", err)
	}
	if _, ok := <-s.WatchChanges(ctx(t)); ok {
		t.Fatal("WatchChanges after Close returned an open channel")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestBusyBeyondTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	s := open(t, path, sqlite.WithBusyTimeout(50*time.Millisecond))
	// Another "process" holds the write lock.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx(t), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	delay := testenv.MeasureDelay(t)
	start := time.Now()
	_, err = s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "a", Token: 1}})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Swap while the file is locked: %v, want ErrUnavailable", err)
	}
	if d, bound := time.Since(start), delay.Slack(5*time.Second, start, time.Now()); d > bound {
		t.Fatalf("Swap waited %v with a 50ms busy timeout, over %v", d, bound)
	}
	t.Logf("locked: %v", err)
	// Reads do not wait for the writer (WAL).
	if _, err := s.Get(ctx(t), "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get while the file is locked: %v, want ErrNotFound", err)
	}
	if _, err := conn.ExecContext(ctx(t), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "a", Token: 1}}); err != nil {
		t.Fatalf("Swap after the lock was released: %v", err)
	}
}

// TestConcurrentOpenFreshFile: handles that create the same new file at
// once all succeed and converge on one schema.
func TestConcurrentOpenFreshFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	const n = 8
	stores := make([]*sqlite.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = sqlite.Open(context.Background(), path)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("handle %d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	if _, err := stores[0].Swap(ctx(t), store.Swap{Record: store.Record{Name: "a", Token: 1}}); err != nil {
		t.Fatal(err)
	}
	if got, err := stores[n-1].Get(ctx(t), "a"); err != nil || got.Token != 1 {
		t.Fatalf("Get through another handle = %+v, %v", got, err)
	}
}

func TestJournalModeIsWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	open(t, path).Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
}

// TestConcurrentRenewals: 4 handles on one file, like 4 processes, each
// trying 200 renewals of one record at the version it last read. No two
// successful renewals may have expected the same version (a lost update),
// and every success must show as a distinct version.
func TestConcurrentRenewals(t *testing.T) {
	const handles, attempts = 4, 200
	path := filepath.Join(t.TempDir(), "baton.db")
	first := open(t, path)
	base, err := first.Swap(ctx(t), store.Swap{Record: store.Record{Name: "r", Holder: "n", Incarnation: "i", Token: 1, Lease: time.Second}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	expected := map[int64]int{} // expected version of each success -> handle
	got := map[int64]bool{}     // versions written
	errs := make(chan error, handles)
	var wg sync.WaitGroup
	for h := 0; h < handles; h++ {
		// The subject is atomicity, not lock waits: a loaded CI machine
		// under -race must not turn a long wait into a failure.
		s := open(t, path, sqlite.WithBusyTimeout(time.Minute))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < attempts; i++ {
				cur, err := s.Get(context.Background(), "r")
				if err != nil {
					errs <- err
					return
				}
				rec, err := s.Swap(context.Background(), store.Swap{Expect: cur.Version, Record: cur})
				if errors.Is(err, store.ErrConflict) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if other, dup := expected[cur.Version]; dup {
					mu.Unlock()
					errs <- fmt.Errorf("handles %d and %d both renewed from version %d", other, h, cur.Version)
					return
				}
				expected[cur.Version] = h
				got[rec.Version] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	final, err := first.Get(ctx(t), "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || !got[final.Version] || final.Token != base.Token {
		t.Fatalf("final record %+v; %d successful renewals", final, len(got))
	}
	t.Logf("%d of %d renewals succeeded", len(got), handles*attempts)
}

const helperEnv = "BATON_SQLITE_HELPER"

// TestHelperProcess is not a test: TestMultiProcessCounter runs the test
// binary as several processes that each execute it.
func TestHelperProcess(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("helper process for TestMultiProcessCounter")
	}
	path, n, _ := strings.Cut(spec, "|")
	attempts, err := strconv.Atoi(n)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Start line: the parent closes stdin once every process is ready,
	// so that the processes contend instead of running one after another.
	fmt.Println("ready")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		t.Fatal(err)
	}
	node := fmt.Sprintf("pid%d", os.Getpid())
	wins := 0
	for i := 0; i < attempts; i++ {
		cur, err := s.Get(context.Background(), "counter")
		if err != nil {
			t.Fatal(err)
		}
		// Widen the window between the read and the write, as real work
		// would, so that the processes' read-check-writes interleave.
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
		next := cur
		next.Holder, next.Incarnation, next.Token = node, node, cur.Token+1
		_, err = s.Swap(context.Background(), store.Swap{Expect: cur.Version, Record: next, Event: store.TakenOver})
		switch {
		case err == nil:
			wins++
		case errors.Is(err, store.ErrConflict):
		default:
			t.Fatal(err)
		}
	}
	fmt.Printf("wins=%d\n", wins)
}

// TestMultiProcessCounter is the lost-update test across real processes:
// 4 processes each try N compare-and-swap increments of one record's token
// on the same file. The final token must equal the number of successes the
// processes report, and the election log must hold one event per success.
func TestMultiProcessCounter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const procs, attempts = 4, 100
	path := filepath.Join(t.TempDir(), "baton.db")
	s := open(t, path)
	if _, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "counter", Token: 0}}); err != nil {
		t.Fatal(err)
	}
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bufio.Reader, procs)
	gates := make([]io.Closer, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+path+"|"+strconv.Itoa(attempts))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		gate, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i], outs[i], gates[i] = cmd, bufio.NewReader(out), gate
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	// Every process has opened the store and waits at the start line.
	for i, out := range outs {
		if line, err := out.ReadString('\n'); line != "ready\n" {
			t.Fatalf("process %d: %q, %v; want ready", i, line, err)
		}
	}
	for _, g := range gates {
		g.Close()
	}
	total := 0
	for i, cmd := range cmds {
		rest, _ := io.ReadAll(outs[i])
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, rest)
		}
		wins := -1
		for _, line := range strings.Split(string(rest), "\n") {
			if v, ok := strings.CutPrefix(line, "wins="); ok {
				wins, _ = strconv.Atoi(v)
			}
		}
		if wins < 0 {
			t.Fatalf("process %d reported no result:\n%s", i, rest)
		}
		t.Logf("process %d: %d of %d swaps won", i, wins, attempts)
		total += wins
	}
	got, err := s.Get(ctx(t), "counter")
	if err != nil {
		t.Fatal(err)
	}
	if got.Token != uint64(total) {
		t.Fatalf("final token %d, processes reported %d successful increments: an update was lost", got.Token, total)
	}
	evs, err := s.History(ctx(t), "counter", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != total {
		t.Fatalf("election log has %d events for %d successful swaps", len(evs), total)
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) || ev.Token != uint64(i+1) {
			t.Fatalf("event %d = %+v, want seq and token %d", i, ev, i+1)
		}
	}
	if total == 0 {
		t.Fatal("no process won a swap")
	}
}

func TestReopenDurability(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	s := open(t, path)
	rec, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "d", Holder: "n1", Incarnation: "i1", Token: 9, Lease: time.Second}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	run, err := s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "d", Period: "2026-11-29T00:00:00Z", State: store.Running, Token: 9, Holder: "n1", Attempt: 1}, Fenced: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := open(t, path)
	got, err := s2.Get(ctx(t), "d")
	if err != nil || got != rec {
		t.Fatalf("after reopen Get = %+v, %v; want %+v", got, err, rec)
	}
	gr, err := s2.GetRun(ctx(t), run.Job, run.Period)
	if err != nil || gr != run {
		t.Fatalf("after reopen GetRun = %+v, %v; want %+v", gr, err, run)
	}
	// The version counter survives too: a new write never reuses a version.
	next, err := s2.Swap(ctx(t), store.Swap{Record: store.Record{Name: "e", Token: 1}})
	if err != nil || next.Version <= run.Version {
		t.Fatalf("first write after reopen got version %d, last before was %d (%v)", next.Version, run.Version, err)
	}
}

// TestWatchChangesOtherHandle: a write through another handle (another
// process, as far as SQLite knows) reaches the change feed, which names
// only the record written, at its version, and reports every write up
// to it (Through: the feed is in order); Close ends the feed.
func TestWatchChangesOtherHandle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	watcher := open(t, path, sqlite.WithWatchInterval(5*time.Millisecond))
	writer := open(t, path)
	feed := watcher.WatchChanges(ctx(t))
	b, err := writer.Swap(ctx(t), store.Swap{Record: store.Record{Name: "b", Holder: "n1", Incarnation: "i1", Token: 1}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case batch, ok := <-feed:
		if !ok {
			t.Fatal("feed closed instead of naming the write")
		}
		if want := []store.Change{{Name: "b", Version: b.Version, Through: b.Version}}; !slices.Equal(batch, want) {
			t.Fatalf("feed gave %v after a write of b, want %v", batch, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no change within 10s of a write by another handle")
	}
	rec, err := writer.Swap(ctx(t), store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case batch, ok := <-feed:
		if !ok {
			t.Fatal("feed closed instead of naming the write")
		}
		// The poller names only the records written, not every record.
		if want := []store.Change{{Name: "a", Version: rec.Version, Through: rec.Version}}; !slices.Equal(batch, want) {
			t.Fatalf("feed gave %v after a write of a, want %v", batch, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no change within 10s of a write by another handle")
	}
	watcher.Close()
	for range feed { // ends when Close closes it
	}
}

// TestWritesQueueInProcess: writes of one Store wait for each other in
// the Store, not in SQLite's busy handler, so that many goroutines
// writing at once through one Store never hit the busy timeout, however
// short.
func TestWritesQueueInProcess(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "baton.db"), sqlite.WithBusyTimeout(time.Millisecond))
	const writers, each = 16, 20
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			rec := store.Record{Name: fmt.Sprintf("w%d", w), Holder: "n1", Incarnation: "i1", Token: 1}
			var expect int64
			for range each {
				got, err := s.Swap(ctx(t), store.Swap{Expect: expect, Record: rec})
				if err != nil {
					errs <- err
					return
				}
				expect = got.Version
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatalf("a write of one Store among %d at once: %v", writers, err)
		}
	}
}

// TestWatchChangesSameHandle: the change feed names records written
// through its own Store too (a group writes and follows through one
// handle), including a version change by UpdateJob, and Close ends it.
func TestWatchChangesSameHandle(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "baton.db"), sqlite.WithWatchInterval(5*time.Millisecond))
	feed := s.WatchChanges(ctx(t))
	rec, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "job", Holder: "n1", Incarnation: "i1", Token: 1}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	wait := func(name string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case batch, ok := <-feed:
				if !ok {
					t.Fatalf("feed closed while waiting for %s", name)
				}
				if slices.ContainsFunc(batch, func(c store.Change) bool { return c.Name == name }) {
					return
				}
			case <-deadline:
				t.Fatalf("the feed did not name %s within 10s", name)
			}
		}
	}
	wait("job")
	if _, err := s.EnsureJob(ctx(t), store.Job{Name: "job", Schedule: "every 1h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateJob(ctx(t), store.JobUpdate{Name: "job", Expect: "every 1h", Schedule: "every 2h"}); err != nil {
		t.Fatal(err)
	}
	wait("job")
	if got, err := s.Get(ctx(t), "job"); err != nil || got.Version == rec.Version {
		t.Fatalf("UpdateJob left the record at version %d: %v", got.Version, err)
	}
	s.Close()
	for range feed { // ends when Close closes it
	}
}

func TestDamagedConformance(t *testing.T) {
	storetest.RunDamaged(t, func(t *testing.T) (func() store.Store, storetest.Planter) {
		path := filepath.Join(t.TempDir(), "baton.db")
		open := func() store.Store {
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatalf("Open(%s): %v", path, err)
			}
			return s
		}
		return open, func(t *testing.T, job, period string, state store.RunState) {
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			res, err := db.Exec(`UPDATE baton_runs SET state = ? WHERE job = ? AND period = ?`, string(state), job, period)
			if err != nil {
				t.Fatalf("planting state %q in %s/%s: %v", state, job, period, err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("planting state %q in %s/%s: %d rows", state, job, period, n)
			}
		}
	})
}
