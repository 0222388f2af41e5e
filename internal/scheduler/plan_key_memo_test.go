package scheduler

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestKeyMemo holds Key, which remembers its answers, to keyOf: instants
// in and out of the digit-by-digit range, with and without fractions of
// a second, asked again and crossing in the table's slots.
func TestKeyMemo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ts []time.Time
	base := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for i := range 2000 {
		ts = append(ts,
			base.Add(time.Duration(i)*time.Minute),
			base.Add(time.Duration(i)*time.Hour+time.Duration(rng.IntN(1e9))),
			time.Unix(rng.Int64N(1<<36)-1<<35, rng.Int64N(1e9)).In(time.FixedZone("x", 3600*rng.IntN(12))),
		)
	}
	ts = append(ts, time.Time{}, time.Date(-5, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC))
	for round := range 2 {
		for _, u := range ts {
			if got, want := Key(u), keyOf(u); got != want {
				t.Fatalf("round %d: Key(%v) = %q, want %q", round, u, got, want)
			}
		}
	}
}
