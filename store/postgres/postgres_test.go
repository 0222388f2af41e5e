package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/postgres"
	"github.com/batonhq/baton/store/storedriver"
	"github.com/batonhq/baton/store/storetest"
)

// The conformance suites (each subtest on a fresh database of the shared
// server) and the real-time elector tests spend most of their time
// waiting on the server or on leases, each on a database or a server of
// its own: unless -test.parallel is given, eight run at once instead of
// one per CPU (four at a time, and the short tests one at a time before
// them, took the package 15 s of a suite's 110). In CI (testenv.Long),
// under the race detector, they run one at a time
// (testenv.ParallelUnlessLong).
func TestMain(m *testing.M) {
	if !testenv.Long() {
		testenv.DefaultParallel(8)
	}
	pgtest.Main(m)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(testCtx(t), url)
	if err != nil {
		t.Fatalf("Open(%s): %v", url, err)
	}
	return s
}

// The conformance suite, each of its tests on a fresh database.
//
// Outside CI (testenv.Long) the suite runs once, every other one of its
// tests in a schema named by the URL ("elections"), so that both schemas
// see every kind of write: each whole run took 9 s of CPU, most of it the
// server's. CI runs it whole in each (TestConformanceOtherSchema).
func TestConformance(t *testing.T) {
	testenv.ParallelUnlessLong(t) // a fresh database per subtest
	n := 0                        // the suite's tests run one after the other
	storetest.Run(t, func(t *testing.T) func() store.Store {
		url := pgtest.Start(t)
		if n++; n%2 == 0 && !testenv.Long() {
			url = withParam(t, url, "schema", "elections")
			t.Log("in the schema \"elections\"")
		}
		return func() store.Store { return open(t, url) }
	})
}

// The suite again, in a schema named by the URL: in CI (testenv.Long);
// outside it, TestConformance runs half of it there.
func TestConformanceOtherSchema(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	if !testenv.Long() {
		t.Skip("the whole suite in the schema \"elections\" runs in CI (testenv.Long); TestConformance runs every other test of it there")
	}
	storetest.Run(t, func(t *testing.T) func() store.Store {
		url := withParam(t, pgtest.Start(t), "schema", "elections")
		return func() store.Store { return open(t, url) }
	})
}

// withParam returns rawURL with the query parameter key set to value.
func withParam(t testing.TB, rawURL, key, value string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func acquire(name, node string, token uint64) store.Record {
	return store.Record{Name: name, Holder: node, Incarnation: node + "-1", Token: token, Lease: 3 * time.Second}
}

func TestOpenRejectsBadURLs(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	for _, url := range []string{
		"sqlite:baton.db",
		"postgres://u@127.0.0.1:1/db?schema=Baton",
		"postgres://u@127.0.0.1:1/db?schema=a-b",
		"postgres://u@127.0.0.1:1/db?schema=",
		"postgres://u@127.0.0.1:1/db?schema=a&schema=b",
		"postgres://u@127.0.0.1:1/db?schema=" + strings.Repeat("x", 58),
		"postgres://u:secret@127.0.0.1:1/db?schema=%zz",
		"postgres://u:secret@127.0.0.1:port/db",
	} {
		_, err := postgres.Open(context.Background(), url)
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Open(%q) = %v, want ErrInvalid", url, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error shows the password: %v", url, err)
		}
	}
}

func TestOpenUnreachable(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Port 1 on localhost: nothing listens there.
	_, err := postgres.Open(ctx, "postgres://u@127.0.0.1:1/db?connect_timeout=2")
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Open of an unreachable server = %v, want ErrUnavailable", err)
	}
}

func superExec(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	ctx := testCtx(t)
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestSchemaVersionRefused(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	s := open(t, url)
	rec, err := s.Swap(testCtx(t), store.Swap{Record: acquire("a", "n1", 1), Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	superExec(t, url, `UPDATE baton.meta SET value = '99' WHERE key = 'schema_version'`)
	_, err = postgres.Open(testCtx(t), url)
	if !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Open of a version 99 schema = %v, want ErrSchema", err)
	}
	msg := err.Error()
	want := fmt.Sprintf("version %d", postgres.SchemaVersion)
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "99") || !strings.Contains(msg, want) {
		t.Errorf("error message %q should be one line naming versions 99 and %d", msg, postgres.SchemaVersion)
	}

	// Nothing was rewritten.
	superExec(t, url, fmt.Sprintf(`UPDATE baton.meta SET value = '%d' WHERE key = 'schema_version'`, postgres.SchemaVersion))
	s = open(t, url)
	defer s.Close()
	got, err := s.Get(testCtx(t), "a")
	if err != nil || got.Version != rec.Version {
		t.Fatalf("after a refused open: %+v, %v; want %+v", got, err, rec)
	}
}

func TestForeignSchemaRefused(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	superExec(t, url, `CREATE SCHEMA app; CREATE TABLE app.invoices (id int)`)
	_, err := postgres.Open(testCtx(t), withParam(t, url, "schema", "app"))
	if !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Open on a schema of other tables = %v, want ErrSchema", err)
	}
	// An existing empty schema is fine.
	superExec(t, url, `CREATE SCHEMA empty`)
	open(t, withParam(t, url, "schema", "empty")).Close()
}

func TestConcurrentFirstOpen(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	const n = 6
	errs := make(chan error, n)
	for range n {
		go func() {
			s, err := postgres.Open(context.Background(), url)
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("concurrent first Open: %v", err)
		}
	}
}

func TestTokenTooLarge(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	s := open(t, pgtest.Start(t))
	defer s.Close()
	_, err := s.Swap(testCtx(t), store.Swap{Record: acquire("big", "n1", 1<<63)})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("token 2^63: got %v, want ErrInvalid", err)
	}
}

func TestRunFieldsRoundTrip(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	s := open(t, pgtest.Start(t))
	defer s.Close()
	r := store.Run{
		Job: "j", Period: "2026-11-29T00:00:00Z", State: store.Failed, Token: 3, Holder: "n1", Attempt: 2,
		Started: time.Date(2026, 11, 29, 0, 0, 1, 123456000, time.UTC), ExitCode: 7,
		Output: "bytes \x00\xff not utf-8",
	}
	w, err := s.SwapRun(testCtx(t), store.RunSwap{Run: r})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(testCtx(t), r.Job, r.Period)
	if err != nil {
		t.Fatal(err)
	}
	if got.Output != r.Output || !got.Started.Equal(r.Started) || !got.Scheduled.IsZero() || !got.Finished.IsZero() ||
		got.ExitCode != 7 || got.Attempt != 2 || got.State != store.Failed || got.Version != w.Version {
		t.Fatalf("GetRun = %+v, want %+v", got, r)
	}
}

// A session killed by the server while a call waits in it fails that call
// with ErrUnavailable; the pool then replaces the connection.
func TestTerminatedSession(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	srv := pgtest.Shared(t)
	url := pgtest.Start(t)
	s := open(t, withParam(t, withParam(t, url, "pool_max_conns", "1"), "application_name", "baton_terminate_test"))
	defer s.Close()
	rec, err := s.Swap(testCtx(t), store.Swap{Record: acquire("k", "n1", 1), Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}

	// Another session holds the record's row lock, so the renewal waits.
	ctx := testCtx(t)
	locker, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM baton.election WHERE name = 'k' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Swap(context.Background(), store.Swap{Expect: rec.Version, Record: rec})
		done <- err
	}()
	// Wait until the renewal is blocked on the lock, then kill its session.
	// The polls run on a connection of their own: inside the locker's
	// transaction, pg_stat_activity would be the snapshot of its first
	// use.
	watch, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	for {
		var n int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'baton_terminate_test' AND wait_event_type = 'Lock'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("renewal finished while the row was locked: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := srv.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'baton_terminate_test' AND wait_event_type = 'Lock'`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("renewal in a terminated session: got %v, want ErrUnavailable", err)
	} else {
		t.Logf("terminated: %v", err)
	}
	tx.Rollback(ctx)

	// The pool recovers: the next calls get a new connection.
	got, err := s.Get(testCtx(t), "k")
	if err != nil {
		t.Fatalf("Get after the session was terminated: %v", err)
	}
	if got.Version != rec.Version {
		t.Fatalf("the renewal in the terminated session was applied: %+v", got)
	}
	if _, err := s.Swap(testCtx(t), store.Swap{Expect: got.Version, Record: got}); err != nil {
		t.Fatalf("renewal after the session was terminated: %v", err)
	}
}

// A stopped server makes calls fail promptly with ErrUnavailable; after a
// restart they succeed and the data is still there.
func TestServerStopAndRestart(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	srv := pgtest.NewServer(t)
	ctx := testCtx(t)
	if err := srv.Exec(ctx, "CREATE DATABASE baton"); err != nil {
		t.Fatal(err)
	}
	s := open(t, srv.URL("baton"))
	defer s.Close()
	rec, err := s.Swap(ctx, store.Swap{Record: acquire("r", "n1", 41), Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	feed := s.WatchChanges(ctx) // returns once the listener is up

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	delay := testenv.MeasureDelay(t)
	for _, call := range []struct {
		name string
		fn   func(context.Context) error
	}{
		{"Get", func(c context.Context) error { _, err := s.Get(c, "r"); return err }},
		{"Swap", func(c context.Context) error {
			_, err := s.Swap(c, store.Swap{Expect: rec.Version, Record: rec})
			return err
		}},
		{"SwapRun", func(c context.Context) error {
			_, err := s.SwapRun(c, store.RunSwap{Run: store.Run{Job: "r", Period: "p", State: store.Pending}})
			return err
		}},
		{"History", func(c context.Context) error { _, err := s.History(c, "r", 0, 0); return err }},
	} {
		c, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		start := time.Now()
		err := call.fn(c)
		cancel()
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with the server stopped: got %v, want ErrUnavailable", call.name, err)
		}
		if d, bound := time.Since(start), delay.Slack(2*time.Second, start, time.Now()); d > bound {
			t.Errorf("%s with the server stopped took %v, over %v", call.name, d, bound)
		}
	}
	// The broken listening connection closes the feed.
	for range feed {
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	var got store.Record
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err = s.Get(testCtx(t), "r")
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("Get after restart: %v", err)
		}
	}
	if got.Token != 41 || got.Holder != "n1" {
		t.Fatalf("after restart: %+v, want token 41 held by n1", got)
	}
	if _, err := s.Swap(testCtx(t), store.Swap{Expect: got.Version, Record: acquire("r", "n2", 42), Event: store.TakenOver}); err != nil {
		t.Fatalf("takeover after restart: %v", err)
	}
	if _, err := s.Swap(testCtx(t), store.Swap{Expect: 0, Record: acquire("r", "n3", 40)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("re-creating a record after restart: got %v, want ErrConflict", err)
	}
}

// A swap through one handle reaches the change feed of another handle,
// soon, and the feed names only the record written, not the other one
// stored.
func TestWatchChangesLatency(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	a, b := open(t, url), open(t, url)
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()

	if _, err := a.Swap(ctx, store.Swap{Record: acquire("other", "n1", 1), Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	feed := b.WatchChanges(ctx) // returns once the listener is up
	rec, err := a.Swap(ctx, store.Swap{Record: acquire("w", "n1", 1), Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	var worst time.Duration
	for i := range 20 {
		start := time.Now()
		if i > 0 {
			// A change of the transfer request: a renewal is not on
			// the feed.
			next := rec
			next.Transfer = map[string]string{"": "n2"}[rec.Transfer]
			rec, err = a.Swap(ctx, store.Swap{Expect: rec.Version, Record: next})
			if err != nil {
				t.Fatal(err)
			}
		}
		// A batch may name w again at an older version (a record written
		// by a transaction in progress at the last read comes once more);
		// it never names a record not written since the feed began.
		for seen := false; !seen; {
			select {
			case batch, ok := <-feed:
				if !ok {
					t.Fatalf("feed closed waiting for swap %d", i)
				}
				for _, c := range batch {
					if c.Name != "w" {
						t.Fatalf("the feed named %s, not written since it began", c.Name)
					}
					seen = seen || c.Version >= rec.Version
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no batch within 5s of swap %d", i)
			}
		}
		worst = max(worst, time.Since(start))
	}
	t.Logf("worst swap-to-feed latency over 20 swaps: %v", worst)

	cancel()
	for range feed {
	}
}

func TestWatchChangesAfterClose(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	s := open(t, pgtest.Start(t))
	s.Close()
	if _, ok := <-s.WatchChanges(context.Background()); ok {
		t.Fatal("WatchChanges on a closed store delivered a batch")
	}
	if _, err := s.Get(context.Background(), "x"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Get on a closed store: %v, want ErrUnavailable", err)
	}
}

// The database applies storedriver.CheckSwap's rules in the same order: a version
// mismatch is a conflict before anything else.
func TestSwapErrorsMatchCheckSwap(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	s := open(t, pgtest.Start(t))
	defer s.Close()
	ctx := testCtx(t)
	rec, err := s.Swap(ctx, store.Swap{Record: acquire("e", "n1", 2), Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	freeWithInc := store.Record{Name: "e", Incarnation: "x", Token: 2}
	for _, tc := range []struct {
		name string
		sw   store.Swap
	}{
		{"free with incarnation", store.Swap{Expect: rec.Version, Record: freeWithInc}},
		{"free with incarnation, wrong version", store.Swap{Expect: rec.Version + 1, Record: freeWithInc}},
		{"new free with incarnation", store.Swap{Record: store.Record{Name: "new", Incarnation: "x"}}},
		{"new, expected to exist", store.Swap{Expect: 5, Record: acquire("new", "n1", 1)}},
		{"token back", store.Swap{Expect: rec.Version, Record: acquire("e", "n2", 1)}},
		{"token back, wrong version", store.Swap{Expect: rec.Version + 1, Record: acquire("e", "n2", 1)}},
		{"empty name", store.Swap{Record: store.Record{}}},
	} {
		cur, _ := s.Get(ctx, tc.sw.Record.Name)
		want := storedriver.CheckSwap(cur, tc.sw)
		_, err := s.Swap(ctx, tc.sw)
		if want == nil || err == nil || err.Error() != want.Error() {
			t.Errorf("%s: got %v, want %v", tc.name, err, want)
		}
	}
	if got, _ := s.Get(ctx, "e"); got.Version != rec.Version {
		t.Fatalf("refused swaps changed the record: %+v", got)
	}
	if _, err := s.Get(ctx, "new"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused create wrote a record: %v", err)
	}
}

// A read-only opener creates nothing: a database without the schema is
// "no baton store", and stays without it.
func TestOpenReadOnlyCreatesNothing(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	_, err := postgres.Open(testCtx(t), url, postgres.WithReadOnly())
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "no baton store") {
		t.Fatalf("OpenReadOnly of an empty database: %v, want ErrNotFound", err)
	}
	superExec(t, url, `CREATE SCHEMA baton`)
	superExec(t, url, `CREATE TABLE baton.other (x int)`)
	if _, err := postgres.Open(testCtx(t), url, postgres.WithReadOnly()); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("OpenReadOnly of a foreign schema: %v, want ErrSchema", err)
	}
	c, err := pgx.Connect(testCtx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(testCtx(t))
	var n int
	if err := c.QueryRow(testCtx(t), `SELECT count(*) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = 'baton'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("relations in schema baton after read-only opens: %d, %v; want 1", n, err)
	}
}

// A role with nothing but USAGE on the schema and SELECT on its tables
// reads a store opened read-only: status, runs and history work without
// any write privilege.
func TestReadOnlyRole(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	u := pgtest.Start(t)
	s := open(t, u)
	if _, err := s.Swap(testCtx(t), store.Swap{Record: acquire("a", "n1", 1), Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureJob(testCtx(t), store.Job{Name: "a", Schedule: "every 10s"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	role := "baton_reader_" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "_")
	superExec(t, u, `CREATE ROLE `+role+` LOGIN`)
	superExec(t, u, `GRANT USAGE ON SCHEMA baton TO `+role)
	superExec(t, u, `GRANT SELECT ON ALL TABLES IN SCHEMA baton TO `+role)
	t.Cleanup(func() {
		superExec(t, u, `REVOKE ALL ON ALL TABLES IN SCHEMA baton FROM `+role)
		superExec(t, u, `REVOKE ALL ON SCHEMA baton FROM `+role)
		superExec(t, u, `DROP ROLE `+role)
	})
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	pu.User = url.User(role)
	ro, err := postgres.Open(testCtx(t), pu.String(), postgres.WithReadOnly())
	if err != nil {
		t.Fatalf("read-only open as %s: %v", role, err)
	}
	defer ro.Close()
	if rec, err := ro.Get(testCtx(t), "a"); err != nil || rec.Token != 1 {
		t.Fatalf("Get: %+v, %v", rec, err)
	}
	if evs, err := ro.History(testCtx(t), "a", 0, 0); err != nil || len(evs) != 1 {
		t.Fatalf("History: %v, %v", evs, err)
	}
	if _, err := ro.RecentRuns(testCtx(t), "a", "", 10); err != nil {
		t.Fatalf("RecentRuns: %v", err)
	}
	if _, err := ro.Candidates(testCtx(t), "a"); err != nil {
		t.Fatalf("Candidates: %v", err)
	}
	if j, err := ro.GetJob(testCtx(t), "a"); err != nil || j.Schedule != "every 10s" {
		t.Fatalf("GetJob: %+v, %v", j, err)
	}
	// A write through the read-only store is refused before it is sent.
	if _, err := ro.EnsureJob(testCtx(t), store.Job{Name: "b", Schedule: "x"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a write through a read-only store: %v, want ErrInvalid", err)
	}
}

func TestDamagedConformance(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	storetest.RunDamaged(t, func(t *testing.T) (func() store.Store, storetest.Planter) {
		url := pgtest.Start(t)
		return func() store.Store { return open(t, url) }, func(t *testing.T, job, period string, state store.RunState) {
			superExec(t, url, `UPDATE baton.runs SET state = $1 WHERE job = $2 AND period = $3`, string(state), job, period)
		}
	})
}
