package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/electortest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

// TestElector runs the shared real-time elector scenarios (handovers by
// resignation, a leader cut off from the store, the store replaced) on one
// SQLite file that every node opens with its own handle, as the processes
// of one host do.
func TestElector(t *testing.T) {
	// Its scenarios run side by side (electortest.Run); so does it,
	// beside the package's other parallel tests (one at a time in CI):
	// serial, it held the package's serial tests back 5.9 s.
	testenv.ParallelUnlessLong(t)
	electortest.Run(t, electortest.Backend{
		Timing: electorTiming,
		Fresh: func(t *testing.T) electortest.Location {
			path := filepath.Join(t.TempDir(), "baton.db")
			open := opener(t, path)
			return electortest.Location{
				Open: open,
				// The file deleted and a new store created at its path by
				// another process.
				Replace: func() {
					for _, suffix := range []string{"", "-wal", "-shm"} {
						os.Remove(path + suffix)
					}
					open("replacer").Close()
				},
			}
		},
	})
}

// TestElectorStoreOverwrittenInPlace: a copy of another store written over
// the file in place (cp other.db baton.db: the same inode) under a leader
// and a contender. The leader steps down at its next renewal with
// ErrStoreLost wrapping store.ErrReplaced, and neither campaigns again.
func TestElectorStoreOverwrittenInPlace(t *testing.T) {
	electortest.StoreReplaced(t, electortest.Backend{
		Timing: electorTiming,
		Fresh: func(t *testing.T) electortest.Location {
			dir := t.TempDir()
			path, otherPath := filepath.Join(dir, "baton.db"), filepath.Join(dir, "other.db")
			other := opener(t, otherPath)("other")
			if err := other.Close(); err != nil {
				t.Fatal(err)
			}
			return electortest.Location{
				Open: opener(t, path),
				Replace: func() {
					b, err := os.ReadFile(otherPath)
					if err != nil {
						t.Error(err)
						return
					}
					if err := os.WriteFile(path, b, 0o600); err != nil { // O_TRUNC: the same inode
						t.Error(err)
					}
				},
			}
		},
	})
}

// opener returns a function that opens a handle on the store at path.
func opener(t *testing.T, path string) func(string) store.Store {
	return func(string) store.Store {
		st, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
}

// electorTiming is the real-time elector scenarios' timing on SQLite.
var electorTiming = electortest.Timing{
	Lease:      time.Second,
	Renew:      250 * time.Millisecond,
	Margin:     50 * time.Millisecond,
	Poll:       50 * time.Millisecond,
	Slack:      150 * time.Millisecond, // how late a deadline may be noticed (race detector, two shared cores)
	WriteEvery: 50 * time.Millisecond,
}
