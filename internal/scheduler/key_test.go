package scheduler

import (
	"math/rand/v2"
	"sync"
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

// parseKey reads what time.Parse reads: the same instant (compared with
// ==, location included) or an error where Parse gives one, for every key
// Key writes and for strings that are almost keys.
func TestParseKeyMatchesParse(t *testing.T) {
	keys := []string{
		"", "2026-01-02T03:04:05Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
		"2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z",
		"2026-00-10T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z",
		"2026-01-01T00:00:60Z", "2026-01-01T00:00:00+", "2026-01-01 00:00:00Z", "2026-0a-01T00:00:00Z",
		"-001-01-01T00:00:00Z", "2026-1-01T00:00:00Z0", "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z",
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		keys = append(keys, Key(time.Unix(r.Int64N(400_000_000_000)-62_000_000_000, 0)))
	}
	for range 20000 {
		b := []byte(Key(time.Unix(r.Int64N(4_000_000_000), 0)))
		b[r.IntN(len(b))] = "0123456789-:TZ+x"[r.IntN(16)]
		keys = append(keys, string(b))
	}
	for _, k := range keys {
		got, gerr := parseKey(k)
		want, werr := time.Parse(KeyLayout, k)
		if got != want || (gerr == nil) != (werr == nil) {
			t.Fatalf("parseKey(%q) = %v, %v; time.Parse gives %v, %v", k, got, gerr, want, werr)
		}
		// CanonicalKey reads a key only where Parse reads it, and Key
		// writes it back.
		if c, ok := CanonicalKey(k); ok && (c != want || werr != nil || Key(c) != k) {
			t.Fatalf("CanonicalKey(%q) = %v; time.Parse gives %v, %v; Key writes %q", k, c, want, werr, Key(c))
		}
	}
}

// JitterOf's memo answers what its hash answers, also when keys
// share a slot and when the job or the jitter changes, from goroutines at
// once (go test -race checks the slots' reads and writes).
func TestJitterMemo(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(5, uint64(g)))
			for range 20000 {
				job := []string{"billing", "billing\x00node-1", "x"}[r.IntN(3)]
				key := Key(time.Unix(r.Int64N(200)*86400, 0))
				max := []time.Duration{time.Second, time.Hour, 90 * time.Minute}[r.IntN(3)]
				if got, want := JitterOf(job, key, max), jitterHash(job, key, max); got != want {
					t.Errorf("JitterOf(%q, %q, %v) = %v, its hash gives %v", job, key, max, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}
