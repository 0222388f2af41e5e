package sqlite_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

func TestOpenReadOnlyMissing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "baton.db")
	_, err := sqlite.Open(ctx(t), path, sqlite.WithReadOnly())
	if !errors.Is(err, store.ErrNotFound) || err.Error() != "no baton store at "+path {
		t.Fatalf("OpenReadOnly of a missing file: %v", err)
	}
	testenv.SameFiles(t, "OpenReadOnly of a missing file", nil, testenv.Files(t, dir))
}

func TestOpenReadOnlyRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "app.db")
	db, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA journal_mode = DELETE; CREATE TABLE invoices (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := testenv.Files(t, dir)
	for _, name := range []string{"app.db", "notes.txt", "empty.db"} {
		_, err := sqlite.Open(ctx(t), filepath.Join(dir, name), sqlite.WithReadOnly())
		if !errors.Is(err, store.ErrSchema) || strings.Contains(err.Error(), "\n") {
			t.Errorf("OpenReadOnly(%s) = %v, want one line wrapping ErrSchema", name, err)
		}
	}
	testenv.SameFiles(t, "after read-only opens of foreign files", before, testenv.Files(t, dir))
}

func TestOpenReadOnlyStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "baton.db")
	s := open(t, path)
	if _, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Second}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}

	// While a writer has it open (its -wal exists), a reader sees its
	// commits.
	ro, err := sqlite.Open(ctx(t), path, sqlite.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := ro.Get(ctx(t), "a"); err != nil || rec.Token != 1 {
		t.Fatalf("Get on a live store: %+v, %v", rec, err)
	}
	if _, err := s.Swap(ctx(t), store.Swap{Expect: 0, Record: store.Record{Name: "b", Holder: "n1", Incarnation: "i1", Token: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Get(ctx(t), "b"); err != nil {
		t.Fatalf("a read-only reader does not see a later commit: %v", err)
	}
	if _, err := ro.Swap(ctx(t), store.Swap{Record: store.Record{Name: "c", Holder: "n1", Incarnation: "i1", Token: 1}}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Swap on a read-only store: %v, want ErrInvalid", err)
	}
	ro.Close()
	s.Close()

	// Closed and read-only on disk: every file byte-identical, none added.
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	before := testenv.Files(t, dir)
	ro, err = sqlite.Open(ctx(t), path, sqlite.WithReadOnly())
	if err != nil {
		t.Fatalf("OpenReadOnly of a 0444 store: %v", err)
	}
	if evs, err := ro.History(ctx(t), "a", 0, 0); err != nil || len(evs) != 1 {
		t.Fatalf("History: %v, %v", evs, err)
	}
	if _, err := ro.RecentRuns(ctx(t), "a", "", 10); err != nil {
		t.Fatal(err)
	}
	ro.Close()
	testenv.SameFiles(t, "after reading a closed 0444 store", before, testenv.Files(t, dir))
}

// A version 1 store is read as it is by a read-only opener and upgraded in
// place by a writer.
func TestSchemaVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	s := open(t, path)
	if _, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`ALTER TABLE baton_jobs DROP COLUMN prefer; ALTER TABLE baton_jobs DROP COLUMN prefer_hysteresis_ns; ALTER TABLE baton_jobs DROP COLUMN suspended_ns; ALTER TABLE baton_jobs DROP COLUMN suspended_by; ALTER TABLE baton_jobs DROP COLUMN suspend_reason; DROP INDEX baton_election_changed; ALTER TABLE baton_election DROP COLUMN changed; ALTER TABLE baton_election DROP COLUMN log_seq; DROP INDEX baton_election_session; ALTER TABLE baton_election DROP COLUMN successor; ALTER TABLE baton_election DROP COLUMN successor_holder; ALTER TABLE baton_election DROP COLUMN successor_incarnation; UPDATE baton_meta SET key = 'last_version' WHERE key = 'version_counter'; ALTER TABLE baton_election DROP COLUMN session; ALTER TABLE baton_election_log DROP COLUMN detail; DROP TABLE baton_candidates; UPDATE baton_meta SET value = 1 WHERE key = 'schema_version'`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	ro, err := sqlite.Open(ctx(t), path, sqlite.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := ro.History(ctx(t), "a", 0, 0); err != nil || len(evs) != 1 {
		t.Fatalf("History of a version 1 store: %v, %v", evs, err)
	}
	if cs, err := ro.Candidates(ctx(t), "a"); err != nil || len(cs) != 0 {
		t.Fatalf("Candidates of a version 1 store: %v, %v", cs, err)
	}
	ro.Close()

	s = open(t, path)
	if err := s.Heartbeat(ctx(t), store.Candidate{Name: "a", Node: "x", Incarnation: "x1", Every: time.Second}); err != nil {
		t.Fatalf("Heartbeat after the upgrade: %v", err)
	}
	if evs, err := s.History(ctx(t), "a", 0, 0); err != nil || len(evs) != 1 {
		t.Fatalf("History after the upgrade: %v, %v", evs, err)
	}
}
