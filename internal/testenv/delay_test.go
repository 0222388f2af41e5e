package testenv

import (
	"testing"
	"time"
)

// TestDelayMaxWindow: Max counts the samples that overlap the interval
// asked about, and the sleep in progress, and no others.
func TestDelayMaxWindow(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	d := &Delay{started: time.Now().Add(time.Hour)} // no sleep in progress before the hour
	d.samples = []delaySample{
		{from: at(0), to: at(2), late: 0},
		{from: at(2), to: at(50), late: 46 * time.Millisecond}, // a stall
		{from: at(50), to: at(53), late: time.Millisecond},
		{from: at(53), to: at(55), late: 0},
	}
	for _, c := range []struct {
		from, to int
		want     time.Duration
	}{
		{0, 1, 0},
		{10, 20, 46 * time.Millisecond}, // inside the stall
		{49, 60, 46 * time.Millisecond}, // overlaps its end
		{51, 60, time.Millisecond},
		{54, 60, 0},
		{100, 200, 0},
	} {
		if got := d.Max(at(c.from), at(c.to)); got != c.want {
			t.Errorf("Max(+%dms, +%dms) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	if got := d.Slack(100*time.Millisecond, at(10), at(20)); got != 192*time.Millisecond {
		t.Errorf("Slack = %v, want the base plus twice the stall, 192ms", got)
	}

	// A sampler that has not woken for a while counts as late by as much.
	d.started = time.Now().Add(-time.Second)
	if got := d.Max(time.Now().Add(-time.Minute), time.Now()); got < 900*time.Millisecond {
		t.Errorf("Max with a sleep a second overdue = %v, want about a second", got)
	}
}

// TestMeasureDelaySamples: the sampler records samples while the test
// runs and stops at its end.
func TestMeasureDelaySamples(t *testing.T) {
	var d *Delay
	t.Run("measure", func(t *testing.T) {
		d = MeasureDelay(t)
		from := time.Now()
		time.Sleep(20 * delayTick)
		d.mu.Lock()
		n := len(d.samples)
		d.mu.Unlock()
		if n == 0 {
			t.Fatal("no samples after twenty ticks")
		}
		t.Logf("%d samples, largest delay %v", n, d.Max(from, time.Now()))
	})
	select {
	case <-d.done:
	default:
		t.Fatal("the sampler still runs after its test ended")
	}
}
