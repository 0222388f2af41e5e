package vcluster

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestRealAtReadsTheClock holds realAt, which compares the clock's
// readings to the timer's instant as durations since Epoch, to the
// earliest real instant at which the clock, read as a Time (clockAt),
// is not before the instant, over drifting clocks and instants near and
// far, with a monotonic reading and in another zone too.
func TestRealAtReadsTheClock(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	mono := time.Now() // carries a monotonic reading
	for i := range 20000 {
		n := driftingNode(rng, i)
		d := time.Duration(rng.Int64N(int64(96*time.Hour))) - 48*time.Hour
		if i%3 == 0 {
			d = time.Duration(rng.Int64N(int64(10 * time.Second)))
		}
		l := epochAdd(n.l0 + d)
		switch i % 5 {
		case 1:
			l = l.In(time.FixedZone("x", 3600))
		case 2:
			l = mono.Add(l.Sub(mono)) // the same instant, with a monotonic reading
		}
		want := n.t0 + time.Duration(math.Ceil(float64(l.Sub(Epoch)-n.l0)/n.rate))
		for step := time.Duration(1); n.clockAt(want).Before(l); step *= 2 {
			want += step
		}
		if got := n.realAt(l); got != want {
			t.Fatalf("rate %v, t0 %v, l0 %v, instant +%v: realAt %v, want %v", n.rate, n.t0, n.l0, d, got, want)
		}
	}
}
