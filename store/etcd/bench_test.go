package etcd_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// The benchmarks share one three-member cluster, stopped by TestMain.
var benchShared struct {
	once sync.Once
	c    *etcdtest.Cluster
	err  error
}

func benchCluster(b *testing.B) *etcdtest.Cluster {
	b.Helper()
	benchShared.once.Do(func() { benchShared.c, benchShared.err = etcdtest.Start(3) })
	if benchShared.err != nil {
		testenv.Require(b, "etcd", benchShared.err.Error())
	}
	return benchShared.c
}

var benchSeq atomic.Int64

func benchStore(b *testing.B) *etcd.Store {
	b.Helper()
	c := benchCluster(b)
	s := openStore(b, c.Endpoints(), etcd.WithPrefix(fmt.Sprintf("/bench/%d/", benchSeq.Add(1))))
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkRenew measures a leader's renewal: one compare-and-swap on the
// version the handle wrote last (one transaction, one Raft commit).
func BenchmarkRenew(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	rec, err := s.Swap(ctx, store.Swap{Record: acquire("renew", "n1", 1), Event: store.Acquired})
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

// BenchmarkRenewParallel measures renewal throughput of many leaders (one
// name each) sharing one client.
func BenchmarkRenewParallel(b *testing.B) {
	s := benchStore(b)
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		rec, err := s.Swap(ctx, store.Swap{Record: acquire(fmt.Sprintf("p%d", n.Add(1)), "n1", 1), Event: store.Acquired})
		if err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			if rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRenewMany10 measures renewing ten names in one SwapMany.
func BenchmarkRenewMany10(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	swaps := make([]store.Swap, 10)
	for i := range swaps {
		rec, err := s.Swap(ctx, store.Swap{Record: acquire(fmt.Sprintf("m%d", i), "n1", 1), Event: store.Acquired})
		if err != nil {
			b.Fatal(err)
		}
		swaps[i] = store.Swap{Expect: rec.Version, Record: rec}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := s.SwapMany(ctx, swaps)
		if err != nil {
			b.Fatal(err)
		}
		for j, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
			swaps[j].Expect = r.Record.Version
		}
	}
}

// BenchmarkAcquire measures a contender's acquisition: a linearizable read
// of the record, then a compare-and-swap raising the token that writes the
// record and its log entry in one transaction.
func BenchmarkAcquire(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	if _, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "acq", Lease: time.Second}}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cur, err := s.Get(ctx, "acq")
		if err != nil {
			b.Fatal(err)
		}
		next := acquire("acq", fmt.Sprintf("n%d", i%5), cur.Token+1)
		if _, err := s.Swap(ctx, store.Swap{Expect: cur.Version, Record: next, Event: store.Acquired}); err != nil {
			b.Fatal(err)
		}
	}
}
