package storetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

func testWatchChanges(t *testing.T, open func() store.Store) {
	s := open()
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	mustSwap(t, s, store.Swap{Record: acquire("quiet", "n1", 1), Event: store.Acquired})
	ch := s.WatchChanges(c)
	// Changes through another handle, one alone and a batch of them: every
	// name comes, with the version the write gave it; the unchanged one
	// need not.
	other := open()
	rec := mustSwap(t, other, store.Swap{Record: acquire("c1", "n2", 1), Event: store.Acquired})
	want := map[string]int64{"c1": rec.Version}
	var swaps []store.Swap
	for i := range 50 {
		swaps = append(swaps, store.Swap{Record: acquire(fmt.Sprintf("c-batch-%02d", i), "n2", 1), Event: store.Acquired})
	}
	res, err := s.SwapMany(ctx(t), swaps)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		want[r.Record.Name] = r.Record.Version
	}
	deadline := time.After(10 * time.Second)
	for len(want) > 0 {
		select {
		case batch, open := <-ch:
			if !open {
				t.Fatalf("change feed closed before ctx ended; still missing %d names", len(want))
			}
			for _, c := range batch {
				if v, ok := want[c.Name]; ok && c.Version == v {
					delete(want, c.Name)
				}
			}
		case <-deadline:
			t.Fatalf("change feed did not name %d changed records at their versions within 10s, e.g. %v", len(want), slices.Collect(maps.Keys(want))[:1])
		}
	}
	cancel()
	for range ch {
	}
}

// testWatchSessionRenewals: a session's renewal (a Swap at the record's
// version that changes only Version and Updated: what a Group writes
// once per renew interval) is on the change feed at its version, made
// through the watching handle or another one, renewal after renewal; a
// name's renewal need not be (store.Store.WatchChanges), a session's must
// be, because its observers learn of it there.
func testWatchSessionRenewals(t *testing.T, open func() store.Store) {
	s := open()
	other := open()
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	sess := mustSwap(t, s, store.Swap{Record: session("n1")})
	ch := s.WatchChanges(c)
	deadline := time.After(10 * time.Second)
	for i := range 4 {
		via := s
		if i%2 == 1 {
			via = other
		}
		sess = mustSwap(t, via, store.Swap{Expect: sess.Version, Record: sess})
		for found := false; !found; {
			select {
			case batch, open := <-ch:
				if !open {
					t.Fatalf("change feed closed before ctx ended; waiting for renewal %d of %s", i, sess.Name)
				}
				for _, c := range batch {
					found = found || c.Name == sess.Name && c.Version >= sess.Version
				}
			case <-deadline:
				t.Fatalf("change feed did not name renewal %d of session %s (version %d) within 10s", i, sess.Name, sess.Version)
			}
		}
	}
	cancel()
	for range ch {
	}
}
