package sqlite_test

import (
	"database/sql"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

// v2Store writes testdata/schema-v2.sql, a store in the layout of schema
// version 2 with a few rows, to a new file and returns its path.
func v2Store(t *testing.T) string {
	t.Helper()
	return scriptStore(t, "schema-v2.sql")
}

// scriptStore runs the SQL script testdata/file on a new file and returns
// its path.
func scriptStore(t *testing.T, file string) string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "baton.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(string(script)); err != nil {
		t.Fatal(err)
	}
	return path
}

// billing is the record of "billing" in testdata/schema-v2.sql.
var billing = store.Record{Name: "billing", Holder: "n1", Incarnation: "i1", Token: 2, Lease: 15 * time.Second, Version: 3,
	Updated: time.Unix(0, 1764547200000000000).UTC()}

// checkV2Rows checks that s holds the rows of testdata/schema-v2.sql.
func checkV2Rows(t *testing.T, s *sqlite.Store) {
	t.Helper()
	if got, err := s.Get(ctx(t), "billing"); err != nil || got != billing {
		t.Errorf("Get(billing) = %+v, %v; want %+v", got, err, billing)
	}
	if evs, err := s.History(ctx(t), "billing", 0, 0); err != nil || len(evs) != 2 || evs[1].Kind != store.TakenOver || evs[1].Token != 2 {
		t.Errorf("History(billing) = %+v, %v", evs, err)
	}
	if r, err := s.GetRun(ctx(t), "billing", "2026-12-01T00:00:00Z"); err != nil || r.State != store.Done || r.Token != 2 || r.Output != "ok" || r.Version != 2 {
		t.Errorf("GetRun = %+v, %v", r, err)
	}
	if j, err := s.GetJob(ctx(t), "billing"); err != nil || j.Schedule != "every 24h" {
		t.Errorf("GetJob = %+v, %v", j, err)
	}
	if cs, err := s.Candidates(ctx(t), "billing"); err != nil || len(cs) != 1 || cs[0].Node != "n2" || cs[0].Attrs != "" {
		t.Errorf("Candidates = %+v, %v", cs, err)
	}
	if names, err := s.Names(ctx(t)); err != nil || !slices.Equal(names, []string{"billing", "free"}) {
		t.Errorf("Names = %q, %v", names, err)
	}
	if s.StoreID() != "beef" {
		t.Errorf("StoreID = %s, want beef (48879)", s.StoreID())
	}
}

func schemaOf(t *testing.T, path string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int64
	if err := db.QueryRow(`SELECT value FROM baton_meta WHERE key = 'schema_version'`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A version 2 store is read as it is by a read-only opener, without a
// write, and upgraded in place by a writer, keeping its records, log,
// jobs, runs and candidates.
func TestSchemaVersion2Upgrade(t *testing.T) {
	path := v2Store(t)

	before := testenv.Files(t, filepath.Dir(path))
	ro, err := sqlite.Open(ctx(t), path, sqlite.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	checkV2Rows(t, ro)
	res, err := ro.GetMany(ctx(t), []string{"free", "billing", "none"})
	if err != nil || res[0].Record.Version != 4 || res[1].Record != billing || !errors.Is(res[2].Err, store.ErrNotFound) {
		t.Errorf("GetMany on a read-only version 2 store = %+v, %v", res, err)
	}
	ro.Close()
	testenv.SameFiles(t, "after reading a version 2 store", before, testenv.Files(t, filepath.Dir(path)))

	s := open(t, path)
	if v := schemaOf(t, path); v != sqlite.SchemaVersion {
		t.Fatalf("schema version after a writer's open = %d, want %d", v, sqlite.SchemaVersion)
	}
	checkV2Rows(t, s)
	// The upgraded store holds names through sessions, and its version
	// counter goes on from where it was.
	sess, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: store.SessionPrefix + "n3/i3/1", Holder: "n3", Incarnation: "i3", Lease: time.Second}})
	if err != nil || sess.Version != 5 {
		t.Fatalf("session swap after the upgrade = %+v, %v; want version 5", sess, err)
	}
	held := store.Record{Name: "free", Holder: "n3", Incarnation: "i3", Token: 2, Lease: time.Second, Session: sess.Name}
	if _, err := s.Swap(ctx(t), store.Swap{Expect: 4, Record: held, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx(t), "free"); err != nil || got.Session != sess.Name {
		t.Fatalf("Get(free) after the upgrade = %+v, %v", got, err)
	}
	// Its jobs are not suspended, and can be (schema 4).
	if j, err := s.GetJob(ctx(t), "billing"); err != nil || j.Suspension.Active() {
		t.Fatalf("GetJob(billing) after the upgrade = %+v, %v", j, err)
	}
	if j, err := s.SuspendJob(ctx(t), store.JobSuspend{Name: "billing", Suspend: true, By: "ops"}); err != nil || !j.Suspension.Active() || j.Schedule != "every 24h" {
		t.Fatalf("SuspendJob after the upgrade = %+v, %v", j, err)
	}
	s.Close()

	// Read-only, the upgraded store reads sessions too.
	ro, err = sqlite.Open(ctx(t), path, sqlite.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got, err := ro.Get(ctx(t), "free"); err != nil || got.Session != sess.Name {
		t.Fatalf("read-only Get(free) after the upgrade = %+v, %v", got, err)
	}
}

// v5StoreID is the store id of testdata/schema-v5.sql, in hexadecimal.
var v5StoreID = strconv.FormatUint(7507322135225969131, 16)

// v5Seqs is the newest log sequence number of each name in
// testdata/schema-v5.sql.
var v5Seqs = map[string]uint64{"a": 2, "b": 2, "billing": 4, "free": 2, "held": 1, store.SessionPrefix + "n3/i3/1": 0}

// logSeqs reads, from the file at path, each election record's log_seq and
// its log's max(seq).
func logSeqs(t *testing.T, path string) (logSeq, maxSeq map[string]uint64) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name, log_seq, (SELECT coalesce(max(seq), 0) FROM baton_election_log l WHERE l.name = e.name) FROM baton_election e`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	logSeq, maxSeq = map[string]uint64{}, map[string]uint64{}
	for rows.Next() {
		var name string
		var a, b uint64
		if err := rows.Scan(&name, &a, &b); err != nil {
			t.Fatal(err)
		}
		logSeq[name], maxSeq[name] = a, b
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return logSeq, maxSeq
}

// A version 5 store (testdata/schema-v5.sql, written by the version 5
// code) is read as it is by a read-only opener, and upgraded in place by a
// writer: log_seq is set from the log, and each name's history goes on at
// the next sequence number, by every writer of log events.
func TestSchemaVersion5Upgrade(t *testing.T) {
	path := scriptStore(t, "schema-v5.sql")

	before := testenv.Files(t, filepath.Dir(path))
	ro, err := sqlite.Open(ctx(t), path, sqlite.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := ro.History(ctx(t), "billing", 0, 0); err != nil || len(evs) != 4 || evs[3].Kind != store.Rescheduled {
		t.Errorf("read-only History(billing) of a version 5 store = %+v, %v", evs, err)
	}
	if got, err := ro.Get(ctx(t), "held"); err != nil || got.Session != store.SessionPrefix+"n3/i3/1" || got.Version != 11 {
		t.Errorf("read-only Get(held) of a version 5 store = %+v, %v", got, err)
	}
	if cs, err := ro.Candidates(ctx(t), "billing"); err != nil || len(cs) != 1 || cs[0].Node != "n2" || cs[0].Attrs != "" {
		t.Errorf("read-only Candidates(billing) of a version 5 store = %+v, %v", cs, err)
	}
	ro.Close()
	testenv.SameFiles(t, "after reading a version 5 store", before, testenv.Files(t, filepath.Dir(path)))

	s := open(t, path)
	if v := schemaOf(t, path); v != sqlite.SchemaVersion {
		t.Fatalf("schema version after a writer's open = %d, want %d", v, sqlite.SchemaVersion)
	}
	if s.StoreID() != v5StoreID {
		t.Errorf("StoreID = %s, want %s", s.StoreID(), v5StoreID)
	}
	// The candidate row is kept, without attributes, and takes them at
	// its next refresh (the attrs column, version 8).
	if cs, err := s.Candidates(ctx(t), "billing"); err != nil || len(cs) != 1 || cs[0].Node != "n2" || cs[0].Attrs != "" {
		t.Errorf("Candidates(billing) after the upgrade = %+v, %v", cs, err)
	}
	if err := s.Heartbeat(ctx(t), store.Candidate{Name: "billing", Node: "n2", Incarnation: "i2", Every: time.Second, Attrs: "weight=5"}); err != nil {
		t.Fatal(err)
	}
	if cs, err := s.Candidates(ctx(t), "billing"); err != nil || len(cs) != 1 || cs[0].Attrs != "weight=5" {
		t.Errorf("Candidates(billing) after a refresh with attributes = %+v, %v", cs, err)
	}
	logSeq, maxSeq := logSeqs(t, path)
	if !maps.Equal(logSeq, v5Seqs) || !maps.Equal(maxSeq, v5Seqs) {
		t.Fatalf("after the upgrade: log_seq %v, the log's max(seq) %v; want both %v", logSeq, maxSeq, v5Seqs)
	}
	if j, err := s.GetJob(ctx(t), "billing"); err != nil || j.Schedule != "every 12h" || j.Suspension.Active() {
		t.Errorf("GetJob(billing) after the upgrade = %+v, %v", j, err)
	}

	// Every writer of log events: UpdateJob and SuspendJob (appendEvent),
	// a single swap and a SwapMany's general path (swapRows), a batch of
	// takes (takeTx), and a name new to the store.
	if _, err := s.UpdateJob(ctx(t), store.JobUpdate{Name: "billing", Expect: "every 12h", Schedule: "every 6h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SuspendJob(ctx(t), store.JobSuspend{Name: "billing", Suspend: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	billing, err := s.Get(ctx(t), "billing")
	if err != nil {
		t.Fatal(err)
	}
	billing.Holder, billing.Incarnation = "", ""
	if _, err := s.Swap(ctx(t), store.Swap{Expect: billing.Version, Record: billing, Event: store.Released}); err != nil {
		t.Fatal(err)
	}
	var takes []store.Swap
	for _, n := range []string{"a", "b"} {
		r, err := s.Get(ctx(t), n)
		if err != nil {
			t.Fatal(err)
		}
		v := r.Version
		r.Holder, r.Incarnation, r.Token = "n4", "i4", r.Token+1
		takes = append(takes, store.Swap{Expect: v, Record: r, Event: store.TakenOver})
	}
	res, err := s.SwapMany(ctx(t), takes)
	if err != nil {
		t.Fatal(err)
	}
	free, err := s.Get(ctx(t), "free")
	if err != nil {
		t.Fatal(err)
	}
	res2, err := s.SwapMany(ctx(t), []store.Swap{
		{Expect: free.Version, Record: store.Record{Name: "free", Holder: "n4", Incarnation: "i4", Token: free.Token + 1, Lease: time.Second}, Event: store.Acquired},
		{Record: store.Record{Name: "new", Holder: "n4", Incarnation: "i4", Token: 1, Lease: time.Second}, Event: store.Acquired},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(res, res2...) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	want := map[string][]store.EventKind{
		"billing": {store.Acquired, store.Suspended, store.Resumed, store.Rescheduled, store.Rescheduled, store.Suspended, store.Released},
		"a":       {store.Acquired, store.TakenOver, store.TakenOver},
		"b":       {store.Acquired, store.TakenOver, store.TakenOver},
		"free":    {store.Acquired, store.Released, store.Acquired},
		"new":     {store.Acquired},
	}
	for name, kinds := range want {
		evs, err := s.History(ctx(t), name, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []store.EventKind
		for i, ev := range evs {
			if ev.Seq != uint64(i)+1 {
				t.Errorf("History(%s)[%d].Seq = %d, want %d", name, i, ev.Seq, i+1)
			}
			got = append(got, ev.Kind)
		}
		if !slices.Equal(got, kinds) {
			t.Errorf("History(%s) = %v, want %v", name, got, kinds)
		}
	}
	logSeq, maxSeq = logSeqs(t, path)
	if !maps.Equal(logSeq, maxSeq) {
		t.Errorf("after the writes: log_seq %v, the log's max(seq) %v", logSeq, maxSeq)
	}
}

// A baton of version 5 still running when the store is upgraded fails its
// next write, before it appends a log event that log_seq would not count:
// every write of its raises the counter under its old key, last_change,
// which the upgrade renamed.
func TestSchemaVersion5WriterFails(t *testing.T) {
	path := scriptStore(t, "schema-v5.sql")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// The version 5 writes, each as that baton ran it: a swap reads the
	// counter first (swapTx), UpdateJob raises it (nextVersion) and then
	// appends its event at the log's max(seq) + 1 (appendEvent), a
	// renewal reads it inside its UPDATE (renewStmt).
	v5Write := func() error {
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var last int64
		if err := tx.QueryRow(`SELECT value FROM baton_meta WHERE key = 'last_change'`).Scan(&last); err != nil {
			return err
		}
		if err := tx.QueryRow(`UPDATE baton_meta SET value = max(value, 3) + 1 WHERE key = 'last_change' RETURNING value`).Scan(&last); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO baton_election_log (name, seq, kind, holder, incarnation, token, transfer, time_ns, detail)
			VALUES ('billing', (SELECT coalesce(max(seq), 0) + 1 FROM baton_election_log WHERE name = 'billing'), 'rescheduled', 'n1', 'i1', 1, '', 0, '')`); err != nil {
			return err
		}
		return tx.Commit()
	}
	v5Renew := func() error {
		_, err := db.Exec(`UPDATE baton_election SET
			version = max(version, (SELECT value FROM baton_meta WHERE key = 'last_change')) + 1, updated_ns = 1
			WHERE name = 'billing'`)
		return err
	}
	// Before the upgrade, they work (and are undone: the renewal is
	// compared after the upgrade).
	if err := v5Write(); err != nil {
		t.Fatalf("a version 5 write on a version 5 store: %v", err)
	}
	if _, err := db.Exec(`DELETE FROM baton_election_log WHERE name = 'billing' AND seq = 5; UPDATE baton_meta SET value = 11 WHERE key = 'last_change'`); err != nil {
		t.Fatal(err)
	}

	s := open(t, path)
	if err := v5Write(); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("a version 5 write after the upgrade: %v, want sql.ErrNoRows (no counter last_change)", err)
	}
	if err := v5Renew(); err == nil || !strings.Contains(err.Error(), "NOT NULL") {
		t.Errorf("a version 5 renewal after the upgrade: %v, want a NOT NULL constraint failure", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM baton_meta WHERE key IN ('last_change', 'last_version')`).Scan(&n); err != nil || n != 0 {
		t.Errorf("old counter keys after the upgrade: %d, %v; want none", n, err)
	}
	if evs, err := s.History(ctx(t), "billing", 0, 0); err != nil || len(evs) != 4 {
		t.Errorf("History(billing) after the version 5 writes failed = %+v, %v; want its 4 events", evs, err)
	}
	if _, err := s.UpdateJob(ctx(t), store.JobUpdate{Name: "billing", Expect: "every 12h", Schedule: "every 6h"}); err != nil {
		t.Errorf("UpdateJob after the upgrade: %v", err)
	}
}

// A session record deleted with events in its log, then made again,
// continues its log: log_seq went with the record, and the write reads the
// log's newest sequence number.
func TestLogSeqAfterDeleteSession(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "baton.db"))
	name := store.SessionPrefix + "n1/i1/1"
	rec, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: name, Holder: "n1", Incarnation: "i1", Lease: time.Second}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err = s.Swap(ctx(t), store.Swap{Expect: rec.Version, Record: store.Record{Name: name, Lease: time.Second}, Event: store.Released}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx(t), name, rec.Version); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: name, Holder: "n1", Incarnation: "i2", Lease: time.Second}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.History(ctx(t), name, 0, 0)
	if err != nil || len(evs) != 3 || evs[2].Seq != 3 || evs[2].Incarnation != "i2" {
		t.Fatalf("History after the session record was made again = %+v, %v", evs, err)
	}
}
