package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
)

// KeyLayout is the layout of a scheduled period's key: the scheduled
// instant in UTC, to the second. Keys of one job sort in time order.
const KeyLayout = scheduler.KeyLayout // "2006-01-02T15:04:05Z"

// manualSep separates a manual key's second from its fraction. It sorts
// after every byte of a KeyLayout key, so a manual key sorts after the
// scheduled key of the same second and before the next second's.
const manualSep = "~manual."

// Key returns the period key of the scheduled instant t.
func Key(t time.Time) string { return scheduler.Key(t) }

// ManualKey returns the key of a manual trigger at t: the scheduled key of
// t's second followed by "~manual." and the microseconds, such as
// 2026-01-02T15:04:05Z~manual.250000. A scheduled period's key never has
// that suffix, so a manual run can never collide with a scheduled period;
// keys still sort in time order, scheduled and manual ones together.
// Microseconds are what every store keeps of a time.
func ManualKey(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	return Key(t) + fmt.Sprintf("%s%06d", manualSep, t.Nanosecond()/1000)
}

// IsManualKey reports whether key has the form of ManualKey.
func IsManualKey(key string) bool {
	_, err := ParseKey(key)
	return err == nil && strings.Contains(key, manualSep)
}

// ParseKey parses a period key: a scheduled one (KeyLayout) or a manual
// one (ManualKey), rejecting anything that is not exactly in one of those
// forms (so that one instant never has two keys of one kind). It returns
// the instant the key stands for, in UTC.
func ParseKey(key string) (time.Time, error) {
	sec, frac, manual := strings.Cut(key, manualSep)
	t, ok := scheduler.CanonicalKey(sec) // what Key writes, read without Parse and Format
	if !ok {
		var err error
		t, err = time.Parse(KeyLayout, sec)
		ok = err == nil && t.Format(KeyLayout) == sec
	}
	if !ok {
		return time.Time{}, fmt.Errorf("period key %q: want an RFC 3339 time in UTC to the second, such as 2026-01-02T15:04:05Z, or a manual key such as 2026-01-02T15:04:05Z~manual.250000", key)
	}
	if !manual {
		return t, nil
	}
	us, err := strconv.Atoi(frac)
	if err != nil || len(frac) != 6 || frac[0] == '+' || frac[0] == '-' {
		return time.Time{}, fmt.Errorf("manual period key %q: want six digits of microseconds after %q, such as 2026-01-02T15:04:05Z~manual.250000", key, manualSep)
	}
	return t.Add(time.Duration(us) * time.Microsecond), nil
}

// Schedule yields a job's scheduled instants. Implementations are pure:
// the same argument always gives the same answer, on every node.
type Schedule interface {
	// Next returns the first scheduled instant strictly after t, in UTC,
	// or the zero time if there is none.
	Next(t time.Time) time.Time
	// String describes the schedule for people, e.g. "every 24h0m0s".
	String() string
}

// Every returns the schedule of the instants epoch + offset + k*d for every
// integer k, where epoch is the Unix epoch: aligned, so every node computes
// the same instants whenever it starts. d must be a whole number of seconds,
// at least one; offset a whole number of seconds in [0, d).
func Every(d, offset time.Duration) (Schedule, error) {
	if d < time.Second || d%time.Second != 0 {
		return nil, fmt.Errorf("interval must be a whole number of seconds, at least 1s, got %v", d)
	}
	if offset < 0 || offset >= d || offset%time.Second != 0 {
		return nil, fmt.Errorf("offset must be a whole number of seconds in [0, %v), got %v", d, offset)
	}
	return interval{d: d, off: offset}, nil
}

type interval struct{ d, off time.Duration }

func (s interval) Next(t time.Time) time.Time {
	// Work in whole seconds since the epoch: periods are whole seconds, and
	// int64 seconds cover any time.Time a caller can pass.
	d, off := int64(s.d/time.Second), int64(s.off/time.Second)
	x := t.Unix() - off // t is in [x, x+1) seconds after the shifted epoch
	k := x / d
	if x%d < 0 {
		k-- // floor division for instants before the epoch
	}
	return time.Unix((k+1)*d+off, 0).UTC()
}

func (s interval) String() string {
	if s.off == 0 {
		return "every " + s.d.String()
	}
	return fmt.Sprintf("every %v offset %v", s.d, s.off)
}

// Due returns the scheduled instants in (from, to], oldest first, at most
// limit of them (limit <= 0: no limit), and whether more instants in the
// range were left out.
func Due(s Schedule, from, to time.Time, limit int) (instants []time.Time, more bool) {
	for t := s.Next(from); !t.IsZero() && !t.After(to); t = s.Next(t) {
		if limit > 0 && len(instants) == limit {
			return instants, true
		}
		instants = append(instants, t)
	}
	return instants, false
}
