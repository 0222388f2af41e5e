package etcd_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/electortest"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/testenv"
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
	electortest.BenchHandoverResign(b, els, func() time.Duration { return 50 * time.Millisecond })
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

// sessionRecord returns the session record of node, incarnation inc.
func sessionRecord(node, inc string) store.Record {
	return store.Record{Name: store.SessionPrefix + node + "/" + inc + "/1", Holder: node, Incarnation: inc, Lease: 15 * time.Second}
}

// holdMany makes n names held through sess (storetest.HoldMany) and
// returns the names and their records.
func holdMany(b *testing.B, s *etcd.Store, sess store.Record, n int) ([]string, []store.Record) {
	b.Helper()
	recs := storetest.HoldMany(b, s, sess, n)
	names := make([]string, len(recs))
	for i, r := range recs {
		names[i] = r.Name
	}
	return names, recs
}

// BenchmarkSwapMany1000 is BenchmarkStore/SwapMany1000 with the number of
// transactions in flight varied, on a three-member cluster: one op is one
// SwapMany of 1,000 names held through one session to another session,
// token + 1 and a log event each (8 or 9 transactions of up to 127 swaps).
// in-flight is how many transactions are sent at once; the store's default
// was chosen from these figures.
func BenchmarkSwapMany1000(b *testing.B) {
	for _, inFlight := range []int{1, 4, 8, 16} {
		b.Run(fmt.Sprintf("in-flight=%d", inFlight), func(b *testing.B) {
			defer etcd.SetBatchInFlight(etcd.SetBatchInFlight(inFlight))
			storetest.SwapMany1000(b, benchStore(b))
		})
	}
}

// BenchmarkGetMany1000 is BenchmarkStore/GetMany1000 by the read path, on a
// three-member cluster, through a handle that has not seen the records.
// path=range is what GetMany does with 1,000 names whose keys lie
// together: a count and one range read. path=txns is what it does
// otherwise: 8 read-only transactions of up to 127 gets, in-flight of them
// sent at once. raw is the range read alone, without decoding or
// remembering the records.
func BenchmarkGetMany1000(b *testing.B) {
	setup := func(b *testing.B) (*etcd.Store, []string) {
		s := benchStore(b)
		sess, err := s.Swap(context.Background(), store.Swap{Record: sessionRecord("n1", "i1")})
		if err != nil {
			b.Fatal(err)
		}
		names, _ := holdMany(b, s, sess, 1000)
		r := openStore(b, benchCluster(b).Endpoints(), etcd.WithPrefix(s.Prefix()))
		b.Cleanup(func() { r.Close() })
		return r, names
	}
	run := func(b *testing.B, s *etcd.Store, names []string) {
		for i := 0; i < b.N; i++ {
			res, err := s.GetMany(context.Background(), names)
			if err != nil || len(res) != len(names) || res[0].Err != nil || res[len(res)-1].Err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("path=range", func(b *testing.B) {
		s, names := setup(b)
		b.ResetTimer()
		run(b, s, names)
	})
	b.Run("path=range/passed-on", func(b *testing.B) {
		// The records as a takeover by succession reads them: held
		// through a session that ended naming another as its successor,
		// so each resolves through both session records.
		s := benchStore(b)
		ctx := context.Background()
		sess, err := s.Swap(ctx, store.Swap{Record: sessionRecord("n1", "i1")})
		if err != nil {
			b.Fatal(err)
		}
		names, _ := holdMany(b, s, sess, 1000)
		heir, err := s.Swap(ctx, store.Swap{Record: sessionRecord("n2", "i2")})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Swap(ctx, store.Swap{Expect: sess.Version, Record: store.Record{Name: sess.Name, Lease: sess.Lease, Successor: heir.Name}}); err != nil {
			b.Fatal(err)
		}
		r := openStore(b, benchCluster(b).Endpoints(), etcd.WithPrefix(s.Prefix()))
		b.Cleanup(func() { r.Close() })
		if res, err := r.GetMany(ctx, names[:1]); err != nil || res[0].Record.Session != heir.Name {
			b.Fatalf("GetMany = %+v, %v; want the record passed on to %s", res, err, heir.Name)
		}
		b.ResetTimer()
		run(b, r, names)
	})
	for _, inFlight := range []int{1, 4, 8, 16} {
		b.Run(fmt.Sprintf("path=txns/in-flight=%d", inFlight), func(b *testing.B) {
			defer etcd.SetBatchInFlight(etcd.SetBatchInFlight(inFlight))
			defer etcd.SetRangeMinNames(etcd.SetRangeMinNames(1 << 30))
			s, names := setup(b)
			b.ResetTimer()
			run(b, s, names)
		})
	}
	b.Run("raw", func(b *testing.B) {
		s, names := setup(b)
		from, to := s.Prefix()+"e/"+names[0], s.Prefix()+"e/"+names[len(names)-1]+"\x00"
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			resp, err := s.Client().Get(context.Background(), from, clientv3.WithRange(to))
			if err != nil || len(resp.Kvs) != len(names) {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkChangeFeed measures the change feed on a three-member cluster:
// one op is a renewal of one record through one handle and its arrival, by
// name, on a WatchChanges feed of another handle. Compare names=100 with
// names=10000: the cost per commit does not grow with the records stored.
func BenchmarkChangeFeed(b *testing.B) {
	for _, stored := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("feed/names=%d", stored), func(b *testing.B) {
			s := benchStore(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sess, err := s.Swap(ctx, store.Swap{Record: sessionRecord("n1", "i1")})
			if err != nil {
				b.Fatal(err)
			}
			holdMany(b, s, sess, stored)
			follower := openStore(b, benchCluster(b).Endpoints(), etcd.WithPrefix(s.Prefix()))
			defer follower.Close()
			feed := follower.WatchChanges(ctx)
			runtime.GC() // the setup's garbage is not the feed's
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if sess, err = s.Swap(ctx, store.Swap{Expect: sess.Version, Record: sess}); err != nil {
					b.Fatal(err)
				}
				for named := false; !named; {
					batch, ok := <-feed
					if !ok {
						b.Fatal("the change feed closed")
					}
					for _, n := range batch {
						named = named || n.Name == sess.Name
					}
				}
			}
		})
	}
}

// BenchmarkSessionRenewVsKeepAlive runs a session renewal (a Swap of a
// session record at its version, the write a Group makes once per renew
// interval), etcd's own lease renewal (KeepAliveOnce of a granted lease)
// and a plain Put of a value as long as the record's, in turn, on one
// client of a cluster whose members fsync, each timed on its own:
// keepalive-ns, put-ns and renew-ns are the mean of each, renew/keepalive
// and renew/put the ratios, with one and three members.
func BenchmarkSessionRenewVsKeepAlive(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			c, err := etcdtest.StartDurable(n)
			if err != nil {
				testenv.Require(b, "etcd", err.Error())
			}
			b.Cleanup(c.Close)
			s := openStore(b, c.Endpoints(), etcd.WithPrefix("/bench/keepalive/"))
			defer s.Close()
			cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer cli.Close()
			ctx := context.Background()
			lease, err := cli.Grant(ctx, 15)
			if err != nil {
				b.Fatal(err)
			}
			rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: store.SessionPrefix + "n1/i1/1", Holder: "n1", Incarnation: "i1", Lease: 15 * time.Second}})
			if err != nil {
				b.Fatal(err)
			}
			got, err := cli.Get(ctx, "/bench/keepalive/", clientv3.WithPrefix())
			if err != nil || len(got.Kvs) == 0 {
				b.Fatalf("the session record's key: %v, %v", got, err)
			}
			value := string(got.Kvs[0].Value)
			var keep, put, renew time.Duration
			for i := 0; b.Loop(); i++ {
				for k := range 3 {
					start := time.Now()
					switch (i + k) % 3 {
					case 0:
						if _, err := cli.KeepAliveOnce(ctx, lease.ID); err != nil {
							b.Fatal(err)
						}
						keep += time.Since(start)
					case 1:
						if _, err := cli.Put(ctx, "/bench/put", value); err != nil {
							b.Fatal(err)
						}
						put += time.Since(start)
					default:
						if rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
							b.Fatal(err)
						}
						renew += time.Since(start)
					}
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(keep.Nanoseconds())/n, "keepalive-ns")
			b.ReportMetric(float64(put.Nanoseconds())/n, "put-ns")
			b.ReportMetric(float64(renew.Nanoseconds())/n, "renew-ns")
			b.ReportMetric(float64(renew)/float64(keep), "renew/keepalive")
			b.ReportMetric(float64(renew)/float64(put), "renew/put")
		})
	}
}
