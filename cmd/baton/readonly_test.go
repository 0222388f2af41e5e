package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

// The read commands never create or change a file: a missing store is
// "no baton store at ABSOLUTE PATH" (exit 1), a foreign SQLite database is
// refused and stays byte-identical, and a read-only store can be read.
func TestReadCommandsNeverWrite(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	reads := [][]string{{"status", "billing"}, {"runs", "billing"}, {"history", "billing"}, {"next", "billing"}}

	for _, args := range reads {
		code, out, errOut := runBaton(t, append(args, "--store", "sqlite:baton.db")...)
		want := "no baton store at " + filepath.Join(dir, "baton.db")
		if code != exitFailure || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%v on a missing store: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errOut, want)
		}
	}
	if sums := testenv.Files(t, dir); len(sums) != 0 {
		t.Fatalf("files created by read commands: %v", sums)
	}

	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount INTEGER); INSERT INTO invoices (amount) VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := testenv.Files(t, dir)
	for _, args := range reads {
		code, _, errOut := runBaton(t, append(args, "--store", "sqlite:app.db")...)
		if code == exitOK || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "not a baton store") {
			t.Errorf("%v on a foreign database: exit %d, stderr %q", args, code, errOut)
		}
	}
	testenv.SameFiles(t, "foreign database after read commands", before, testenv.Files(t, dir))

	// A real store, closed, made read-only: status reads it and nothing
	// changes, not even a -wal or -shm file appears.
	path := filepath.Join(dir, "baton.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Swap(context.Background(), store.Swap{Record: store.Record{Name: "billing", Holder: "a", Incarnation: "a-1", Token: 1, Lease: 15 * time.Second}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	before = testenv.Files(t, dir)
	code, out, errOut := runBaton(t, "status", "--store", "sqlite:"+path, "billing")
	if code != exitOK || !strings.Contains(out, "holder:    a (incarnation a-1)") {
		t.Errorf("status on a 0444 store: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range reads[1:3] {
		if code, out, errOut := runBaton(t, append(args, "--store", "sqlite:"+path)...); code != exitOK {
			t.Errorf("%v on a 0444 store: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	testenv.SameFiles(t, "read-only store after read commands", before, testenv.Files(t, dir))
}
