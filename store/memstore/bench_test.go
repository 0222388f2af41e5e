package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// BenchmarkAcquire: one take-over per iteration: a swap that changes the
// holder, raises the token and appends an election log event.
func BenchmarkAcquire(b *testing.B) {
	s := memstore.New()
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
	s := memstore.New()
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
