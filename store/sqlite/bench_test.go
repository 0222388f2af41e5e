package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
	"github.com/batonhq/baton/store/storetest"
)

func benchStore(b *testing.B) *sqlite.Store {
	b.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "baton.db"))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) store.Store { return benchStore(b) })
}

// holdThrough writes a session record of node and n names held through
// it, in SwapMany batches, and returns the session and the names' records.
func holdThrough(b *testing.B, s *sqlite.Store, node string, n int) (store.Record, []store.Record) {
	b.Helper()
	ctx := context.Background()
	sess, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: store.SessionPrefix + node + "/i1/1", Holder: node, Incarnation: "i1", Lease: 15 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]store.Record, 0, n)
	const batch = 5000
	for lo := 0; lo < n; lo += batch {
		var swaps []store.Swap
		for i := lo; i < min(lo+batch, n); i++ {
			swaps = append(swaps, store.Swap{Record: store.Record{Name: fmt.Sprintf("shard-%06d", i), Holder: node, Incarnation: "i1",
				Token: 1, Lease: sess.Lease, Session: sess.Name}, Event: store.Acquired})
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
	return sess, recs
}

// BenchmarkSwapMany1000 is a bulk takeover of 1,000 names held through a
// session: one SwapMany that moves each to another session, token + 1,
// with a log event each.
func BenchmarkSwapMany1000(b *testing.B) {
	s := benchStore(b)
	defer s.Close()
	ctx := context.Background()
	_, recs := holdThrough(b, s, "n1", 1000)
	other, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: store.SessionPrefix + "n2/i1/1", Holder: "n2", Incarnation: "i1", Lease: 15 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	sessions := [2]store.Record{other, {Name: store.SessionPrefix + "n1/i1/1", Holder: "n1", Incarnation: "i1"}}
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

// BenchmarkGetMany1000 reads 1,000 names held through a session in one
// GetMany.
func BenchmarkGetMany1000(b *testing.B) {
	s := benchStore(b)
	defer s.Close()
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
		if res[999].Err != nil {
			b.Fatal(res[999].Err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(names)), "ns/name")
}

// BenchmarkSessionRenew is one renewal of a session record (a Swap at its
// version, no event) while 1,000 or 100,000 names are held through it: its
// cost must not depend on the number of names.
func BenchmarkSessionRenew(b *testing.B) {
	for _, held := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			s := benchStore(b)
			defer s.Close()
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
}
