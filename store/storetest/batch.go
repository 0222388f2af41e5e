package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/batonhq/baton/store"
)

func testSwapMany(t *testing.T, open func() store.Store) {
	s := open()
	a := mustSwap(t, s, store.Swap{Record: acquire("m1", "n1", 1), Event: store.Acquired})
	res, err := s.SwapMany(ctx(t), []store.Swap{
		{Expect: a.Version, Record: a},
		{Expect: 12345, Record: acquire("m2", "n1", 1)},
		{Record: acquire("m3", "n1", 1), Event: store.Acquired},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].Err != nil || !errors.Is(res[1].Err, store.ErrConflict) || res[2].Err != nil {
		t.Fatalf("SwapMany results = %+v", res)
	}
	if res[0].Record.Version == a.Version {
		t.Fatal("renewal in a batch kept the old version")
	}
	if _, err := s.Get(ctx(t), "m2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a conflicting swap in a batch was applied: %v", err)
	}
	evs, _ := s.History(ctx(t), "m3", 0, 0)
	if len(evs) != 1 {
		t.Fatalf("batched acquisition wrote %d log events", len(evs))
	}
}

func testGetMany(t *testing.T, open func() store.Store) {
	s := open()
	a := mustSwap(t, s, store.Swap{Record: acquire("g1", "n1", 1), Event: store.Acquired})
	b := mustSwap(t, s, store.Swap{Record: acquire("g3", "n2", 4), Event: store.Acquired})
	res, err := s.GetMany(ctx(t), []string{"g3", "g2", "g1", "g3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0].Err != nil || res[0].Record.Version != b.Version || res[0].Record.Token != 4 ||
		!errors.Is(res[1].Err, store.ErrNotFound) ||
		res[2].Err != nil || res[2].Record.Version != a.Version || res[2].Record.Holder != "n1" ||
		res[3].Err != nil || res[3].Record.Version != b.Version {
		t.Fatalf("GetMany results = %+v", res)
	}
	if res, err := s.GetMany(ctx(t), nil); err != nil || len(res) != 0 {
		t.Fatalf("GetMany(nil) = %v, %v", res, err)
	}
}

// testManyNames acquires, renews through a session and reads back a
// thousand names in batches: what a process holding many names does every
// renew interval and at a bulk takeover.
func testManyNames(t *testing.T, open func() store.Store) {
	s := open()
	sess := mustSwap(t, s, store.Swap{Record: session("n1")})
	const n = 1000
	names := make([]string, n)
	swaps := make([]store.Swap, n)
	for i := range names {
		names[i] = fmt.Sprintf("shard-%04d", i)
		swaps[i] = store.Swap{Record: heldThrough(names[i], sess, 1), Event: store.Acquired}
	}
	res, err := s.SwapMany(ctx(t), swaps)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("swap %d of %d: %v", i, n, r.Err)
		}
	}
	got, err := s.GetMany(ctx(t), names)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if r.Err != nil || r.Record.Session != sess.Name || r.Record.Version != res[i].Record.Version {
			t.Fatalf("GetMany result %d = %+v, want %+v", i, r, res[i].Record)
		}
	}
	// A takeover batch: every name at its version, token + 1.
	other := mustSwap(t, s, store.Swap{Record: session("n2")})
	for i := range swaps {
		swaps[i] = store.Swap{Expect: got[i].Record.Version, Record: heldThrough(names[i], other, 2), Event: store.TakenOver}
	}
	swaps[7].Expect++ // one stale expectation: only it fails
	res, err = s.SwapMany(ctx(t), swaps)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if (i == 7) != (r.Err != nil) || (i == 7 && !errors.Is(r.Err, store.ErrConflict)) {
			t.Fatalf("takeover swap %d: %v", i, r.Err)
		}
	}
	if evs, _ := s.History(ctx(t), names[n-1], 0, 0); len(evs) != 2 || evs[1].Kind != store.TakenOver || evs[1].Token != 2 {
		t.Fatalf("log of %s after a batched takeover = %+v", names[n-1], evs)
	}
}
