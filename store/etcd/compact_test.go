package etcd_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// TestFeedAcrossCompaction: a handle's change feed rides on one etcd watch
// through member 0. Member 0 stops; through member 1 the records change
// and, in one case, the cluster compacts past the watch's revision; member
// 0 comes back and the client resumes the watch from where it was. The
// feed must then either name every change made while it was away, at the
// versions now current, or close (the revision it needed is gone), and
// never name a version older than one it named before for a record as
// current. After a close, the handle reads the current versions and a new
// feed names the next change.
func TestFeedAcrossCompaction(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own cluster; mostly waits
	for _, compact := range []bool{false, true} {
		name := "resumed"
		if compact {
			name = "compacted"
		}
		t.Run(name, func(t *testing.T) {
			testenv.ParallelUnlessLong(t)
			c := etcdtest.StartCluster(t, 3)
			prefix := freshPrefix(t)
			s0 := openStore(t, []string{c.Endpoint(0)}, etcd.WithPrefix(prefix), etcd.WithRequestTimeout(reqTimeout))
			defer s0.Close()
			s1 := openStore(t, []string{c.Endpoint(1)}, etcd.WithPrefix(prefix), etcd.WithRequestTimeout(reqTimeout))
			defer s1.Close()
			ctx := bg(t, 60*time.Second)

			a, err := s1.Swap(ctx, store.Swap{Record: acquire("a", "n1", 1), Event: store.Acquired})
			if err != nil {
				t.Fatal(err)
			}
			feed := s0.WatchChanges(ctx)
			seen := map[string]int64{}
			take := func(b []store.Change) {
				t.Helper()
				for _, ch := range b {
					if ch.Version < seen[ch.Name] {
						t.Errorf("the feed named %s at version %d after %d", ch.Name, ch.Version, seen[ch.Name])
					}
					seen[ch.Name] = max(seen[ch.Name], ch.Version)
				}
			}
			if a, err = s1.Swap(ctx, store.Swap{Expect: a.Version, Record: a}); err != nil {
				t.Fatal(err)
			}
			for seen["a"] < a.Version {
				select {
				case b, ok := <-feed:
					if !ok {
						t.Fatal("the feed closed before the member stopped")
					}
					take(b)
				case <-ctx.Done():
					t.Fatalf("the feed did not name a's renewal at %d", a.Version)
				}
			}

			c.Stop(0)
			for range 3 {
				if a, err = s1.Swap(ctx, store.Swap{Expect: a.Version, Record: a}); err != nil {
					t.Fatal(err)
				}
			}
			b, err := s1.Swap(ctx, store.Swap{Record: acquire("b", "n2", 1), Event: store.Acquired})
			if err != nil {
				t.Fatal(err)
			}
			if compact {
				cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Endpoint(1)}, DialTimeout: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				defer cli.Close()
				resp, err := cli.Get(ctx, "compact-probe")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
					t.Fatal(err)
				}
				t.Logf("compacted through revision %d; a is at %d, b at %d", resp.Header.Revision, a.Version, b.Version)
			}
			if err := c.Restart(0); err != nil {
				t.Fatal(err)
			}

			closed := false
			for !closed && (seen["a"] < a.Version || seen["b"] < b.Version) {
				select {
				case batch, ok := <-feed:
					if !ok {
						closed = true
						break
					}
					take(batch)
				case <-ctx.Done():
					t.Fatalf("after the member came back the feed neither named a at %d and b at %d nor closed (saw %v)", a.Version, b.Version, seen)
				}
			}
			t.Logf("compacted %v: feed closed %v, saw %v", compact, closed, seen)
			if compact && !closed {
				t.Errorf("the feed named changes from before a compaction it could not have read: %v", seen)
			}
			if !closed {
				return // every change named, at its current version
			}
			// Closed: re-read, then watch again.
			eventually(t, "read a and b after the feed closed", 20*time.Second, func(ctx context.Context) error {
				for _, want := range []store.Record{a, b} {
					got, err := s0.Get(ctx, want.Name)
					if err != nil {
						return err
					}
					if got.Version != want.Version || got.Holder != want.Holder {
						t.Fatalf("after the feed closed, %s reads as %+v, want version %d (stale)", want.Name, got, want.Version)
					}
				}
				return nil
			})
			feed = s0.WatchChanges(ctx)
			if a, err = s1.Swap(ctx, store.Swap{Expect: a.Version, Record: a}); err != nil {
				t.Fatal(err)
			}
			for seen["a"] < a.Version {
				select {
				case batch, ok := <-feed:
					if !ok {
						t.Fatal("the new feed closed")
					}
					take(batch)
				case <-ctx.Done():
					t.Fatalf("the new feed did not name a's renewal at %d", a.Version)
				}
			}
		})
	}
}
