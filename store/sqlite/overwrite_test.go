package sqlite_test

import (
	"database/sql"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/store"
)

// A store's file overwritten in place (cp other.db baton.db: the same
// inode, other bytes) is noticed at the next renewal, write and read,
// with ErrReplaced on one line naming the file: SQLite itself would go on
// from its cached pages and the -wal file, which the copy left alone.
func TestStoreOverwrittenInPlace(t *testing.T) {
	for _, how := range []string{"copy of another store", "copy of a store with no mark", "not a database", "truncated"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path, otherPath := filepath.Join(dir, "baton.db"), filepath.Join(dir, "other.db")
			s := open(t, path)
			rec, err := s.Swap(ctx(t), acquire("billing", "n1", 1))
			if err != nil {
				t.Fatal(err)
			}
			if rec, err = s.Swap(ctx(t), store.Swap{Expect: rec.Version, Record: rec}); err != nil {
				t.Fatal(err)
			}
			// A new store's mark is in the file itself at once, not only
			// in its -wal file: a copy made a moment later is noticed.
			if mark := fileMark(t, path); mark == 0 {
				t.Fatalf("the new store's file has no mark in its header")
			}
			other := open(t, otherPath)
			if _, err := other.Swap(ctx(t), acquire("billing", "n2", 1)); err != nil {
				t.Fatal(err)
			}
			if err := other.Close(); err != nil {
				t.Fatal(err)
			}
			if how == "copy of a store with no mark" { // as an older baton made it
				db, err := sql.Open("sqlite", otherPath)
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range []string{`PRAGMA application_id = 0`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
					if _, err := db.Exec(q); err != nil {
						t.Fatal(err)
					}
				}
				db.Close()
			}
			b, err := os.ReadFile(otherPath)
			if err != nil {
				t.Fatal(err)
			}
			switch how {
			case "not a database":
				b = []byte(strings.Repeat("not a database\n", 300))
			case "truncated":
				b = nil
			}
			if err := os.WriteFile(path, b, 0o600); err != nil { // O_TRUNC: the same inode
				t.Fatal(err)
			}
			_, err = s.Swap(ctx(t), store.Swap{Expect: rec.Version, Record: rec})
			if !errors.Is(err, store.ErrReplaced) || !store.Permanent(err) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("renewal after the file was overwritten in place (%s): %v, want ErrReplaced naming the file on one line", how, err)
			}
			t.Log(err)
			if _, err := s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "billing", Period: "p", State: store.Pending}}); !errors.Is(err, store.ErrReplaced) {
				t.Errorf("write after the file was overwritten in place: %v, want ErrReplaced", err)
			}
			if _, err := s.Get(ctx(t), "billing"); !errors.Is(err, store.ErrReplaced) {
				t.Errorf("read after the file was overwritten in place: %v, want ErrReplaced", err)
			}
		})
	}
}

// A store made by an older baton (no mark) gets its mark at Open, and goes
// on as before.
func TestStoreMarkedAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	s := open(t, path)
	if _, err := s.Swap(ctx(t), acquire("billing", "n1", 1)); err != nil {
		t.Fatal(err)
	}
	mark := fileMark(t, path)
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`PRAGMA application_id = 0`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if got := fileMark(t, path); got != 0 {
		t.Fatalf("mark %08x after it was cleared", got)
	}
	s = open(t, path)
	if got := fileMark(t, path); got != mark {
		t.Fatalf("mark %08x after Open, want the store's %08x again", got, mark)
	}
	if rec, err := s.Get(ctx(t), "billing"); err != nil || rec.Holder != "n1" {
		t.Fatalf("Get after the store was marked: %+v, %v", rec, err)
	}
}

// fileMark returns the application id in the header of the file at path,
// as the file itself holds it.
func fileMark(t *testing.T, path string) uint32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var h [100]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		t.Fatalf("reading the header of %s: %v", path, err)
	}
	return binary.BigEndian.Uint32(h[68:])
}
