package backoff

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// Every delay lies below its ceiling; the ceiling doubles from the minimum
// to the maximum and stays there; Reset starts over.
func TestCeilingDoublesToCap(t *testing.T) {
	b := New(100*time.Millisecond, 15*time.Second, seeded(1))
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 12800, 15000, 15000, 15000}
	for i, w := range want {
		w *= time.Millisecond
		if c := b.Ceiling(); c != w {
			t.Fatalf("attempt %d: ceiling %v, want %v", i, c, w)
		}
		if d := b.Next(); d < 0 || d >= w {
			t.Fatalf("attempt %d: delay %v outside [0, %v)", i, d, w)
		}
	}
	b.Reset()
	if c := b.Ceiling(); c != 100*time.Millisecond {
		t.Fatalf("ceiling after Reset %v, want 100ms", c)
	}
}

// Bounds at the edges saturate, never wrap.
func TestEdges(t *testing.T) {
	b := New(time.Duration(math.MaxInt64)/2+1, time.Duration(math.MaxInt64), seeded(2))
	for range 5 {
		if d := b.Next(); d < 0 {
			t.Fatalf("negative delay %v", d)
		}
		if c := b.Ceiling(); c != time.Duration(math.MaxInt64) {
			t.Fatalf("ceiling %v, want the maximum", c)
		}
	}
	b = New(0, -1, seeded(3)) // raised to 1ns
	if d := b.Next(); d != 0 {
		t.Fatalf("delay %v from a 1ns ceiling", d)
	}
	if c := b.Ceiling(); c != 1 {
		t.Fatalf("ceiling %v, want 1ns", c)
	}
}

// schedule returns the instants, on virtual time from 0, at which a
// process retrying with b attempts until (and including) its first attempt
// at or after up, when the store answers.
func schedule(b *Backoff, up time.Duration) []time.Duration {
	var at []time.Duration
	now := time.Duration(0)
	for {
		at = append(at, now)
		if now >= up {
			return at
		}
		now += b.Next()
	}
}

// fleetStats runs n processes, process i drawing from src(i), against a
// store that is down from 0 to up, and returns the most attempts any one
// window of width holds after warm (when every ceiling has reached its
// cap) and the spread (last minus first) of the instants at which the
// processes find the store back.
func fleetStats(n int, src func(i int) *rand.Rand, lo, hi, up, warm, width time.Duration) (crowd int, spread time.Duration, back []time.Duration) {
	var all []time.Duration
	for i := range n {
		s := schedule(New(lo, hi, src(i)), up)
		back = append(back, s[len(s)-1])
		for _, at := range s {
			if at >= warm {
				all = append(all, at)
			}
		}
	}
	slices.Sort(all)
	for i := range all {
		j := i
		for j < len(all) && all[j]-all[i] < width {
			j++
		}
		crowd = max(crowd, j-i)
	}
	slices.Sort(back)
	return crowd, back[len(back)-1] - back[0], back
}

// Twenty processes started at once against a store that is down for 60s,
// retrying from 100ms up to a 15s cap, each with its own seed: no 100ms
// window after the first 2s (when the ceilings are past 1.6s) holds the
// attempts of more than a third of them, and they find the store back spread over
// seconds, not together. The negative control, twenty processes sharing
// one seed, attempts in lockstep: all twenty in one window, no spread.
func TestFleetDoesNotRetryInLockstep(t *testing.T) {
	const n = 20
	lo, hi, up := 100*time.Millisecond, 15*time.Second, 60*time.Second
	crowd, spread, back := fleetStats(n, func(i int) *rand.Rand { return seeded(uint64(i) + 1) }, lo, hi, up, 2*time.Second, 100*time.Millisecond)
	t.Logf("own seeds: at most %d of %d processes' attempts in one 100ms window; store found back from %v to %v (spread %v)", crowd, n, back[0], back[n-1], spread)
	if crowd > n/3 {
		t.Errorf("%d attempts in one 100ms window, want at most %d", crowd, n/3)
	}
	if spread < 5*time.Second {
		t.Errorf("store found back over %v, want a spread of 5s or more", spread)
	}
	for _, at := range back {
		if at-up >= hi {
			t.Errorf("a process found the store back %v after it answered, want less than the cap %v", at-up, hi)
		}
	}

	crowd, spread, _ = fleetStats(n, func(int) *rand.Rand { return seeded(7) }, lo, hi, up, 2*time.Second, 100*time.Millisecond)
	if crowd < n || spread != 0 {
		t.Errorf("shared seed: %d attempts in one window, spread %v; the check should see all %d in lockstep", crowd, spread, n)
	}
}
