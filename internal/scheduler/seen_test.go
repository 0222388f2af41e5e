package scheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// An outcome seen inside its term (CompleteSeen with inTerm) counts after
// a newer term began, as long as the row is still the run's: fenced by the
// row, not by the election token. One not seen inside its term is refused
// as stale then, and neither overwrites a row a newer term took over.
func TestCompleteSeen(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	setup := func(t *testing.T) (*memstore.Store, store.Run, store.Record) {
		ms := memstore.New()
		rec, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "tick", Holder: "a", Incarnation: "a1", Token: 1, Lease: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := ms.SwapRun(ctx, store.RunSwap{Fenced: true, Run: store.Run{Job: "tick", Period: scheduler.Key(at), Scheduled: at,
			State: store.Running, Token: 1, Holder: "a", Attempt: 1, Started: at}})
		if err != nil {
			t.Fatal(err)
		}
		// A newer term begins (b, token 2) before the outcome is recorded.
		rec.Holder, rec.Incarnation, rec.Token = "b", "b1", 2
		if rec, err = ms.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
			t.Fatal(err)
		}
		return ms, claimed, rec
	}
	t.Run("seen inside the term", func(t *testing.T) {
		ms, claimed, _ := setup(t)
		sw := scheduler.CompleteSeen(claimed, 0, "ok", nil, at.Add(time.Second), true)
		if sw.Fenced {
			t.Fatalf("an outcome seen inside its term is fenced by the token: %+v", sw)
		}
		got, err := ms.SwapRun(ctx, sw)
		if err != nil || got.State != store.Done || got.Token != 1 || got.Attempt != 1 {
			t.Fatalf("recorded %+v, %v; want done under token 1, attempt 1", got, err)
		}
	})
	t.Run("not seen inside the term", func(t *testing.T) {
		ms, claimed, _ := setup(t)
		_, err := ms.SwapRun(ctx, scheduler.CompleteSeen(claimed, 0, "ok", nil, at.Add(time.Second), false))
		if !errors.Is(err, store.ErrStaleToken) {
			t.Fatalf("an outcome seen after its term, recorded under a newer term: %v; want store.ErrStaleToken", err)
		}
	})
	t.Run("taken over", func(t *testing.T) {
		ms, claimed, _ := setup(t)
		again := claimed
		again.Token, again.Holder, again.Attempt = 2, "b", 2
		if _, err := ms.SwapRun(ctx, store.RunSwap{Expect: claimed.Version, Fenced: true, Run: again}); err != nil {
			t.Fatal(err)
		}
		_, err := ms.SwapRun(ctx, scheduler.CompleteSeen(claimed, 0, "ok", nil, at.Add(time.Second), true))
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("an outcome of attempt 1 written over attempt 2: %v; want store.ErrConflict", err)
		}
		if r, _ := ms.GetRun(ctx, "tick", claimed.Period); r.State != store.Running || r.Attempt != 2 {
			t.Fatalf("row %+v, want attempt 2 running", r)
		}
	})
}
