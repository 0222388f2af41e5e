package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

func testGetMissing(t *testing.T, open func() store.Store) {
	s := open()
	_, err := s.Get(ctx(t), "nobody")
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of a missing record: got %v, want ErrNotFound", err)
	}
	_, err = s.GetRun(ctx(t), "nojob", "2026-01-01T00:00:00Z")
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetRun of a missing row: got %v, want ErrNotFound", err)
	}
	evs, err := s.History(ctx(t), "nobody", 0, 0)
	if err != nil || len(evs) != 0 {
		t.Fatalf("History of a missing record: %v, %v; want empty, nil", evs, err)
	}
}

func testCreateAndConflict(t *testing.T, open func() store.Store) {
	s := open()
	rec := mustSwap(t, s, store.Swap{Record: acquire("a", "n1", 1), Event: store.Acquired})
	if rec.Version == 0 || rec.Holder != "n1" || rec.Token != 1 || rec.Lease != 3*time.Second || rec.Updated.IsZero() {
		t.Fatalf("created record = %+v", rec)
	}
	got, err := s.Get(ctx(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	if got != rec && !(got.Version == rec.Version && got.Holder == rec.Holder && got.Token == rec.Token && got.Updated.Equal(rec.Updated)) {
		t.Fatalf("Get = %+v, Swap returned %+v", got, rec)
	}
	_, err = s.Swap(ctx(t), store.Swap{Record: acquire("a", "n2", 1), Event: store.Acquired})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second create: got %v, want ErrConflict", err)
	}
	_, err = s.Swap(ctx(t), store.Swap{Expect: rec.Version + 1000, Record: acquire("a", "n2", 2), Event: store.TakenOver})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("swap at a wrong version: got %v, want ErrConflict", err)
	}
	got, _ = s.Get(ctx(t), "a")
	if got.Holder != "n1" || got.Token != 1 || got.Version != rec.Version {
		t.Fatalf("a failed swap changed the record: %+v", got)
	}
	evs, _ := s.History(ctx(t), "a", 0, 0)
	if len(evs) != 1 {
		t.Fatalf("failed swaps wrote log events: %+v", evs)
	}
}

func testVersionChanges(t *testing.T, open func() store.Store) {
	s := open()
	rec := mustSwap(t, s, store.Swap{Record: acquire("v", "n1", 1), Event: store.Acquired})
	seen := map[int64]bool{rec.Version: true}
	for i := 0; i < 5; i++ {
		next := mustSwap(t, s, store.Swap{Expect: rec.Version, Record: rec})
		if seen[next.Version] {
			t.Fatalf("renewal %d reused version %d", i, next.Version)
		}
		seen[next.Version] = true
		rec = next
	}
	// A write to another name must not disturb this one's CAS.
	mustSwap(t, s, store.Swap{Record: acquire("other", "n2", 1), Event: store.Acquired})
	mustSwap(t, s, store.Swap{Expect: rec.Version, Record: rec})
}

func testTokenNeverGoesBack(t *testing.T, open func() store.Store) {
	s := open()
	rec := mustSwap(t, s, store.Swap{Record: acquire("t", "n1", 5), Event: store.Acquired})
	_, err := s.Swap(ctx(t), store.Swap{Expect: rec.Version, Record: acquire("t", "n2", 4), Event: store.TakenOver})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("lowering the token: got %v, want ErrInvalid", err)
	}
	got, _ := s.Get(ctx(t), "t")
	if got.Token != 5 || got.Version != rec.Version {
		t.Fatalf("rejected swap changed the record: %+v", got)
	}
}

// testTokenLimit: store.MaxToken is held; a token above it, by Swap,
// SwapMany or SwapRun, is refused with a permanent error (store.Permanent,
// store.ErrTokenLimit, store.ErrInvalid), and nothing is written.
func testTokenLimit(t *testing.T, open func() store.Store) {
	s := open()
	rec := mustSwap(t, s, store.Swap{Record: acquire("max", "n1", store.MaxToken), Event: store.Acquired})
	if got, err := s.Get(ctx(t), "max"); err != nil || got.Token != store.MaxToken {
		t.Fatalf("Get after writing token %d = %+v, %v", uint64(store.MaxToken), got, err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !store.Permanent(err) || !errors.Is(err, store.ErrTokenLimit) || !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("%s: got %v, want a permanent error wrapping ErrTokenLimit and ErrInvalid", what, err)
		}
	}
	// The next term's token: one more than a store holds.
	_, err := s.Swap(ctx(t), store.Swap{Expect: rec.Version, Record: acquire("max", "n2", store.MaxToken+1), Event: store.TakenOver})
	refused("a takeover to token MaxToken+1", err)
	_, err = s.Swap(ctx(t), store.Swap{Record: acquire("huge", "n1", 1<<64-1), Event: store.Acquired})
	refused("a new record at token 2^64-1", err)
	res, err := s.SwapMany(ctx(t), []store.Swap{
		{Expect: rec.Version, Record: acquire("max", "n2", store.MaxToken+1), Event: store.TakenOver},
		{Record: acquire("ok", "n1", 1), Event: store.Acquired},
	})
	if err != nil || len(res) != 2 || res[1].Err != nil {
		t.Fatalf("SwapMany with one token above the maximum = %+v, %v; want the other swap applied", res, err)
	}
	refused("SwapMany to token MaxToken+1", res[0].Err)
	_, err = s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "max", Period: "2026-01-01T00:00:00Z", State: store.Running, Token: store.MaxToken + 1, Holder: "n1"}})
	refused("a run at token MaxToken+1", err)
	got, err := s.Get(ctx(t), "max")
	if err != nil || got.Version != rec.Version || got.Holder != "n1" || got.Token != store.MaxToken {
		t.Fatalf("the refused swaps changed the record: %+v, %v", got, err)
	}
	if _, err := s.Get(ctx(t), "huge"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused new record exists: %v", err)
	}
	if evs, err := s.History(ctx(t), "max", 0, 0); err != nil || len(evs) != 1 {
		t.Fatalf("History after refused swaps = %+v, %v; want the one acquisition", evs, err)
	}
	if _, err := s.GetRun(ctx(t), "max", "2026-01-01T00:00:00Z"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused run exists: %v", err)
	}
}

func testInvalidSwaps(t *testing.T, open func() store.Store) {
	s := open()
	_, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Token: 1}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("empty name: got %v, want ErrInvalid", err)
	}
	_, err = s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "j", State: store.Pending}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("run without a period: got %v, want ErrInvalid", err)
	}
	_, err = s.EnsureJob(ctx(t), store.Job{})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("job without a name: got %v, want ErrInvalid", err)
	}
}

func testConcurrentAcquire(t *testing.T, open func() store.Store) {
	const n = 8
	handles := make([]store.Store, n)
	for i := range handles {
		handles[i] = open()
	}
	base := mustSwap(t, handles[0], store.Swap{Record: store.Record{Name: "c", Token: 0, Lease: time.Second}})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = handles[i].Swap(context.Background(), store.Swap{
				Expect: base.Version, Record: acquire("c", fmt.Sprintf("n%d", i), 1), Event: store.Acquired})
		}()
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, store.ErrConflict):
		default:
			t.Errorf("handle %d: unexpected error %v", i, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d handles won the same compare-and-swap, want exactly 1", wins)
	}
	evs, _ := handles[0].History(ctx(t), "c", 0, 0)
	if len(evs) != 1 {
		t.Fatalf("History has %d events after one winning swap", len(evs))
	}
}

func testDurable(t *testing.T, open func() store.Store) {
	s1 := open()
	rec := mustSwap(t, s1, store.Swap{Record: acquire("d", "n1", 7), Event: store.Acquired})
	if _, err := s1.EnsureJob(ctx(t), store.Job{Name: "d", Schedule: "every 1h"}); err != nil {
		t.Fatal(err)
	}
	s1.Close()
	s2 := open()
	got, err := s2.Get(ctx(t), "d")
	if err != nil {
		t.Fatal(err)
	}
	if got.Token != 7 || got.Version != rec.Version || got.Holder != "n1" {
		t.Fatalf("after reopen: %+v, want token 7 version %d", got, rec.Version)
	}
	if _, err := s2.Swap(ctx(t), store.Swap{Expect: got.Version, Record: acquire("d", "n2", 6)}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("token went back after reopen: %v", err)
	}
	evs, _ := s2.History(ctx(t), "d", 0, 0)
	if len(evs) != 1 {
		t.Fatalf("History after reopen: %+v", evs)
	}
}

func testCancelledContext(t *testing.T, open func() store.Store) {
	s := open()
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(c, "x"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Get with a cancelled context: got %v, want ErrUnavailable", err)
	}
	if _, err := s.Swap(c, store.Swap{Record: acquire("x", "n1", 1)}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Swap with a cancelled context: got %v, want ErrUnavailable", err)
	}
}
