package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

// A store whose schema is dropped, or dropped and created afresh by
// another process, answers the next write of a handle that opened it with
// ErrReplaced.
func TestStoreReplaced(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	for _, how := range []string{"dropped", "recreated"} {
		t.Run(how, func(t *testing.T) {
			u := pgtest.Start(t)
			s := open(t, u)
			defer s.Close()
			ctx := testCtx(t)
			rec, err := s.Swap(ctx, store.Swap{Record: acquire("billing", "n1", 1), Event: store.Acquired})
			if err != nil {
				t.Fatal(err)
			}
			id := s.StoreID()
			superExec(t, u, `DROP SCHEMA baton CASCADE`)
			if how == "recreated" {
				other := open(t, u)
				defer other.Close()
				if other.StoreID() == id || id == "" {
					t.Fatalf("a recreated store has the id %q of the one it replaced", id)
				}
				if _, err := other.Swap(ctx, store.Swap{Record: acquire("billing", "n2", 1), Event: store.Acquired}); err != nil {
					t.Fatal(err)
				}
			}
			_, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec})
			if !errors.Is(err, store.ErrReplaced) || !store.Permanent(err) {
				t.Fatalf("renewal after the store was %s: %v, want ErrReplaced", how, err)
			}
			t.Logf("%s: %v", how, err)
			if how == "recreated" {
				// The stale handle's swap wrote nothing to the new store.
				other := open(t, u)
				defer other.Close()
				if got, _ := other.Get(ctx, "billing"); got.Holder != "n2" || got.Version != 0 && got.Token != 1 {
					t.Errorf("the new store's record after a stale swap: %+v", got)
				}
				if _, err := s.Swap(ctx, store.Swap{Record: acquire("other", "n1", 1), Event: store.Acquired}); !errors.Is(err, store.ErrReplaced) {
					t.Errorf("a stale handle's first acquisition: %v, want ErrReplaced", err)
				}
				if _, err := other.Get(ctx, "other"); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("a stale handle's acquisition reached the new store: %v", err)
				}
			}
			_, err = s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "billing", Period: "p", State: store.Running, Token: 1}, Fenced: true})
			if !errors.Is(err, store.ErrReplaced) {
				t.Fatalf("fenced ledger write after the store was %s: %v, want ErrReplaced", how, err)
			}
		})
	}
}

// The server's clock is the reference a wall-clock guard can trust.
func TestStoreTime(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	s := open(t, pgtest.Start(t))
	defer s.Close()
	before := time.Now()
	got, err := s.StoreTime(testCtx(t))
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	// Same host: the server's clock is this process's, within the call.
	if got.Before(before.Add(-time.Second)) || got.After(after.Add(time.Second)) {
		t.Fatalf("StoreTime %v, local clock between %v and %v", got, before, after)
	}
	var _ store.TimeSource = s
}
