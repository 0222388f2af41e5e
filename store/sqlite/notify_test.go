package sqlite_test

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

// TestChangeFeedWokenByCommits: on Linux the change feed does not wait for
// its poll: with a poll interval of an hour, a commit through another
// handle of the file (another connection, as another process's) is on the
// feed within seconds, however loaded the machine, and a renewal, which
// the feed leaves out, wakes the poller without a batch.
func TestChangeFeedWokenByCommits(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the change feed is woken by inotify on Linux only; elsewhere it polls")
	}
	path := filepath.Join(t.TempDir(), "baton.db")
	w, err := sqlite.Open(ctx(t), path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := sqlite.Open(ctx(t), path, sqlite.WithWatchInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	feed := r.WatchChanges(ctx(t))
	rec, err := w.Swap(ctx(t), store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Second}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if rec, err = w.Swap(ctx(t), store.Swap{Expect: rec.Version, Record: rec}); err != nil { // a renewal: not on the feed
			t.Fatal(err)
		}
		next := rec
		next.Transfer = map[string]string{"": "n2"}[rec.Transfer]
		if rec, err = w.Swap(ctx(t), store.Swap{Expect: rec.Version, Record: next}); err != nil {
			t.Fatal(err)
		}
		for seen := false; !seen; {
			select {
			case batch, ok := <-feed:
				if !ok {
					t.Fatal("feed closed")
				}
				for _, c := range batch {
					seen = seen || c.Name == "a" && c.Version >= rec.Version
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("write %d: not on the feed within 20s with a poll interval of an hour", i)
			}
		}
	}
}
