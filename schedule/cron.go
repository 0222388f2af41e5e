package schedule

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser accepts the standard five fields (minute hour day-of-month
// month day-of-week) and the descriptors @yearly, @annually, @monthly,
// @weekly, @daily, @midnight and @hourly.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// dstWindow is the largest clock change that Cron treats as a daylight
// saving change (the rule below). Like Vixie cron, which draws the line at
// three hours, a larger change of a zone's offset is not smoothed over.
const dstWindow = 3 * time.Hour

// Cron returns the schedule of a cron expression evaluated in loc: the five
// standard fields or one of the descriptors @yearly, @annually, @monthly,
// @weekly, @daily, @midnight, @hourly. "@every" is refused (its instants
// depend on when a process starts, so nodes would disagree on the periods;
// use Every), and so is a "TZ=" or "CRON_TZ=" prefix (pass loc instead).
// In the day-of-week field, 0 to 6 are Sunday to Saturday and, as in Vixie
// cron and cronie, 7 is Sunday too, alone, in a range ("5-7") or a list
// ("1,7"); the names SUN to SAT work as well.
//
// Around a daylight saving change the instants follow cron's long-standing
// rule (Vixie cron, cronie):
//   - An expression with a fixed hour field (a number, list or range, such
//     as "30 2 * * *", @daily) runs once per local day whatever the clock
//     does: a local time that the change skips runs once, at the first
//     instant after the jump (02:30 on the day clocks go from 02:00 to 03:00
//     runs at 03:00; several skipped times, or a skipped time and 03:00
//     itself, make one instant); a local time that happens twice runs once,
//     at its first occurrence.
//   - An expression whose hour field is a wildcard or a step ("0 * * * *",
//     "*/15 * * * *", "0 */2 * * *", @hourly) runs at every instant whose
//     local time matches: it keeps firing every real interval through the
//     change, so an hourly job runs 23 times on the day clocks go forward
//     and 25 times on the day they go back.
//
// Instants are UTC instants whatever loc is, so period keys do not depend
// on the zone's offset. Changes of a zone's offset larger than three hours
// (a zone that moves across the date line) are not smoothed over: a local
// time they skip has no instant.
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
	parsed, err := sundaySeven(e)
	if err != nil {
		return nil, fmt.Errorf("cron expression %q: %w", expr, err)
	}
	s, err := cronParser.Parse(parsed)
	if err != nil {
		return nil, fmt.Errorf("cron expression %q: %w", expr, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron expression %q: unsupported form", expr)
	}
	// The spec enumerates local (wall clock) times: evaluated in UTC, it
	// knows no offsets, and every local time is one UTC-labelled value.
	civil := *spec
	civil.Location = time.UTC
	return cronSchedule{civil: &civil, loc: loc, expr: e, everyHour: hourIsWildcard(e)}, nil
}

// dowNames are the day names the parser knows, as numbers.
var dowNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

// sundaySeven rewrites the day-of-week field of a five-field expression so
// that 7 means Sunday, as in Vixie cron and cronie, for the parser, which
// knows 0 to 6 only: 7 becomes 0, and a range that ends at 7 ends at 6 and
// gains 0 when its step reaches 7 ("5-7" is "5-6,0"; "1-7/2" is "1-6/2,0").
// Other items are left to the parser. A day above 7 is refused here, with
// the range that is accepted.
func sundaySeven(expr string) (string, error) {
	f := strings.Fields(expr)
	if len(f) != 5 {
		return expr, nil // a descriptor, or an error the parser names
	}
	day := func(s string) (int, bool, error) {
		if n, ok := dowNames[strings.ToLower(s)]; ok {
			return n, true, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, false, nil // "*", "?" or an error the parser names
		}
		if n < 0 || n > 7 {
			return 0, false, fmt.Errorf("day of week %d out of range; want 0 to 7 (0 and 7 are Sunday) or SUN to SAT", n)
		}
		return n, true, nil
	}
	items := strings.Split(f[4], ",")
	for i, item := range items {
		rng, stepText, hasStep := strings.Cut(item, "/")
		loText, hiText, isRange := strings.Cut(rng, "-")
		lo, ok, err := day(loText)
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		hi := lo
		if isRange {
			if hi, ok, err = day(hiText); err != nil {
				return "", err
			} else if !ok {
				continue
			}
		}
		switch {
		case lo == 7 && (!isRange || hi == 7):
			items[i] = "0" // "7", "7-7", "7/2": Sunday alone
		case isRange && hi == 7 && lo < 7:
			step := 1
			if hasStep {
				if step, err = strconv.Atoi(stepText); err != nil || step < 1 {
					continue // the parser names the bad step
				}
			}
			items[i] = loText + "-6"
			if hasStep {
				items[i] += "/" + stepText
			}
			if (7-lo)%step == 0 {
				items[i] += ",0"
			}
		}
	}
	f[4] = strings.Join(items, ",")
	return strings.Join(f, " "), nil
}

// hourIsWildcard reports whether the hour field of a parsed expression is
// a wildcard or a step: such a schedule follows real time across a
// daylight saving change.
func hourIsWildcard(expr string) bool {
	if expr == "@hourly" {
		return true
	}
	f := strings.Fields(expr)
	if len(f) != 5 {
		return false // the other descriptors name fixed hours
	}
	h := f[1]
	return strings.HasPrefix(h, "*") || strings.HasPrefix(h, "?") || strings.Contains(h, "/")
}

type cronSchedule struct {
	civil     *cron.SpecSchedule // in UTC: enumerates local times
	loc       *time.Location
	expr      string
	everyHour bool
}

// naive returns t's local time in loc as a UTC-labelled value.
func naive(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// offsetAt returns loc's offset from UTC at instant t.
func offsetAt(t time.Time, loc *time.Location) time.Duration {
	_, off := t.In(loc).Zone()
	return time.Duration(off) * time.Second
}

// offsetsNear returns loc's distinct offsets within a day of the instants
// the local time c (a UTC-labelled value) may stand for.
func offsetsNear(c time.Time, loc *time.Location) []time.Duration {
	guess := c.Add(-offsetAt(c, loc))
	var offs []time.Duration
	for _, d := range []time.Duration{-24 * time.Hour, -dstWindow, 0, dstWindow, 24 * time.Hour} {
		off := offsetAt(guess.Add(d), loc)
		if !slices.Contains(offs, off) {
			offs = append(offs, off)
		}
	}
	return offs
}

// instants returns the UTC instants whose local time in loc is the local
// time c (a UTC-labelled value): one usually, none in a gap, two in a
// repeated hour, in order.
func instants(c time.Time, loc *time.Location) []time.Time {
	var out []time.Time
	for _, off := range offsetsNear(c, loc) {
		if x := c.Add(-off); offsetAt(x, loc) == off {
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// gapEnd returns the first instant after the jump that skips the local
// time c, or false when c is not skipped by a change of at most dstWindow.
func gapEnd(c time.Time, loc *time.Location) (time.Time, bool) {
	var best time.Time
	for _, off := range offsetsNear(c, loc) {
		x := c.Add(-off)
		start, _ := x.In(loc).ZoneBounds()
		if start.IsZero() || start.After(x) || x.Sub(start) > dstWindow {
			continue
		}
		if !naive(start, loc).After(c) {
			continue // c is not before the new zone's first local time
		}
		if best.IsZero() || start.Before(best) {
			best = start
		}
	}
	return best, !best.IsZero()
}

// at returns the instants the local time c stands for under the DST rule.
func (s cronSchedule) at(c time.Time) []time.Time {
	xs := instants(c, s.loc)
	switch {
	case s.everyHour:
		return xs
	case len(xs) > 1:
		return xs[:1] // a repeated local time runs at its first occurrence
	case len(xs) == 1:
		return xs
	}
	if end, ok := gapEnd(c, s.loc); ok {
		return []time.Time{end} // a skipped local time runs just after the jump
	}
	return nil
}

// shiftNear returns how much loc's offset changes within dstWindow before
// x or twice that after it (the larger change if both), or 0 when it does
// not: only near such a change can local order and instant order differ.
func shiftNear(x time.Time, loc *time.Location) time.Duration {
	start, end := x.In(loc).ZoneBounds()
	off := offsetAt(x, loc)
	var shift time.Duration
	if !start.IsZero() && x.Sub(start) <= dstWindow {
		shift = (off - offsetAt(start.Add(-time.Second), loc)).Abs()
	}
	if !end.IsZero() && end.Sub(x) <= 2*dstWindow {
		shift = max(shift, (offsetAt(end, loc) - off).Abs())
	}
	return min(shift, dstWindow)
}

// Next returns the first instant strictly after t: it walks the matching
// local times in order (from t's local time, less the size of a nearby
// change of offset) and keeps the earliest instant after t that they stand
// for; it stops once a later local time can no longer stand for an earlier
// instant.
func (s cronSchedule) Next(t time.Time) time.Time {
	from := naive(t, s.loc).Truncate(time.Second).Add(-shiftNear(t, s.loc))
	var best time.Time
	var slack time.Duration
	for c := s.civil.Next(from.Add(-time.Second)); !c.IsZero(); c = s.civil.Next(c) {
		if !best.IsZero() && c.Sub(naive(best, s.loc)) > slack {
			break
		}
		for _, x := range s.at(c) {
			if x.After(t) && (best.IsZero() || x.Before(best)) {
				best, slack = x, shiftNear(x, s.loc)
			}
		}
	}
	if best.IsZero() {
		return best
	}
	return best.UTC()
}

func (s cronSchedule) String() string {
	return fmt.Sprintf("cron %q in %s", s.expr, s.loc)
}

// Location returns the time zone s is evaluated in: a cron schedule's zone,
// UTC for the others.
func Location(s Schedule) *time.Location {
	if c, ok := s.(cronSchedule); ok {
		return c.loc
	}
	return time.UTC
}
