package drill

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
)

// lineWriter writes timestamped event lines, one at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) say(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%d %s\n", time.Now().UnixNano(), fmt.Sprintf(format, a...))
}

// driftClock is a baton.Clock that runs at a rate that can change (the
// drift fault). At rate 1 it is the real clock.
type driftClock struct {
	mu      sync.Mutex
	t0, l0  time.Time // real and local time at the last rate change
	rate    float64
	changed chan struct{} // closed and replaced at every rate change
}

var _ baton.Clock = (*driftClock)(nil)

func newDriftClock() *driftClock {
	now := time.Now()
	return &driftClock{t0: now, l0: now, rate: 1, changed: make(chan struct{})}
}

func (c *driftClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.localLocked(time.Now())
}

func (c *driftClock) localLocked(real time.Time) time.Time {
	return c.l0.Add(time.Duration(float64(real.Sub(c.t0)) * c.rate))
}

// realAt returns the real time at which the clock will read local, at the
// current rate.
func (c *driftClock) realAt(local time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t0.Add(time.Duration(float64(local.Sub(c.l0)) / c.rate))
}

func (c *driftClock) setRate(r float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.l0, c.t0, c.rate = c.localLocked(now), now, r
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *driftClock) NewTimer(d time.Duration) baton.Timer {
	t := &driftTimer{c: make(chan time.Time, 1), stop: make(chan struct{})}
	target := c.Now().Add(d)
	go func() {
		for {
			c.mu.Lock()
			wait := time.Duration(float64(target.Sub(c.localLocked(time.Now()))) / c.rate)
			changed := c.changed
			c.mu.Unlock()
			if wait <= 0 {
				if t.fired.CompareAndSwap(false, true) {
					t.c <- c.Now()
				}
				return
			}
			tm := time.NewTimer(wait)
			select {
			case <-tm.C:
			case <-changed:
				tm.Stop()
			case <-t.stop:
				tm.Stop()
				return
			}
		}
	}()
	return t
}

type driftTimer struct {
	c     chan time.Time
	stop  chan struct{}
	once  sync.Once
	fired atomic.Bool
}

func (t *driftTimer) C() <-chan time.Time { return t.c }

func (t *driftTimer) Stop() bool {
	stopped := t.fired.CompareAndSwap(false, true)
	t.once.Do(func() { close(t.stop) })
	return stopped
}
