package storetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
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

// testFeedInOrder: a store that says how far its feed has reported
// (store.OrderedFeed) says so on the last entry of a batch alone (0: not
// yet), never less than before, and hands out no batch whose Through is
// at or above the version of a write that was sent after another write
// returned, before it named that other write: writes from several
// handles at once, alone and in batches, each named under their version
// or a later one of the same record, while a session record is renewed
// beside them (renewals are not writes whose order is promised, and must
// not make a Through claim too much). "Sent after it returned" is the
// test's view of "drew its version after it committed", the promise;
// where versions rise in commit order, the store promises more than this
// checks. The feed is
// read while the writes run, so that its batches' claims are checked
// while later writes are still to come. A feed whose Through runs ahead
// of what it reported fails it (memstore's TestFeedInOrderSeesAFeedAhead).
func testFeedInOrder(t *testing.T, open func() store.Store) {
	s := open()
	if !store.OrderedFeedOf(s) {
		return
	}
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	ch := s.WatchChanges(c)
	const writers, rounds = 4, 30
	// A write's sent and returned are ticks of one counter, taken before
	// the call and after it returned.
	type write struct {
		name           string
		version        int64
		sent, returned int64
	}
	var tick atomic.Int64
	writes := make([][]write, writers)
	var wg sync.WaitGroup
	// Read the batches while the writes run, until one names the last
	// write (lastV, once the writes are done), keeping what each had
	// reported so far and the largest version it named: a feed read only
	// at the end may report everything in one batch, which claims
	// nothing a reader could act on too early.
	type mark struct {
		through int64
		seen    map[string]int64
	}
	var (
		marks []mark
		lastV atomic.Int64
	)
	wake, done := make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]int64{}
		for {
			if l := lastV.Load(); l > 0 && seen["_last"] >= l {
				return
			}
			var batch []store.Change
			select {
			case b, ok := <-ch:
				if !ok {
					if c.Err() == nil {
						t.Error("the change feed closed before ctx ended")
					}
					return
				}
				batch = b
			case <-wake:
				continue
			}
			if len(batch) == 0 {
				continue
			}
			for i, e := range batch {
				seen[e.Name] = max(seen[e.Name], e.Version)
				seen["_last"] = max(seen["_last"], e.Version)
				if e.Through != 0 && i != len(batch)-1 {
					t.Errorf("entry %d of a batch of %d has Through %d: only the last has one", i, len(batch), e.Through)
					return
				}
			}
			through := batch[len(batch)-1].Through
			if through != 0 && len(marks) > 0 && through < marks[len(marks)-1].through {
				t.Errorf("batch %d has Through %d, below the %d of the batch before", len(marks), through, marks[len(marks)-1].through)
				return
			}
			marks = append(marks, mark{through, maps.Clone(seen)})
		}
	}()
	sess := mustSwap(t, s, store.Swap{Record: session("order-renewer")})
	wg.Go(func() {
		h := open()
		for range rounds {
			next := sess
			next.Updated = time.Time{}
			r, err := h.Swap(ctx(t), store.Swap{Expect: sess.Version, Record: next})
			if err != nil {
				t.Error(err)
				return
			}
			sess = r
		}
	})
	for w := range writers {
		h := open()
		wg.Go(func() {
			for r := range rounds {
				name := fmt.Sprintf("order-%d-%d", w, r%5)
				var swaps []store.Swap
				for i := range 1 + r%3 {
					swaps = append(swaps, store.Swap{Record: acquire(fmt.Sprintf("%s-%d", name, i), "n1", uint64(r+1)), Expect: 0})
				}
				for i := range swaps {
					if cur, err := h.Get(ctx(t), swaps[i].Record.Name); err == nil {
						swaps[i].Expect = cur.Version
					}
				}
				sent := tick.Add(1)
				res, err := h.SwapMany(ctx(t), swaps)
				returned := tick.Add(1)
				if err != nil {
					t.Error(err)
					return
				}
				for _, x := range res {
					if x.Err != nil {
						t.Error(x.Err)
						return
					}
					writes[w] = append(writes[w], write{x.Record.Name, x.Record.Version, sent, returned})
				}
			}
		})
	}
	wg.Wait()
	var all []write
	for _, ws := range writes {
		all = append(all, ws...)
	}
	last := int64(0)
	for _, x := range all {
		last = max(last, x.version)
	}
	lastV.Store(last)
	wake <- struct{}{}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cancel()
		<-done
		t.Fatalf("the change feed did not name version %d within 10s of the last write", last)
	}
	if t.Failed() {
		return
	}
	for i, m := range marks {
		// The last send of a write at or below Through: every write that
		// returned before it must have been named.
		var by write
		for _, x := range all {
			if x.version <= m.through && x.sent > by.sent {
				by = x
			}
		}
		for _, y := range all {
			if y.returned < by.sent && m.seen[y.name] < y.version {
				t.Fatalf("batch %d reports through version %d, but the write of %s at version %d, which returned before the write of %s at version %d was sent, was not named by then (%d)",
					i, m.through, y.name, y.version, by.name, by.version, m.seen[y.name])
			}
		}
	}
}
