package testenv

import (
	"flag"
	"os"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// rapidChecksFlag is rapid's flag for the draws of a property test.
const rapidChecksFlag = "rapid.checks"

// Draws caps the draws of one expensive rapid property test in a short
// run. Unless the long tests run (Long: CI) or the run names its own
// number (-rapid.checks, RAPID_CHECKS), the property passed through Prop runs only the
// first short draws that rapid asks for and returns at once from the
// rest; with either, it runs every draw rapid asks for (100 by default).
//
// A draw that fails (rt.Failed, or a panic such as rt.Fatal) lifts the
// cap for the rest of the test, so that rapid's shrinking of the failure
// and its replay of the smallest failing draw run in full.
//
// It logs, at the end of t, how many draws ran and that the run was cut.
// Each draw is as strong as before; a short run draws fewer of them, so a
// rare failing input is found in CI (or with BATON_LONG=1) rather than
// in every developer's `go test ./...`.
type Draws struct {
	mu      sync.Mutex
	limit   int // 0: no cap
	ran     int
	failing bool
}

// NewDraws returns the cap for t's property: short draws in a short run,
// none otherwise. It panics if short is not positive: a property test
// that draws nothing cannot fail.
func NewDraws(t testing.TB, short int) *Draws {
	if short <= 0 {
		panic("testenv.NewDraws: short must be positive")
	}
	limit := short
	if Long() || flagGiven(rapidChecksFlag) || os.Getenv("RAPID_CHECKS") != "" {
		limit = 0
	}
	return newDraws(t, limit)
}

// newDraws returns a cap of limit draws (0: none).
func newDraws(t testing.TB, limit int) *Draws {
	d := &Draws{limit: limit}
	t.Cleanup(func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.limit > 0 && !d.failing {
			t.Logf("short run: %d draws of the property, at most %d (CI=true, %s=1 or -%s=N for rapid's full number)", d.ran, d.limit, LongVar, rapidChecksFlag)
		}
	})
	return d
}

// Prop wraps prop: it runs prop for the draws under the cap and returns
// at once for the others.
func (d *Draws) Prop(prop func(*rapid.T)) func(*rapid.T) {
	return func(rt *rapid.T) {
		d.mu.Lock()
		if d.limit > 0 && !d.failing && d.ran >= d.limit {
			d.mu.Unlock()
			return
		}
		d.ran++
		d.mu.Unlock()
		completed := false
		defer func() {
			if !completed || rt.Failed() {
				d.mu.Lock()
				d.failing = true
				d.mu.Unlock()
			}
		}()
		prop(rt)
		completed = true
	}
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
