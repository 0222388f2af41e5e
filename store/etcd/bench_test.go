package etcd_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
	"github.com/batonhq/baton/store/storetest"
)

func benchCluster(b *testing.B) *etcdtest.Cluster { return lazyCluster(b, 3) }

var benchSeq atomic.Int64

func benchStore(b *testing.B) *etcd.Store {
	b.Helper()
	c := benchCluster(b)
	s := openStore(b, c.Endpoints(), etcd.WithPrefix(fmt.Sprintf("/bench/%d/", benchSeq.Add(1))))
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) store.Store {
		c := benchCluster(b)
		return openStore(b, c.Endpoints(), etcd.WithPrefix(fmt.Sprintf("/bench/%d/", benchSeq.Add(1))))
	})
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

// benchElector returns an Elector for name on a store of its own (its own
// client) under prefix, with the cluster tests' timing, and that store.
func benchElector(b *testing.B, c *etcdtest.Cluster, prefix, name, node string) (*baton.Elector, *etcd.Store) {
	b.Helper()
	st := openStore(b, c.Endpoints(), etcd.WithPrefix(prefix))
	el, err := baton.New(st, name, baton.WithNode(node), baton.WithLease(timing.Lease), baton.WithRenew(timing.Renew),
		baton.WithClockMargin(timing.Margin), baton.WithPoll(timing.Poll))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		el.Close(ctx)
		cancel()
		st.Close()
	})
	return el, st
}

// contend starts el.Campaign and waits settle, so that the contender has
// read the record and waits on its watch; the channel yields the term.
func contend(b *testing.B, el *baton.Elector, settle time.Duration) <-chan *baton.Term {
	won := make(chan *baton.Term, 1)
	go func() {
		t, err := el.Campaign(context.Background())
		if err != nil {
			b.Error(err)
		}
		won <- t
	}()
	time.Sleep(settle)
	return won
}

// BenchmarkHandoverResign measures a graceful handover on a three-member
// cluster, lease 1.5s: from the leader's Resign call until the contender,
// waiting on a watch of the record, holds the next Term. ns/op is one
// handover: the release (one transaction), the watch event, the
// contender's read and its acquisition (one transaction). It does not
// depend on the lease.
func BenchmarkHandoverResign(b *testing.B) {
	c := benchCluster(b)
	prefix := fmt.Sprintf("/bench/%d/", benchSeq.Add(1))
	var els [2]*baton.Elector
	for i := range els {
		els[i], _ = benchElector(b, c, prefix, "handover", fmt.Sprintf("n%d", i))
	}
	ctx := context.Background()
	term, err := els[0].Campaign(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cur := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		next := 1 - cur
		won := contend(b, els[next], 50*time.Millisecond)
		b.StartTimer()
		if err := term.Resign(ctx); err != nil {
			b.Fatal(err)
		}
		nt := <-won
		if nt == nil {
			b.FailNow()
		}
		if nt.Token() != term.Token()+1 {
			b.Fatalf("token %d after %d", nt.Token(), term.Token())
		}
		term, cur = nt, next
	}
	b.StopTimer()
	term.Resign(ctx)
}

// BenchmarkHandoverCrash measures the handover after the leader's process
// dies (its client is closed: it stops renewing) on a three-member
// cluster, lease 1.5s, e 100ms, poll 100ms: from the crash until the
// contender holds the next Term. The contender takes over lease + 2e after
// it saw the leader's last renewal, so ns/op lies between lease + 2e -
// renew (the crash came just before a renewal) and lease + 2e plus the
// store's latency (just after one). ms-after-last-renewal/op is the
// takeover measured from the start of the dead leader's last successful
// renewal, which is never below lease + 2e = 1.7s.
func BenchmarkHandoverCrash(b *testing.B) {
	c := benchCluster(b)
	prefix := fmt.Sprintf("/bench/%d/", benchSeq.Add(1))
	leader, lst := benchElector(b, c, prefix, "crash", "n0")
	term, err := leader.Campaign(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var sinceRenewal time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		el, st := benchElector(b, c, prefix, "crash", fmt.Sprintf("n%d", i+1))
		won := contend(b, el, 50*time.Millisecond)
		b.StartTimer()
		lst.Close() // the crash: no renewal reaches the store any more
		nt := <-won
		b.StopTimer()
		wonAt := time.Now()
		if nt == nil {
			b.FailNow()
		}
		if nt.Token() != term.Token()+1 {
			b.Fatalf("token %d after %d", nt.Token(), term.Token())
		}
		<-term.Done() // the dead leader's own deadline passed long ago
		// The takeover, measured from the start of the dead leader's last
		// successful renewal: never below lease + 2e.
		since := wonAt.Sub(term.Deadline().Add(-timing.Lease))
		if since < timing.Safe() {
			b.Errorf("takeover %v after the last renewal started, below lease + 2e = %v", since, timing.Safe())
		}
		sinceRenewal += since
		term, lst = nt, st
		b.StartTimer()
	}
	b.ReportMetric(float64(sinceRenewal.Milliseconds())/float64(b.N), "ms-after-last-renewal/op")
}
