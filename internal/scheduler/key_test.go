package scheduler

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Key writes what Format wrote before it was written digit by digit: the
// same key for instants across the years Key writes itself, their edges,
// and the years it leaves to Format.
func TestKeyMatchesFormat(t *testing.T) {
	format := func(t time.Time) string { return t.UTC().Truncate(time.Second).Format(KeyLayout) }
	at := []time.Time{
		{}, // the zero time: year 1
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(0, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(-5, 3, 4, 5, 6, 7, 8, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 5, 19, 42, 15, 500, time.FixedZone("x", -7*3600-1800)),
		time.Now(), // with a monotonic reading
		time.Unix(1<<40, 0),
		time.Unix(-1<<40, 5),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		at = append(at, time.Unix(r.Int64N(400_000_000_000)-200_000_000_000, r.Int64N(2e9)).In(time.FixedZone("z", r.IntN(50_000)-25_000)))
	}
	for _, a := range at {
		if got, want := Key(a), format(a); got != want {
			t.Fatalf("Key(%v) = %q, Format wrote %q", a, got, want)
		}
	}
}
