package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

// BenchmarkRenewUnderBulk is a leader's renewal (Swap at the record's
// version) while the same Store takes batched writes without pause: two
// goroutines, as a driver's two batched writes in flight, each sending
// SwapMany of 1,000 takeovers of fresh names again and again. It reports
// the renewal's median and worst latency (p50-ms, max-ms) and the batches
// applied meanwhile: the renewal's wait behind the batched writes queued
// before it.
func BenchmarkRenewUnderBulk(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "baton.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "leader", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	batches := 0
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; ; round++ {
				select {
				case <-stop:
					return
				default:
				}
				swaps := make([]store.Swap, 1000)
				for i := range swaps {
					swaps[i] = store.Swap{Record: store.Record{Name: fmt.Sprintf("bulk-%d-%d-%d", w, round, i), Holder: "n2", Incarnation: "i2", Token: 1, Lease: time.Minute}}
				}
				if _, err := s.SwapMany(ctx, swaps); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				batches++
				mu.Unlock()
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let the batches queue
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		time.Sleep(5 * time.Millisecond) // a renewal is not back to back
	}
	close(stop)
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(batches)/float64(len(lat)), "batches/renewal")
}
