package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// Benchmark runs the benchmarks every backend reports, under the same
// names and units, so that their figures compare:
//
//   - Acquire: a takeover, a swap that raises the token and appends a log
//     event.
//   - Renew: a swap at the current version, no event.
//   - FencedRunSwap: a ledger write checked against the election token.
//   - RenewMany10: ten renewals in one SwapMany.
//   - SwapMany1000: a bulk takeover, one SwapMany that moves 1,000 names
//     held through one session to another, token + 1 and a log event
//     each; it also reports ns/swap.
//   - GetMany1000: one GetMany of 1,000 names held through a session; it
//     also reports ns/record.
//   - SessionRenewal/held=N: one renewal of a session record (a swap at
//     its version, no event) while N names are held through it, N 1,000
//     and 100,000: its cost must not depend on N.
//
// open returns a fresh, empty store; the benchmarks close it. A backend's
// own benchmarks (of what only it has) live beside its call of Benchmark.
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
			res, err := s.SwapMany(ctx, swaps)
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
	b.Run("SwapMany1000", func(b *testing.B) { SwapMany1000(b, fresh(b)) })
	b.Run("GetMany1000", func(b *testing.B) {
		s := fresh(b)
		ctx := context.Background()
		_, recs := holdThrough(b, s, "n1", 1000)
		names := make([]string, len(recs))
		for i, r := range recs {
			names[i] = r.Name
		}
		for b.Loop() {
			res, err := s.GetMany(ctx, names)
			if err != nil {
				b.Fatal(err)
			}
			if len(res) != len(names) || res[len(res)-1].Err != nil {
				b.Fatalf("GetMany of %d names: %d results, the last %+v", len(names), len(res), res[len(res)-1])
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(names)), "ns/record")
	})
	b.Run("CountHolders10000", func(b *testing.B) {
		// The summary's count (baton sessions, serve's /api/summary):
		// 10,000 names held through one live session.
		s := fresh(b)
		ctx := context.Background()
		holdThrough(b, s, "n1", 10_000)
		for b.Loop() {
			groups, _, err := s.CountHolders(ctx, time.Now())
			if err != nil || len(groups) != 1 || groups[0].Names != 10_000 {
				b.Fatalf("CountHolders = %+v, %v; want one group of 10000", groups, err)
			}
		}
	})
	b.Run("SessionRenewal", func(b *testing.B) {
		for _, held := range []int{1000, 100_000} {
			b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
				s := fresh(b)
				ctx := context.Background()
				sess, _ := holdThrough(b, s, "n1", held)
				for b.Loop() {
					var err error
					if sess, err = s.Swap(ctx, store.Swap{Expect: sess.Version, Record: sess}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

// SwapMany1000 is Benchmark's SwapMany1000 on s, an empty store the caller
// closes: for a backend that runs it again with a setting of its own
// varied (etcd's transactions in flight).
func SwapMany1000(b *testing.B, s store.Store) {
	ctx := context.Background()
	_, recs := holdThrough(b, s, "n1", 1000)
	sessions := [2]store.Record{sessionRecord(b, s, "n2"), {Name: store.SessionPrefix + "n1/i1/1", Holder: "n1", Incarnation: "i1"}}
	swaps := make([]store.Swap, len(recs))
	for i := 0; b.Loop(); i++ {
		to := sessions[i%2]
		for j, r := range recs {
			next := r
			next.Holder, next.Incarnation, next.Session, next.Token = to.Holder, to.Incarnation, to.Name, r.Token+1
			swaps[j] = store.Swap{Expect: r.Version, Record: next, Event: store.TakenOver}
		}
		res, err := s.SwapMany(ctx, swaps)
		if err != nil {
			b.Fatal(err)
		}
		for j, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
			recs[j] = r.Record
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/swap")
}

// sessionRecord writes the session record of node (incarnation i1, lease
// 15s) and returns it.
func sessionRecord(b *testing.B, s store.Store, node string) store.Record {
	b.Helper()
	sess, err := s.Swap(context.Background(), store.Swap{Record: store.Record{
		Name: store.SessionPrefix + node + "/i1/1", Holder: node, Incarnation: "i1", Lease: 15 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	return sess
}

// holdThrough writes the session record of node and n names held through
// it (HoldMany), and returns the session and the names' records.
func holdThrough(b *testing.B, s store.Store, node string, n int) (store.Record, []store.Record) {
	b.Helper()
	sess := sessionRecord(b, s, node)
	return sess, HoldMany(b, s, sess, n)
}

// HoldMany makes n names (shard-000000, shard-000001, ...) held through
// the session record sess, which the caller wrote: SwapMany batches of
// 1,000 creations, token 1 and an Acquired event each. It returns the
// names' records in name order. It fails b on an error. For a backend's
// own benchmarks beside Benchmark.
func HoldMany(b *testing.B, s store.Store, sess store.Record, n int) []store.Record {
	b.Helper()
	ctx := context.Background()
	recs := make([]store.Record, 0, n)
	for lo := 0; lo < n; lo += 1000 {
		swaps := make([]store.Swap, 0, 1000)
		for i := lo; i < min(lo+1000, n); i++ {
			swaps = append(swaps, store.Swap{Event: store.Acquired, Record: store.Record{Name: fmt.Sprintf("shard-%06d", i),
				Holder: sess.Holder, Incarnation: sess.Incarnation, Session: sess.Name, Token: 1, Lease: sess.Lease}})
		}
		res, err := s.SwapMany(ctx, swaps)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
			recs = append(recs, r.Record)
		}
	}
	return recs
}

// RenewVsRaw runs raw (a backend's one-row UPDATE, the floor a renewal is
// measured against) and a renewal of rec on s in turn, each timed on its
// own, so that both see the same disk at the same moments (a shared
// machine's fsync times drift by 2x within a minute). It reports raw-ns
// and renew-ns, the mean of each, and renew/raw, their ratio.
func RenewVsRaw(b *testing.B, s store.Store, rec store.Record, raw func(ctx context.Context, now time.Time) error) {
	ctx := context.Background()
	var rawTook, renewTook time.Duration
	var err error
	for i := 0; b.Loop(); i++ {
		for k := range 2 {
			start := time.Now()
			if (i+k)%2 == 0 {
				if err := raw(ctx, start); err != nil {
					b.Fatal(err)
				}
				rawTook += time.Since(start)
			} else {
				if rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
					b.Fatal(err)
				}
				renewTook += time.Since(start)
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(rawTook.Nanoseconds())/n, "raw-ns")
	b.ReportMetric(float64(renewTook.Nanoseconds())/n, "renew-ns")
	b.ReportMetric(float64(renewTook)/float64(rawTook), "renew/raw")
}
