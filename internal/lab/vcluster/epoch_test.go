package vcluster

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestEpochArithmetic holds epochAdd to Epoch.Add and sinceEpoch to
// Sub(Epoch), bit for bit, over durations of every size and sign, the
// extremes among them, and instants far from Epoch (where sinceEpoch
// leaves it to Sub).
func TestEpochArithmetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ds := []time.Duration{0, 1, -1, time.Second, -time.Second, time.Second - 1, -time.Second + 1,
		math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, 24 * time.Hour, -24 * time.Hour}
	for range 20000 {
		ds = append(ds, time.Duration(rng.Int64()), time.Duration(rng.Int64N(1<<50)-1<<49), time.Duration(rng.Int64N(1e12)-5e11))
	}
	for _, d := range ds {
		if got, want := epochAdd(d), Epoch.Add(d); got != want {
			t.Fatalf("epochAdd(%d) = %#v, want %#v", d, got, want)
		}
		u := Epoch.Add(d)
		if got, want := sinceEpoch(u), u.Sub(Epoch); got != want {
			t.Fatalf("sinceEpoch(Epoch.Add(%d)) = %d, want %d", d, got, want)
		}
	}
	for _, u := range []time.Time{{}, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 6, 1, 12, 0, 0, 5, time.FixedZone("x", 7200)), time.Date(2162, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1890, 1, 1, 0, 0, 0, 1, time.UTC)} {
		if got, want := sinceEpoch(u), u.Sub(Epoch); got != want {
			t.Fatalf("sinceEpoch(%v) = %d, want %d", u, got, want)
		}
	}
}
