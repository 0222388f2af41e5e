package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/postgres"
)

// oldStore makes, at url, a store of schema version 2 as the baton
// releases before session records wrote it (testdata/schema_v2.sql holds
// their statements), and writes to it what such a baton writes: records
// through its swap function, with log events, a job, a run and a
// candidate. It returns the records' versions.
func oldStore(t *testing.T, url string) map[string]int64 {
	t.Helper()
	ddl, err := os.ReadFile("testdata/schema_v2.sql")
	if err != nil {
		t.Fatal(err)
	}
	superExec(t, url, string(ddl))
	ctx := testCtx(t)
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	versions := map[string]int64{}
	for _, name := range []string{"billing", "reports"} {
		var applied bool
		var v int64
		err := c.QueryRow(ctx, `SELECT o_applied, o_version FROM baton.swap($1, 0, 'n1', 'n1-1', 3, $2, '', 'acquired')`,
			name, int64(3*time.Second)).Scan(&applied, &v)
		if err != nil || !applied {
			t.Fatalf("version 2 swap of %s: %v, %v", name, applied, err)
		}
		versions[name] = v
	}
	superExec(t, url, `INSERT INTO baton.jobs (name, schedule, created) VALUES ('billing', 'every 1h', now())`)
	superExec(t, url, `INSERT INTO baton.runs VALUES ('billing', '2026-11-29T00:00:00Z', NULL, 'done', 3, 'n1', 1, false, NULL, NULL, 0, 'ok', nextval('baton.version_seq'))`)
	superExec(t, url, `INSERT INTO baton.candidates VALUES ('billing', 'n2', 'n2-1', 1000000000, now(), now())`)
	return versions
}

func storeID(t *testing.T, url string) string {
	t.Helper()
	return metaValue(t, url, "store_id")
}

func schemaVersion(t *testing.T, url string) string {
	t.Helper()
	return metaValue(t, url, "schema_version")
}

func metaValue(t *testing.T, url, key string) string {
	t.Helper()
	c, err := pgx.Connect(testCtx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(testCtx(t))
	var v string
	if err := c.QueryRow(testCtx(t), `SELECT value FROM baton.meta WHERE key = $1`, key).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A version 2 store is read as it is by a read-only opener and upgraded in
// place by a writer, keeping its records, log, jobs, runs and candidates;
// a process of the old release still running on it can no longer swap.
func TestSchemaUpgradeFrom2(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	versions := oldStore(t, url)
	ctx := testCtx(t)

	ro, err := postgres.Open(ctx, url, postgres.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := ro.Get(ctx, "billing"); err != nil || rec.Version != versions["billing"] || rec.Session != "" || rec.Holder != "n1" {
		t.Fatalf("read-only Get of a version 2 store: %+v, %v", rec, err)
	}
	if res, err := ro.GetMany(ctx, []string{"reports", "none"}); err != nil || res[0].Record.Version != versions["reports"] || !errors.Is(res[1].Err, store.ErrNotFound) {
		t.Fatalf("read-only GetMany of a version 2 store: %+v, %v", res, err)
	}
	if _, ok := <-ro.WatchChanges(ctx); ok {
		t.Fatal("WatchChanges on a read-only version 2 store delivered a batch; want a closed channel")
	}
	ro.Close()
	if v := schemaVersion(t, url); v != "2" {
		t.Fatalf("a read-only open changed the schema version to %s", v)
	}

	oldID := storeID(t, url)
	s := open(t, url)
	defer s.Close()
	if v := schemaVersion(t, url); v != strconv.Itoa(postgres.SchemaVersion) {
		t.Fatalf("schema version after a writable open: %s, want %d", v, postgres.SchemaVersion)
	}
	// A new id: a process of the old release that opened the store
	// before fails its next write with ErrReplaced.
	if id := storeID(t, url); id == oldID || id != s.StoreID() {
		t.Fatalf("store id after the upgrade: %s (before: %s, handle: %s); want a new one", id, oldID, s.StoreID())
	}
	for name, v := range versions {
		rec, err := s.Get(ctx, name)
		if err != nil || rec.Version != v || rec.Token != 3 || rec.Holder != "n1" || rec.Session != "" {
			t.Fatalf("Get(%s) after the upgrade: %+v, %v", name, rec, err)
		}
		if evs, err := s.History(ctx, name, 0, 0); err != nil || len(evs) != 1 || evs[0].Kind != store.Acquired {
			t.Fatalf("History(%s) after the upgrade: %+v, %v", name, evs, err)
		}
	}
	if j, err := s.GetJob(ctx, "billing"); err != nil || j.Schedule != "every 1h" {
		t.Fatalf("GetJob after the upgrade: %+v, %v", j, err)
	}
	if r, err := s.GetRun(ctx, "billing", "2026-11-29T00:00:00Z"); err != nil || r.State != store.Done || r.Output != "ok" {
		t.Fatalf("GetRun after the upgrade: %+v, %v", r, err)
	}
	if cs, err := s.Candidates(ctx, "billing"); err != nil || len(cs) != 1 || cs[0].Node != "n2" || cs[0].Attrs != "" {
		t.Fatalf("Candidates after the upgrade: %+v, %v", cs, err)
	}
	// The row takes attributes at its next refresh (version 10).
	if err := s.Heartbeat(ctx, store.Candidate{Name: "billing", Node: "n2", Incarnation: "n2-1", Every: time.Second, Attrs: "weight=5"}); err != nil {
		t.Fatal(err)
	}
	if cs, err := s.Candidates(ctx, "billing"); err != nil || len(cs) != 1 || cs[0].Attrs != "weight=5" {
		t.Fatalf("Candidates after a refresh with attributes: %+v, %v", cs, err)
	}

	// The upgraded store runs: a record written by the old release is
	// renewed (not on the change feed: a renewal need not be), and one
	// taken over through a session, seen on the change feed.
	feed := s.WatchChanges(ctx)
	rec, _ := s.Get(ctx, "billing")
	rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec})
	if err != nil {
		t.Fatalf("renewal of an old record after the upgrade: %v", err)
	}
	sess, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: store.SessionPrefix + "n2/i1/1", Holder: "n2", Incarnation: "i1", Lease: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	held := store.Record{Name: "reports", Holder: "n2", Incarnation: "i1", Token: 4, Lease: time.Second, Session: sess.Name}
	if _, err := s.Swap(ctx, store.Swap{Expect: versions["reports"], Record: held, Event: store.TakenOver}); err != nil {
		t.Fatalf("takeover through a session after the upgrade: %v", err)
	}
	want := map[string]bool{sess.Name: true, "reports": true}
	for len(want) > 0 {
		select {
		case batch, ok := <-feed:
			if !ok {
				t.Fatal("change feed closed")
			}
			for _, c := range batch {
				delete(want, c.Name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("change feed of the upgraded store did not name %v", want)
		}
	}

	// A process of the old release swaps with the old function: refused,
	// with SQLSTATE 42883, which it reports as store.ErrReplaced.
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, `SELECT * FROM baton.swap('billing', $1, 'n1', 'n1-1', 3, 1000, '', '')`, rec.Version)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42883" || !strings.Contains(pgErr.Message, "schema version 3") {
		t.Fatalf("the version 2 swap function after the upgrade: %v; want SQLSTATE 42883 naming version 3", err)
	}
	if got, _ := s.Get(ctx, "billing"); got.Version != rec.Version {
		t.Fatalf("the old release's swap wrote: %+v", got)
	}
}

// A version 1 schema (no event details, no candidates) is read as it is by
// a read-only opener and upgraded in place by a writer, through version 2.
func TestSchemaUpgradeFrom1(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	oldStore(t, url)
	superExec(t, url, `ALTER TABLE baton.election_log DROP COLUMN detail`)
	superExec(t, url, `DROP TABLE baton.candidates`)
	superExec(t, url, `UPDATE baton.meta SET value = '1' WHERE key = 'schema_version'`)

	ro, err := postgres.Open(testCtx(t), url, postgres.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	evs, err := ro.History(testCtx(t), "billing", 0, 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("read-only History of a version 1 store: %v, %v", evs, err)
	}
	if cs, err := ro.Candidates(testCtx(t), "billing"); err != nil || len(cs) != 0 {
		t.Fatalf("read-only Candidates of a version 1 store: %v, %v", cs, err)
	}
	if err := ro.Heartbeat(testCtx(t), store.Candidate{Name: "billing", Node: "x"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a write on a read-only store: %v, want ErrInvalid", err)
	}
	if _, err := ro.Swap(testCtx(t), store.Swap{Record: acquire("b", "n1", 1), Event: store.Acquired}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a swap on a read-only store: %v, want ErrInvalid", err)
	}
	ro.Close()

	s := open(t, url)
	defer s.Close()
	if v := schemaVersion(t, url); v != strconv.Itoa(postgres.SchemaVersion) {
		t.Fatalf("schema version after a writable open: %s, want %d", v, postgres.SchemaVersion)
	}
	if err := s.Heartbeat(testCtx(t), store.Candidate{Name: "billing", Node: "x", Incarnation: "x1", Every: time.Second}); err != nil {
		t.Fatalf("Heartbeat after the upgrade: %v", err)
	}
	evs, err = s.History(testCtx(t), "billing", 0, 0)
	if err != nil || len(evs) != 1 || evs[0].Detail != "" {
		t.Fatalf("History after the upgrade: %v, %v", evs, err)
	}
	rec, err := s.Get(testCtx(t), "billing")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Swap(testCtx(t), store.Swap{Expect: rec.Version, Record: rec}); err != nil {
		t.Fatalf("renewal after the upgrade: %v", err)
	}
}

// Writers opening a version 2 store at once: one upgrades it, the others
// find it upgraded.
func TestSchemaUpgradeConcurrent(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	oldStore(t, url)
	const n = 4
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
			t.Errorf("concurrent upgrading Open: %v", err)
		}
	}
}

// A version 4 store (testdata/schema_v4.sql, as b0f49e9 created it), a
// version 5 one (testdata/schema_v5.sql, as af95832 did) and a version 6
// one (testdata/schema_v6.sql, as 39d1c00 did) are read as they are by a
// read-only opener and upgraded in place by a writer, which replaces
// swap_many and adds successions. Versions 5 and 6 kept the store's id
// (their functions give the old ones' outcomes); version 7 gives it a new
// one, so a process of the previous release that opened it before is
// refused its next swap (no rows: ErrReplaced): it would take a name a
// succession passed on at its stored token + 1, a token already handed
// out.
func TestSchemaUpgradeFrom4(t *testing.T) { testSchemaUpgrade(t, "4") }

func TestSchemaUpgradeFrom5(t *testing.T) { testSchemaUpgrade(t, "5") }

func TestSchemaUpgradeFrom6(t *testing.T) { testSchemaUpgrade(t, "6") }

// storeAt makes a store of schema version from, as testdata holds it,
// and returns its URL, its id and a connection to it (closed at the end
// of the test).
func storeAt(t *testing.T, from string) (url, id string, c *pgx.Conn) {
	url = pgtest.Start(t)
	ddl, err := os.ReadFile("testdata/schema_v" + from + ".sql")
	if err != nil {
		t.Fatal(err)
	}
	superExec(t, url, string(ddl))
	ctx := testCtx(t)
	c, err = pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return url, storeID(t, url), c
}

func testSchemaUpgrade(t *testing.T, from string) {
	url, id, c := storeAt(t, from)
	ctx := testCtx(t)
	// What an older baton writes: names acquired with one swap_many.
	oldSwapMany := `SELECT o_ord, o_applied, o_version FROM baton.swap_many($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ORDER BY o_ord`
	names := []string{"billing", "reports"}
	versions := map[string]int64{}
	rows, err := c.Query(ctx, oldSwapMany, id, []int32{1, 1}, names, []int64{0, 0}, []string{"n1", "n1"},
		[]string{"n1-1", "n1-1"}, []int64{3, 3}, []int64{int64(3 * time.Second), int64(3 * time.Second)},
		[]string{"", ""}, []string{"", ""}, []string{string(store.Acquired), string(store.Acquired)})
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var ord int32
		var applied bool
		var v int64
		if err := rows.Scan(&ord, &applied, &v); err != nil || !applied {
			t.Fatalf("version %s swap_many: %v, %v", from, applied, err)
		}
		versions[names[ord-1]] = v
	}
	if rows.Err() != nil || len(versions) != 2 {
		t.Fatalf("version %s swap_many: %v, %v", from, versions, rows.Err())
	}

	ro, err := postgres.Open(ctx, url, postgres.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := ro.Get(ctx, "billing"); err != nil || rec.Version != versions["billing"] {
		t.Fatalf("read-only Get of a version %s store: %+v, %v", from, rec, err)
	}
	ro.Close()
	if v := schemaVersion(t, url); v != from {
		t.Fatalf("a read-only open changed the schema version to %s", v)
	}

	s := open(t, url)
	defer s.Close()
	if v := schemaVersion(t, url); v != strconv.Itoa(postgres.SchemaVersion) {
		t.Fatalf("schema version after a writable open: %s, want %d", v, postgres.SchemaVersion)
	}
	if got := storeID(t, url); got == id || s.StoreID() != got {
		t.Fatalf("store id after the upgrade: %s (handle %s), want a new one (the old: %s)", got, s.StoreID(), id)
	}
	checkRules(t, c)
	for _, col := range []string{"successor", "successor_holder", "successor_incarnation"} {
		var n int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM baton.election WHERE `+col+` <> ''`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("column %s after the upgrade: %d rows set, %v", col, n, err)
		}
	}
	var def string
	if err := c.QueryRow(ctx, `SELECT pg_get_functiondef('baton.swap_many'::regproc)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "GET DIAGNOSTICS v_n") || strings.Contains(def, "WITH d AS MATERIALIZED") {
		t.Fatal("swap_many after the upgrade is not version 6's (its one-statement path locks before the UPDATE)")
	}
	// The upgraded store takes over both names in one batch (the
	// one-statement path), logging after the old release's events.
	var swaps []store.Swap
	for _, n := range names {
		rec, err := s.Get(ctx, n)
		if err != nil || rec.Version != versions[n] {
			t.Fatalf("Get(%s) after the upgrade: %+v, %v", n, rec, err)
		}
		next := rec
		next.Holder, next.Incarnation, next.Token = "n2", "n2-1", rec.Token+1
		swaps = append(swaps, store.Swap{Expect: rec.Version, Record: next, Event: store.TakenOver})
	}
	res, err := s.SwapMany(ctx, swaps)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil || r.Record.Holder != "n2" || r.Record.Token != 4 {
			t.Fatalf("takeover of %s after the upgrade: %+v", names[i], r)
		}
		evs, err := s.History(ctx, names[i], 0, 0)
		if err != nil || len(evs) != 2 || evs[1].Seq != 2 || evs[1].Kind != store.TakenOver {
			t.Fatalf("History(%s) after the upgrade: %+v, %v", names[i], evs, err)
		}
		versions[names[i]] = r.Record.Version
	}
	// A process of the previous release is refused: its call, with the
	// id it read, is answered with no rows (ErrReplaced), and writes
	// nothing; so is its swap_one.
	rows, err = c.Query(ctx, oldSwapMany, id, []int32{1}, []string{"billing"}, []int64{versions["billing"]}, []string{"n1"},
		[]string{"n1-1"}, []int64{5}, []int64{int64(3 * time.Second)}, []string{""}, []string{""}, []string{string(store.TakenOver)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Err() != nil || n != 0 {
		t.Fatalf("a version %s call after the upgrade: %d rows, %v; want none", from, n, rows.Err())
	}
	var one int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM baton.swap_one($1, 'billing', $2, 'n1', 'n1-1', 5, 1000, '', '', '')`, id, versions["billing"]).Scan(&one); err != nil || one != 0 {
		t.Fatalf("a version %s swap_one after the upgrade: %d rows, %v; want none", from, one, err)
	}
	if got, _ := s.Get(ctx, "billing"); got.Version != versions["billing"] || got.Holder != "n2" {
		t.Fatalf("the old release's calls wrote: %+v", got)
	}
}

// A version 7 store (testdata/schema_v7.sql, as ae08c6c created it) is
// read as it is by a read-only opener and upgraded in place by a writer,
// which replaces the record functions: swap_one's notification then names
// the record it wrote and its version, and its outcomes are version 7's,
// so the store keeps its id and a process of the previous release that
// opened it before goes on.
func TestSchemaUpgradeFrom7(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url, id, c := storeAt(t, "7")
	ctx := testCtx(t)
	s, v := upgradeKeepingID(t, url, id, c, "7")
	defer s.Close()
	var applied bool
	// The previous release's call goes on, with the id it read, and its
	// notification now names the record and its version.
	if _, err := c.Exec(ctx, `LISTEN baton_baton`); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, oldSwapOne, id, v, 2, string(store.TakenOver)).Scan(&applied, &v); err != nil || !applied {
		t.Fatalf("version 7 swap_one after the upgrade: %v, %v", applied, err)
	}
	n, err := c.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("write %d billing", v); n.Payload != want {
		t.Fatalf("swap_one's notification after the upgrade: %q, want %q", n.Payload, want)
	}
	if rec, err := s.Get(ctx, "billing"); err != nil || rec.Version != v || rec.Token != 2 {
		t.Fatalf("Get after the upgrade: %+v, %v", rec, err)
	}
	if evs, err := s.History(ctx, "billing", 0, 0); err != nil || len(evs) != 2 || evs[1].Kind != store.TakenOver {
		t.Fatalf("History after the upgrade: %+v, %v", evs, err)
	}
}

// A version 8 store (testdata/schema_v8.sql, as e846c1c created it) is
// upgraded in place by a writer, which replaces the election table's
// CHECK constraints with triggers (checkTriggers) that refuse the same
// rows: the store keeps its id, and a process of the previous release
// that opened it before goes on.
func TestSchemaUpgradeFrom8(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url, id, c := storeAt(t, "8")
	ctx := testCtx(t)
	s, v := upgradeKeepingID(t, url, id, c, "8")
	defer s.Close()
	var applied bool
	if err := c.QueryRow(ctx, oldSwapOne, id, v, 2, string(store.TakenOver)).Scan(&applied, &v); err != nil || !applied {
		t.Fatalf("version 8 swap_one after the upgrade: %v, %v", applied, err)
	}
	rec, err := s.Get(ctx, "billing")
	if err != nil || rec.Version != v || rec.Token != 2 {
		t.Fatalf("Get after the upgrade: %+v, %v", rec, err)
	}
	if _, err := s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
		t.Fatalf("a renewal after the upgrade: %v", err)
	}
	// The rule the token's constraint held is a trigger's now.
	if _, err := c.Exec(ctx, `UPDATE baton.election SET token = -1 WHERE name = 'billing'`); err == nil || !strings.Contains(err.Error(), "election_token_check") {
		t.Fatalf("a negative token after the upgrade: %v, want election_token_check's refusal", err)
	}
}

// oldSwapOne is swap_one's call as the releases of schemas 7 and 8 make
// it, on the name billing.
const oldSwapOne = `SELECT o_applied, o_version FROM baton.swap_one($1, 'billing', $2, 'n1', 'n1-1', $3, 3000000000, '', '', $4)`

// upgradeKeepingID takes a store at schema version from (storeAt: url,
// id, c) through an upgrade that keeps its id: the previous release
// acquires billing (oldSwapOne, at version v), a read-only opener reads
// it and leaves the schema as it is, and a writer upgrades it, keeping
// the store's id, to the rules of this release (checkRules). It returns
// the writer's Store.
func upgradeKeepingID(t *testing.T, url, id string, c *pgx.Conn, from string) (s *postgres.Store, v int64) {
	t.Helper()
	ctx := testCtx(t)
	var applied bool
	if err := c.QueryRow(ctx, oldSwapOne, id, 0, 1, string(store.Acquired)).Scan(&applied, &v); err != nil || !applied {
		t.Fatalf("version %s swap_one: %v, %v", from, applied, err)
	}
	ro, err := postgres.Open(ctx, url, postgres.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := ro.Get(ctx, "billing"); err != nil || rec.Version != v {
		t.Fatalf("read-only Get of a version %s store: %+v, %v", from, rec, err)
	}
	if _, err := ro.Candidates(ctx, "billing"); err != nil {
		t.Fatalf("read-only Candidates of a version %s store (no attrs column): %v", from, err)
	}
	ro.Close()
	if got := schemaVersion(t, url); got != from {
		t.Fatalf("a read-only open changed the schema version to %s", got)
	}
	s = open(t, url)
	if got := schemaVersion(t, url); got != strconv.Itoa(postgres.SchemaVersion) {
		s.Close()
		t.Fatalf("schema version after a writable open: %s, want %d", got, postgres.SchemaVersion)
	}
	if got := storeID(t, url); got != id || s.StoreID() != id {
		s.Close()
		t.Fatalf("store id after the upgrade: %s (handle %s), want the old one %s", got, s.StoreID(), id)
	}
	checkRules(t, c)
	return s, v
}

// checkRules fails t unless the election table's rules are schema 9's:
// the three triggers of checkTriggers and no CHECK constraint.
func checkRules(t *testing.T, c *pgx.Conn) {
	t.Helper()
	ctx := testCtx(t)
	var checks, triggers []string
	if err := c.QueryRow(ctx, `SELECT
			coalesce((SELECT array_agg(conname::text ORDER BY conname) FROM pg_constraint WHERE conrelid = 'baton.election'::regclass AND contype = 'c'), '{}'),
			coalesce((SELECT array_agg(tgname::text ORDER BY tgname) FROM pg_trigger WHERE tgrelid = 'baton.election'::regclass AND NOT tgisinternal), '{}')`).Scan(&checks, &triggers); err != nil {
		t.Fatal(err)
	}
	want := []string{"election_successor_check", "election_successor_holder_check", "election_token_check"}
	if len(checks) != 0 || !slices.Equal(triggers, want) {
		t.Fatalf("the election table's rules: checks %v, triggers %v; want no check, triggers %v", checks, triggers, want)
	}
}
