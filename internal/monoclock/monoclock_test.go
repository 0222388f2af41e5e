package monoclock

import (
	"testing"
	"time"
)

// TestNowAdvances checks that the clock never goes back and advances with
// Go's own monotonic clock, within what a load may add between reads.
func TestNowAdvances(t *testing.T) {
	a, start := Now(), time.Now()
	time.Sleep(20 * time.Millisecond)
	b, took := Now(), time.Since(start)
	if d := time.Duration(b - a); d < 20*time.Millisecond || d > took+time.Second {
		t.Fatalf("clock advanced %v over a %v sleep (measured %v)", d, 20*time.Millisecond, took)
	}
	for prev, i := Now(), 0; i < 1000; i++ {
		n := Now()
		if n < prev {
			t.Fatalf("clock went back: %d after %d", n, prev)
		}
		prev = n
	}
}
