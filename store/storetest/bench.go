package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/batonhq/baton/store"
)

// Benchmark runs the benchmarks every backend reports, so that their
// figures compare: Acquire (a takeover: a swap that raises the token and
// appends a log event), Renew (a swap at the current version, no event),
// FencedRunSwap (a ledger write checked against the election token) and,
// when the backend batches, RenewMany10 (ten renewals in one SwapMany).
// open returns a fresh, empty store; the benchmarks close it.
func Benchmark(b *testing.B, open func(b *testing.B) store.Store) {
	fresh := func(b *testing.B) store.Store {
		s := open(b)
		b.Cleanup(func() { s.Close() })
		return s
	}
	b.Run("Acquire", func(b *testing.B) {
		s := fresh(b)
		ctx := context.Background()
		rec, err := s.Swap(ctx, store.Swap{Record: acquire("bench", "n0", 1), Event: store.Acquired})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; b.Loop(); i++ {
			next := acquire("bench", fmt.Sprintf("n%d", i%5), rec.Token+1)
			if rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: next, Event: store.TakenOver}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Renew", func(b *testing.B) {
		s := fresh(b)
		ctx := context.Background()
		rec, err := s.Swap(ctx, store.Swap{Record: acquire("bench", "n1", 1), Event: store.Acquired})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FencedRunSwap", func(b *testing.B) {
		s := fresh(b)
		ctx := context.Background()
		if _, err := s.Swap(ctx, store.Swap{Record: acquire("job", "n1", 1), Event: store.Acquired}); err != nil {
			b.Fatal(err)
		}
		run, err := s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "job", Period: "2026-11-29T00:00:00Z", State: store.Running, Token: 1, Holder: "n1", Attempt: 1}, Fenced: true})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			run.Output = "tick"
			if run, err = s.SwapRun(ctx, store.RunSwap{Expect: run.Version, Run: run, Fenced: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RenewMany10", func(b *testing.B) {
		s := fresh(b)
		bs, ok := s.(store.BatchSwapper)
		if !ok {
			b.Skip("backend does not implement store.BatchSwapper")
		}
		ctx := context.Background()
		swaps := make([]store.Swap, 10)
		for i := range swaps {
			rec, err := s.Swap(ctx, store.Swap{Record: acquire(fmt.Sprintf("m%d", i), "n1", 1), Event: store.Acquired})
			if err != nil {
				b.Fatal(err)
			}
			swaps[i] = store.Swap{Expect: rec.Version, Record: rec}
		}
		for b.Loop() {
			res, err := bs.SwapMany(ctx, swaps)
			if err != nil {
				b.Fatal(err)
			}
			for i, r := range res {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
				swaps[i].Expect = r.Record.Version
			}
		}
	})
}
