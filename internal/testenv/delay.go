package testenv

import (
	"sync"
	"testing"
	"time"
)

// delayTick is how long the Delay sampler sleeps between samples. Short
// enough that a stall of a few milliseconds shows, long enough to cost
// nothing measurable (500 wake-ups a second).
const delayTick = 2 * time.Millisecond

// Delay measures the scheduling delay of the test process while it runs:
// a goroutine sleeps delayTick at a time and records how much later than
// asked it woke. On a quiet machine that is well under a millisecond; on
// a loaded one (other packages' tests beside this one, the race detector)
// it is the time a runnable goroutine waited for a CPU, which delays every
// timer a real-time test bounds (a renewal, a step-down, a takeover) by
// as much.
//
// A real-time test bounds its timings by a fixed slack plus the delay
// measured over the interval it bounds (Slack), instead of a slack large
// enough for the worst machine: on a quiet machine the bound stays tight
// and catches a regression, and on a loaded one it grows by what the
// machine took, and no more.
type Delay struct {
	mu      sync.Mutex
	samples []delaySample
	started time.Time // the sleep in progress began
	stop    chan struct{}
	done    chan struct{}
}

// delaySample is one sleep of the sampler: it began at from and woke late
// by late.
type delaySample struct {
	from, to time.Time
	late     time.Duration
}

// maxDelaySamples bounds the samples kept (about five minutes at
// delayTick); older ones are dropped first.
const maxDelaySamples = 150_000

// MeasureDelay starts measuring the scheduling delay of the process until
// the end of t.
func MeasureDelay(t testing.TB) *Delay {
	d := &Delay{stop: make(chan struct{}), done: make(chan struct{})}
	d.started = time.Now()
	go d.sample()
	t.Cleanup(func() {
		close(d.stop)
		<-d.done
	})
	return d
}

func (d *Delay) sample() {
	defer close(d.done)
	timer := time.NewTimer(delayTick)
	defer timer.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-timer.C:
			// When this goroutine runs, not when the timer fired: the wait
			// for a CPU in between is the delay that matters.
			woke := time.Now()
			d.mu.Lock()
			s := delaySample{from: d.started, to: woke, late: max(woke.Sub(d.started)-delayTick, 0)}
			if len(d.samples) == maxDelaySamples {
				d.samples = append(d.samples[:0], d.samples[maxDelaySamples/2:]...)
			}
			d.samples = append(d.samples, s)
			d.started = time.Now()
			d.mu.Unlock()
			timer.Reset(delayTick)
		}
	}
}

// Max returns the largest scheduling delay measured between from and to:
// of every sleep of the sampler that overlaps the interval, and of the
// sleep in progress (a sampler starved now is late by as much).
func (d *Delay) Max(from, to time.Time) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	var m time.Duration
	if now := time.Now(); !d.started.After(to) {
		m = max(now.Sub(d.started)-delayTick, 0)
	}
	for i := len(d.samples) - 1; i >= 0; i-- {
		s := d.samples[i]
		if s.to.Before(from) {
			break
		}
		if !s.from.After(to) {
			m = max(m, s.late)
		}
	}
	return m
}

// Slack returns base plus twice the scheduling delay measured between
// from and to (Max): the slack for a timing that a test bounds over that
// interval. Twice, because a timing a test sees passes at least two
// waits for a CPU: the goroutine whose timer fires (a node's driver at
// its deadline) and the one that notices (the test's, woken by a closed
// channel). The store's tests saw one such timing come 5 ms past once
// the delay counted once (a step-down 194.6 ms after its deadline
// against a bound of 150 ms plus a delay of 39.7 ms, go test ./... on two
// cores).
func (d *Delay) Slack(base time.Duration, from, to time.Time) time.Duration {
	return base + 2*d.Max(from, to)
}
