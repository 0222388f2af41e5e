package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/batonhq/baton/internal/scheduler"
)

// KeyLayout is the layout of a period key: the scheduled instant in UTC,
// to the second. Keys of one job sort in time order.
const KeyLayout = scheduler.KeyLayout // "2006-01-02T15:04:05Z"

// Key returns the period key of the instant t.
func Key(t time.Time) string { return scheduler.Key(t) }

// ParseKey parses a period key, rejecting anything that is not exactly in
// KeyLayout (so that one instant never has two keys).
func ParseKey(key string) (time.Time, error) {
	t, err := time.Parse(KeyLayout, key)
	if err != nil || t.Format(KeyLayout) != key {
		return time.Time{}, fmt.Errorf("period key %q: want an RFC 3339 time in UTC to the second, such as 2026-01-02T15:04:05Z", key)
	}
	return t, nil
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

// cronParser accepts the standard five fields (minute hour day-of-month
// month day-of-week) and the descriptors @yearly, @annually, @monthly,
// @weekly, @daily, @midnight and @hourly.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Cron returns the schedule of a cron expression evaluated in loc: the five
// standard fields or one of the descriptors @yearly, @annually, @monthly,
// @weekly, @daily, @midnight, @hourly. "@every" is refused (its instants
// depend on when a process starts, so nodes would disagree on the periods;
// use Every), and so is a "TZ=" or "CRON_TZ=" prefix (pass loc instead).
// Around a daylight saving change the instants are those of
// github.com/robfig/cron/v3: an hour skipped by the change has no instant.
func Cron(expr string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		return nil, errors.New("cron schedule needs a time zone")
	}
	e := strings.TrimSpace(expr)
	switch {
	case strings.HasPrefix(e, "@every"):
		return nil, fmt.Errorf("cron expression %q: @every is not allowed; use an interval schedule, whose periods are aligned", expr)
	case strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ="):
		return nil, fmt.Errorf("cron expression %q: give the time zone separately, not as a prefix", expr)
	}
	s, err := cronParser.Parse(e)
	if err != nil {
		return nil, fmt.Errorf("cron expression %q: %w", expr, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron expression %q: unsupported form", expr)
	}
	spec.Location = loc
	return cronSchedule{spec: spec, expr: e}, nil
}

type cronSchedule struct {
	spec *cron.SpecSchedule
	expr string
}

func (s cronSchedule) Next(t time.Time) time.Time {
	n := s.spec.Next(t)
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

func (s cronSchedule) String() string {
	return fmt.Sprintf("cron %q in %s", s.expr, s.spec.Location)
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
