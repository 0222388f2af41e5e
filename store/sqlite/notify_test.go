package sqlite_test

import (
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

// TestChangeFeedWokenByCommits: on Linux the change feed does not wait for
// its poll: with a poll interval of 10s, commits through another handle
// of the file (another connection, as another process's) are on the feed
// with a median delay under 2s (they are milliseconds; the poll alone
// would give about 5s), and a renewal, which the feed leaves out, between
// them changes nothing.
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
	const interval = 10 * time.Second
	r, err := sqlite.Open(ctx(t), path, sqlite.WithWatchInterval(interval))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	feed := r.WatchChanges(ctx(t))
	rec, err := w.Swap(ctx(t), store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Second}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	var took []time.Duration
	for i := range 5 {
		if rec, err = w.Swap(ctx(t), store.Swap{Expect: rec.Version, Record: rec}); err != nil { // a renewal: not on the feed
			t.Fatal(err)
		}
		next := rec
		next.Transfer = map[string]string{"": "n2"}[rec.Transfer]
		start := time.Now()
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
			case <-time.After(3 * interval):
				t.Fatalf("write %d: not on the feed within %v, with a poll interval of %v", i, 3*interval, interval)
			}
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("commit to feed: %v", took)
	if took[len(took)/2] > 2*time.Second {
		t.Fatalf("commit to feed took %v (median %v), with a poll interval of %v: the notification does not wake the poller", took, took[len(took)/2], interval)
	}
}
