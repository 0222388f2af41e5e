package vcluster

import (
	"math"
	"sync/atomic"
	"time"
)

// Epoch is where local clocks and the business calendar start.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// epoch0 is Epoch as declared, and epochSec, epochNsec its instant:
// epochAdd and sinceEpoch compute from them while Epoch is epoch0.
var (
	epoch0    = Epoch
	epochSec  = Epoch.Unix()
	epochNsec = int64(Epoch.Nanosecond())
)

// epochAdd is Epoch.Add(d), the same Time bit for bit, and cheaper: every
// node's clock is read as one (node.local). Epoch as declared is UTC
// with no monotonic reading, so the sum is the instant's seconds and
// nanoseconds in [0, 1e9), as time.Unix(...).UTC() builds it (without
// Add's monotonic and overflow branches: Epoch's seconds plus any
// Duration's fit). TestEpochArithmetic holds both to Add and Sub.
func epochAdd(d time.Duration) time.Time {
	if Epoch != epoch0 {
		return Epoch.Add(d)
	}
	return time.Unix(epochSec+int64(d/time.Second), epochNsec+int64(d%time.Second)).UTC()
}

// sinceEpoch is t.Sub(Epoch), computed directly when t is within 2^32
// seconds of it (Sub saturates only beyond about 292 years).
func sinceEpoch(t time.Time) time.Duration {
	if d, ok := sinceEpochExact(t); ok {
		return d
	}
	return t.Sub(Epoch)
}

// sinceEpochExact is sinceEpoch computed directly, ok when it could be
// (Epoch as declared, t within 2^32 seconds of it): t is then the instant
// epochAdd(d), so that epochAdd(c).Before(t) is c < d, for any c.
func sinceEpochExact(t time.Time) (d time.Duration, ok bool) {
	s := t.Unix() - epochSec
	if Epoch != epoch0 || s <= -1<<32 || s >= 1<<32 {
		return 0, false
	}
	return time.Duration(s)*time.Second + time.Duration(int64(t.Nanosecond())-epochNsec), true
}

// Calendar maps elapsed time to the business wall clock: one business day
// of 24h per Day, from Epoch. The simulator, the in-process drill (virtual
// time) and the process drill (real time since round 0) all use it, so that
// periods have the same keys in every mode.
type Calendar struct{ Day time.Duration }

// Wall returns the business wall time after t.
func (c Calendar) Wall(t time.Duration) time.Time {
	days, frac := t/c.Day, t%c.Day
	return epochAdd(days*24*time.Hour + time.Duration(float64(frac)/float64(c.Day)*float64(24*time.Hour)))
}

// Virtual inverts Wall, rounding up: the first t with Wall(t) >= w.
func (c Calendar) Virtual(w time.Time) time.Duration {
	d := sinceEpoch(w)
	days, frac := d/(24*time.Hour), d%(24*time.Hour)
	t := days*c.Day + time.Duration(math.Ceil(float64(frac)/float64(24*time.Hour)*float64(c.Day)))
	for c.Wall(t).Before(w) { // float rounding
		t++
	}
	return t
}

// Business returns the business duration of the elapsed duration d.
func (c Calendar) Business(d time.Duration) time.Duration {
	return time.Duration(float64(d) / float64(c.Day) * float64(24*time.Hour))
}

// Elapsed inverts Business.
func (c Calendar) Elapsed(b time.Duration) time.Duration {
	return time.Duration(float64(b) / float64(24*time.Hour) * float64(c.Day))
}

// Clock gives a store the run's virtual time as business wall time, for the
// informational store times (Record.Updated, Event.Time). Create it with
// NewClock, pass its Now to the store and the Clock to Config.Clock.
type Clock struct {
	now atomic.Int64
	cal Calendar
}

// NewClock returns a clock for runs whose Config.Day is day.
func NewClock(day time.Duration) *Clock { return &Clock{cal: Calendar{Day: day}} }

// Now returns the current virtual time as business wall time.
func (c *Clock) Now() time.Time { return c.cal.Wall(time.Duration(c.now.Load())) }
