package electortest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// BenchHandoverResign runs b.N graceful handovers between the two Electors
// of one name, back and forth, the first of which campaigns first. Before
// each, the next leader starts campaigning and is given settle() to start
// waiting; the timer then runs from the leader's Resign until the other
// holds the next Term, whose token must be one more. Each backend's
// BenchmarkHandoverResign calls it with Electors on its own store. Besides
// the mean (ns/op) it reports the median handover (p50-ns) and the
// slowest (max-ns).
func BenchHandoverResign(b *testing.B, els [2]*baton.Elector, settle func() time.Duration) {
	ctx := context.Background()
	term, err := els[0].Campaign(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cur := 0
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		next := 1 - cur
		won := make(chan *baton.Term, 1)
		go func() {
			t, err := els[next].Campaign(ctx)
			if err != nil {
				b.Error(err)
			}
			won <- t
		}()
		time.Sleep(settle())
		b.StartTimer()
		start := time.Now()
		if err := term.Resign(ctx); err != nil {
			b.Fatal(err)
		}
		nt := <-won
		took = append(took, time.Since(start))
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
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(took[len(took)-1].Nanoseconds()), "max-ns")
}
