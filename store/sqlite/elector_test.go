package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/electortest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

// TestElector runs the shared real-time elector scenarios (handovers by
// resignation, a leader cut off from the store, the store replaced) on one
// SQLite file that every node opens with its own handle, as the processes
// of one host do.
func TestElector(t *testing.T) {
	electortest.Run(t, electortest.Backend{
		Timing: electortest.Timing{
			Lease:      time.Second,
			Renew:      250 * time.Millisecond,
			Margin:     50 * time.Millisecond,
			Poll:       50 * time.Millisecond,
			Slack:      150 * time.Millisecond, // how late a deadline may be noticed (race detector, two shared cores)
			WriteEvery: 50 * time.Millisecond,
		},
		Fresh: func(t *testing.T) electortest.Location {
			path := filepath.Join(t.TempDir(), "baton.db")
			open := func(string) store.Store {
				st, err := sqlite.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st
			}
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
