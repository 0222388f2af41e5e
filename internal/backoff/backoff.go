// Package backoff computes the delays between attempts of a retry loop:
// capped exponential growth with full jitter. It is a value with no clock,
// goroutine or I/O: the caller sleeps, on whatever clock it has, for the
// delay Next returns, so a test drives it on virtual time.
//
// Full jitter means each delay is drawn uniformly from [0, ceiling), where
// the ceiling doubles from Min at every attempt up to Max. Processes that
// start retrying at the same instant (a fleet restarted together, a store
// that went down under all of them) therefore spread their attempts over
// the whole ceiling instead of knocking in lockstep, provided each draws
// from its own random source: two Backoffs sharing a seed draw the same
// schedule. It does not guarantee any minimum delay (a draw may be close to
// 0) nor any bound on how many attempts are made.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Backoff yields the delays of a retry loop. The zero value is not usable:
// make one with New.
type Backoff struct {
	min, max time.Duration
	rand     *rand.Rand
	ceiling  time.Duration // of the next draw
}

// New returns a Backoff whose ceiling starts at lo and doubles at every
// Next up to hi, drawing from r. lo is raised to 1ns and hi to lo when
// they are below; r nil draws from a source seeded at random, of this
// Backoff alone.
func New(lo, hi time.Duration, r *rand.Rand) *Backoff {
	lo = max(lo, 1)
	hi = max(hi, lo)
	if r == nil {
		r = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &Backoff{min: lo, max: hi, rand: r, ceiling: lo}
}

// Next returns the delay before the next attempt, drawn uniformly from
// [0, ceiling), and doubles the ceiling, saturating at the maximum.
func (b *Backoff) Next() time.Duration {
	d := time.Duration(b.rand.Int64N(int64(b.ceiling)))
	if b.ceiling > b.max/2 {
		b.ceiling = b.max
	} else {
		b.ceiling *= 2
	}
	return d
}

// Ceiling returns the bound of the next delay Next draws.
func (b *Backoff) Ceiling() time.Duration { return b.ceiling }

// Reset starts the schedule again from the minimum, as after a success.
func (b *Backoff) Reset() { b.ceiling = b.min }
