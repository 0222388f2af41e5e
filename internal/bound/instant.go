package bound

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// InstantHelp says in a flag's help what ParseInstant accepts.
const InstantHelp = "RFC 3339 (2026-03-01T00:00:00Z), a date (2026-03-01: midnight UTC) or relative to now (-3d, -12h, +90m)"

// Instants outside [MinInstant, MaxInstant] are refused by ParseInstant:
// every store keeps times as nanoseconds (or finer units) since 1970 in an
// int64, which would wrap past MaxInstant.
var (
	MinInstant = time.Unix(0, 0).UTC()
	MaxInstant = time.Unix(0, math.MaxInt64).UTC().Truncate(time.Second)
)

// relative is a signed offset from now: days ("-3d") or what ParseDuration
// takes ("-12h", "+1h30m").
// Compiled on first use, not at start-up: every process links it, few use it.
var relative = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[-+]([0-9]+)d$`) })

// ParseInstant parses the instant a user writes in a time flag (--from,
// --to, ...), the one parser of every such flag: an RFC 3339 time (with
// fractional seconds or not), a plain date YYYY-MM-DD (midnight UTC, the
// zone of period keys and of the store's times, whatever the job's
// zone), or an offset from now with a sign: "-3d" (days of 24 hours),
// "-12h", "+90m" (any signed duration ParseDuration takes). A value out
// of range (a month 13, an offset past about 292 years, an instant before
// 1970 or after MaxInstant) is refused, never wrapped. The instant is
// returned in UTC. Errors quote s and say what is accepted.
func ParseInstant(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return inRange(s, t)
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return inRange(s, t)
	}
	if m := relative().FindStringSubmatch(s); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || n > math.MaxInt64/int64(24*time.Hour) {
			return time.Time{}, fmt.Errorf("%q is out of range: an offset is at most %d days (about 292 years)", s, math.MaxInt64/int64(24*time.Hour))
		}
		d := time.Duration(n) * 24 * time.Hour
		if s[0] == '-' {
			d = -d
		}
		return inRange(s, now.Add(d))
	}
	if len(s) > 1 && (s[0] == '-' || s[0] == '+') {
		d, err := ParseDuration(s)
		if err != nil {
			return time.Time{}, err
		}
		return inRange(s, now.Add(d))
	}
	if dateLike().MatchString(s) {
		return time.Time{}, fmt.Errorf("%q is out of range or not a valid time; want %s", s, InstantHelp)
	}
	return time.Time{}, fmt.Errorf("%q is not a time; want %s", s, InstantHelp)
}

// dateLike is the shape of a date or an RFC 3339 time: one that does not
// parse has a field out of range (month 13, hour 25, February 30).
// Compiled on first use, not at start-up: every process links it, few use it.
var dateLike = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[-+][0-9]{2}:[0-9]{2}))?$`)
})

func inRange(s string, t time.Time) (time.Time, error) {
	if t.Before(MinInstant) || t.After(MaxInstant) {
		return time.Time{}, fmt.Errorf("%q is out of range: want an instant from %s to %s", s, MinInstant.Format(time.RFC3339), MaxInstant.Format(time.RFC3339))
	}
	return t.UTC(), nil
}
