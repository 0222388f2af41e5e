package sqlite_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testutil"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

// v2Store writes testdata/schema-v2.sql, a store in the layout of schema
// version 2 with a few rows, to a new file and returns its path.
func v2Store(t *testing.T) string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("testdata", "schema-v2.sql"))
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
	if cs, err := s.Candidates(ctx(t), "billing"); err != nil || len(cs) != 1 || cs[0].Node != "n2" {
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

	before := testutil.Files(t, filepath.Dir(path))
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
	testutil.SameFiles(t, "after reading a version 2 store", before, testutil.Files(t, filepath.Dir(path)))

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
