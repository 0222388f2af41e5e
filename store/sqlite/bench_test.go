package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
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
// it, and returns the session and the names' records.
func holdThrough(b *testing.B, s *sqlite.Store, node string, n int) (store.Record, []store.Record) {
	b.Helper()
	sess, err := s.Swap(context.Background(), store.Swap{Record: store.Record{Name: store.SessionPrefix + node + "/i1/1", Holder: node, Incarnation: "i1", Lease: 15 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	return sess, storetest.HoldMany(b, s, sess, n)
}

// BenchmarkTakeover100k is a bulk takeover as the runtime runs it after a
// holder of 100,000 names died: 100,000 names held through a session,
// stored with their log rows, are moved to another session (token + 1, a
// taken-over-after-expiry event each) in 100 SwapMany calls of 1,000, up
// to 4 in flight, while a change feed follows the store and its reader
// reads back the names it is told of with GetMany (feed=true; without
// them with feed=false). The names come in name order (order=name), as
// the runtime sends them (each call writes neighbouring rows), or in a
// random order (order=random: each call writes rows spread over the whole
// table, the worst case for the file's pages). One iteration is the
// whole takeover; the next one moves the names back. It reports the wall
// time per SwapMany of 1,000 (ms/1000) and the process's CPU time per
// swap (cpu-ns/swap), the poller's and the reader's included.
func BenchmarkTakeover100k(b *testing.B) {
	for _, random := range []bool{false, true} {
		for _, feed := range []bool{false, true} {
			order := "name"
			if random {
				order = "random"
			}
			b.Run(fmt.Sprintf("order=%s/feed=%v", order, feed), func(b *testing.B) { benchTakeover(b, random, feed) })
		}
	}
}

func benchTakeover(b *testing.B, random, follow bool) {
	const (
		names    = 100000
		chunk    = 1000
		inFlight = 4
	)
	s := benchStore(b)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, recs := holdThrough(b, s, "n1", names)
	other, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: store.SessionPrefix + "n2/i1/1", Holder: "n2", Incarnation: "i1", Lease: 15 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	sessions := [2]store.Record{other, {Name: store.SessionPrefix + "n1/i1/1", Holder: "n1", Incarnation: "i1"}}
	order := make([]int, names)
	for i := range order {
		order[i] = i
	}
	if random {
		rand.New(rand.NewPCG(1, 2)).Shuffle(names, func(i, j int) { order[i], order[j] = order[j], order[i] })
	}

	var reader sync.WaitGroup
	if follow {
		feed := s.WatchChanges(ctx)
		reader.Go(func() {
			for batch := range feed {
				names := make([]string, len(batch))
				for i, c := range batch {
					names[i] = c.Name
				}
				for lo := 0; lo < len(names); lo += chunk {
					if _, err := s.GetMany(ctx, names[lo:min(lo+chunk, len(names))]); err != nil && ctx.Err() == nil {
						b.Error(err)
						return
					}
				}
			}
		})
	}
	defer reader.Wait()
	defer cancel()

	cpu0 := sqlite.CPUTime(b)
	for i := 0; b.Loop(); i++ {
		to := sessions[i%2]
		next := make(chan int, names/chunk)
		for lo := 0; lo < names; lo += chunk {
			next <- lo
		}
		close(next)
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() {
				swaps := make([]store.Swap, chunk)
				for lo := range next {
					for j, k := range order[lo : lo+chunk] {
						r := recs[k]
						n := r
						n.Holder, n.Incarnation, n.Session, n.Token = to.Holder, to.Incarnation, to.Name, r.Token+1
						swaps[j] = store.Swap{Expect: r.Version, Record: n, Event: store.TakenOver}
					}
					res, err := s.SwapMany(ctx, swaps)
					if err != nil {
						b.Error(err)
						return
					}
					for j, r := range res {
						if r.Err != nil {
							b.Error(r.Err)
							return
						}
						recs[order[lo+j]] = r.Record
					}
				}
			})
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
	}
	calls := float64(b.N * names / chunk)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/calls, "ms/1000")
	b.ReportMetric(float64((sqlite.CPUTime(b)-cpu0).Nanoseconds())/float64(b.N*names), "cpu-ns/swap")
}
