package vcluster

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/election"
)

// TestExpiryIsValid holds valid's test (now < expiry) to election.Valid on
// the node's clock at every instant around the expiry and at instants drawn
// far from it, over drifting clocks, deadlines of every distance and
// deadlines the clock never or always reaches.
func TestExpiryIsValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 20000 {
		n := driftingNode(rng, i)
		var d time.Duration
		switch i % 4 {
		case 0:
			d = time.Duration(rng.Int64N(int64(10 * time.Second)))
		case 1:
			d = time.Duration(rng.Int64N(int64(100 * 24 * time.Hour)))
		case 2:
			d = time.Duration(rng.Int64N(1000))
		default:
			d = time.Duration(rng.Int64N(int64(96*time.Hour))) - 48*time.Hour
		}
		n.deadline = epochAdd(n.l0 + d)
		at := n.expiry()
		check := func(now time.Duration) {
			if got, want := now < at, election.Valid(n.clockAt(now), n.deadline); got != want {
				t.Fatalf("rate %v, t0 %v, l0 %v, deadline %v: at %v valid says %v, election.Valid %v (expiry %v)", n.rate, n.t0, n.l0, d, now, got, want, at)
			}
		}
		for k := time.Duration(-3); k <= 3; k++ {
			check(at + k)
		}
		for range 4 {
			check(n.t0 + time.Duration(rng.Int64N(int64(200*24*time.Hour))))
		}
		if !n.expiryOK || n.expiry() != at {
			t.Fatal("expiry is not kept")
		}
	}
	// A deadline the clock reaches only after any run, and one it passed
	// before any.
	n := &node{rate: 1, deadline: epochAdd(1 << 62)}
	if at := n.expiry(); at < 1<<60 {
		t.Fatalf("a deadline 146 years away expires at %v", at)
	}
	n = &node{rate: 1, deadline: epochAdd(-1 << 62)}
	if at := n.expiry(); at > -1<<60 {
		t.Fatalf("a deadline 146 years before expires at %v", at)
	}
}

// driftingNode is the i-th node of a test over drifting clocks: one of a
// few rates, from fast and slow by a nanosecond a second to twice or half
// real time, started at a random instant with its clock up to a day off.
func driftingNode(rng *rand.Rand, i int) *node {
	rates := []float64{1, 1.0001, 0.9999, 1.05, 0.95, 1 + 1e-9, 1 - 1e-9, 2, 0.5, 1.3333333333333333}
	return &node{rate: rates[i%len(rates)], t0: time.Duration(rng.Int64N(int64(48 * time.Hour))), l0: time.Duration(rng.Int64N(int64(48*time.Hour))) - 24*time.Hour}
}
