package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

func benchStore(b *testing.B) *sqlite.Store {
	b.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "baton.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkAcquire: one take-over per iteration: a swap that changes the
// holder, raises the token and appends an election log event.
func BenchmarkAcquire(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	nodes := [2]string{"n1", "n2"}
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "bench", Holder: "n1", Incarnation: "n1", Token: 1, Lease: time.Second}, Event: store.Acquired})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next := rec
		next.Holder, next.Incarnation, next.Token = nodes[i%2], nodes[i%2], rec.Token+1
		if rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: next, Event: store.TakenOver}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenew: one renewal per iteration: the same holder and token at
// the current version, no log event.
func BenchmarkRenew(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "bench", Holder: "n1", Incarnation: "n1", Token: 1, Lease: time.Second}, Event: store.Acquired})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFencedRunSwap: one fenced write of a running ledger row per
// iteration, checked against the election token in the same transaction.
func BenchmarkFencedRunSwap(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	if _, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "job", Holder: "n1", Incarnation: "n1", Token: 1, Lease: time.Second}, Event: store.Acquired}); err != nil {
		b.Fatal(err)
	}
	run, err := s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "job", Period: "2026-11-29T00:00:00Z", State: store.Running, Token: 1, Holder: "n1", Attempt: 1}, Fenced: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run.Output = "tick"
		if run, err = s.SwapRun(ctx, store.RunSwap{Expect: run.Version, Run: run, Fenced: true}); err != nil {
			b.Fatal(err)
		}
	}
}
