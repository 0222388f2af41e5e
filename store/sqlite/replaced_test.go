package sqlite_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/sqlitetest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

func acquire(name, node string, token uint64) store.Swap {
	return store.Swap{Expect: 0, Record: store.Record{Name: name, Holder: node, Incarnation: node + "-1", Token: token}, Event: store.Acquired}
}

// A store whose file is deleted, replaced by a fresh store, or overwritten
// in place with another store's copy answers every later call with
// ErrReplaced: the leader on it finds out at its next call.
func TestStoreReplaced(t *testing.T) {
	for _, how := range []string{"deleted", "fresh store at the path", "moved away", "overwritten with another store"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "baton.db")
			s := open(t, path)
			rec, err := s.Swap(ctx(t), acquire("billing", "n1", 1))
			if err != nil {
				t.Fatal(err)
			}
			id := s.StoreID()
			if id == "" || id == "0" {
				t.Fatalf("StoreID() = %q", id)
			}
			switch how {
			case "deleted":
				for _, suffix := range []string{"", "-wal", "-shm"} {
					if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
						t.Fatal(err)
					}
				}
			case "fresh store at the path":
				for _, suffix := range []string{"", "-wal", "-shm"} {
					os.Remove(path + suffix)
				}
				other := open(t, path)
				if other.StoreID() == id {
					t.Fatalf("a fresh store has the id %s of the one it replaced", id)
				}
				if _, err := other.Swap(ctx(t), acquire("billing", "n2", 1)); err != nil {
					t.Fatal(err)
				}
			case "moved away":
				if err := os.Rename(path, path+".old"); err != nil {
					t.Fatal(err)
				}
			case "overwritten with another store":
				// The same file (inode) holding another store, as when a
				// backup of another store is copied over it in place.
				db, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.Exec(`UPDATE baton_meta SET value = value + 1 WHERE key = 'store_id'`); err != nil {
					t.Fatal(err)
				}
			}
			_, err = s.Swap(ctx(t), store.Swap{Expect: rec.Version, Record: rec})
			if !errors.Is(err, store.ErrReplaced) || !store.Permanent(err) {
				t.Fatalf("renewal after the store was %s: %v, want ErrReplaced", how, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			t.Logf("%s: %v", how, err)
			if how == "overwritten with another store" {
				return // reads of the same file go on; every write is refused
			}
			if _, err := s.Get(ctx(t), "billing"); !errors.Is(err, store.ErrReplaced) {
				t.Fatalf("Get after the store was %s: %v, want ErrReplaced", how, err)
			}
			if _, err := s.Runs(ctx(t), "billing", "", 0); !errors.Is(err, store.ErrReplaced) {
				t.Fatalf("Runs after the store was %s: %v, want ErrReplaced", how, err)
			}
		})
	}
}

// A new store and its -wal and -shm files are readable by their owner only.
func TestFileModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	s := open(t, path)
	if _, err := s.Swap(ctx(t), acquire("billing", "n1", 1)); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s has mode %o, want 600", filepath.Base(path+suffix), m)
		}
	}
}

// A store with a corrupt page in the ledger is refused at Open with
// ErrCorrupt, a permanent error naming the file on one line, not
// ErrUnavailable.
func TestCorruptPage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	sqlitetest.CorruptLedger(t, path, "billing")
	_, err := sqlite.Open(ctx(t), path)
	if !errors.Is(err, store.ErrCorrupt) || !store.Permanent(err) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Open of a corrupt store: %v, want ErrCorrupt naming %s on one line", err, path)
	}
	t.Logf("%v", err)
}
