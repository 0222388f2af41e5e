package schedule

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store"
)

// ManualOnly is the description of a job without a schedule: it runs only
// when triggered by hand.
const ManualOnly = "manual triggers only"

// Describe returns the canonical description of a job's schedule and
// catch-up policy, as the store keeps it (store.Job.Schedule): for example
// "every 10s; catch-up all, max 100" or
// `cron "30 2 * * *" in Europe/Paris; catch-up latest, window 1h0m0s`.
// After the catch-up mode come, when set, the window, the cap ("max N"),
// the overlap policy when it is not queue ("overlap skip") and the jitter
// ("jitter 30s"): every node of a job must agree on all of them.
// ParseSpec reads it back. Two jobs run the same periods with the same
// policy exactly when their descriptions are equal.
func Describe(s Schedule, p Policy) string {
	if s == nil {
		return ManualOnly
	}
	cu := p.CatchUp
	if cu == "" {
		cu = CatchUpAll
	}
	d := fmt.Sprintf("%s; catch-up %s", s, cu)
	if p.Window > 0 {
		d += ", window " + p.Window.String()
	}
	if p.Max > 0 {
		d += ", max " + strconv.Itoa(p.Max)
	}
	if p.Overlap == OverlapSkip {
		d += ", overlap skip"
	}
	if p.Jitter > 0 {
		d += ", jitter " + p.Jitter.String()
	}
	return d
}

// Spec returns Describe of the job's schedule and policy.
func (j Job) Spec() string { return Describe(j.Schedule, j.Policy) }

// ParseSpec parses a description written by Describe (or by an older baton,
// which stored the schedule alone: its policy reads as catch-up all). A nil
// Schedule stands for ManualOnly.
func ParseSpec(desc string) (Schedule, Policy, error) {
	var p Policy
	if desc == ManualOnly {
		return nil, p, nil
	}
	sched, pol, _ := strings.Cut(desc, "; catch-up ")
	s, err := parseSchedule(sched)
	if err != nil {
		return nil, p, fmt.Errorf("schedule: job schedule %q: %w", desc, err)
	}
	if pol == "" {
		p.CatchUp = CatchUpAll
		return s, p, nil
	}
	items := strings.Split(pol, ", ")
	if p.CatchUp, err = parseCatchUp(items[0]); err != nil {
		return nil, p, fmt.Errorf("schedule: job schedule %q: %w", desc, err)
	}
	for _, it := range items[1:] {
		k, v, _ := strings.Cut(it, " ")
		var bad bool
		switch k {
		case "window":
			if p.Window, err = bound.ParseDuration(v); err != nil {
				return nil, p, fmt.Errorf("schedule: job schedule %q: catch-up window: %w", desc, err)
			}
			bad = p.Window <= 0
		case "max":
			p.Max, err = strconv.Atoi(v)
			bad = err != nil || p.Max <= 0
		case "overlap":
			p.Overlap, err = ParseOverlap(v)
			bad = err != nil
		case "jitter":
			if p.Jitter, err = bound.ParseDuration(v); err != nil {
				return nil, p, fmt.Errorf("schedule: job schedule %q: catch-up jitter: %w", desc, err)
			}
			bad = p.Jitter <= 0
		default:
			bad = true
		}
		if bad {
			return nil, p, fmt.Errorf("schedule: job schedule %q: bad catch-up item %q", desc, it)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, p, fmt.Errorf("schedule: job schedule %q: %w", desc, err)
	}
	return s, p, nil
}

// parseSchedule reads back a Schedule's String.
func parseSchedule(s string) (Schedule, error) {
	switch {
	case strings.HasPrefix(s, "every "):
		d, off, hasOff := strings.Cut(strings.TrimPrefix(s, "every "), " offset ")
		dd, err := bound.ParseDuration(d)
		if err != nil {
			return nil, err
		}
		var oo time.Duration
		if hasOff {
			if oo, err = bound.ParseDuration(off); err != nil {
				return nil, err
			}
		}
		return Every(dd, oo)
	case strings.HasPrefix(s, "cron "):
		rest := strings.TrimPrefix(s, "cron ")
		i := strings.LastIndex(rest, " in ")
		if i < 0 {
			return nil, errors.New("a cron schedule names its time zone")
		}
		expr, err := strconv.Unquote(rest[:i])
		if err != nil {
			return nil, fmt.Errorf("cron expression %s is not quoted", rest[:i])
		}
		loc, err := time.LoadLocation(rest[i+len(" in "):])
		if err != nil {
			return nil, err
		}
		return Cron(expr, loc)
	}
	return nil, errors.New("not a schedule baton wrote (want every D [offset D] or cron \"EXPR\" in ZONE)")
}

// ErrScheduleMismatch is returned by Register when the job is registered
// in the store with another schedule or catch-up policy than the caller's:
// nodes of one job must agree on its periods, or the periods would change
// with whoever leads.
var ErrScheduleMismatch = errors.New("the job is registered with another schedule")

// Register registers job in st if it is new and returns it as stored. A job
// registered with another description (Describe) is refused with an error
// wrapping ErrScheduleMismatch that names both, unless reschedule is true:
// then the stored schedule is replaced with store.Store.UpdateJob, which
// records the change in the election log of the job's name.
func Register(ctx context.Context, st store.Store, job Job, reschedule bool) (store.Job, error) {
	want := job.Spec()
	for {
		got, err := st.EnsureJob(ctx, store.Job{Name: job.Name, Schedule: want})
		if err != nil || SameSpec(got.Schedule, want) {
			return got, err
		}
		if !reschedule {
			return got, mismatch{fmt.Sprintf("job %s is registered with schedule %q, this node has %q: start it with the same schedule, or reschedule (baton run --reschedule) to replace the stored one",
				job.Name, got.Schedule, want)}
		}
		got, err = st.UpdateJob(ctx, store.JobUpdate{Name: job.Name, Expect: got.Schedule, Schedule: want})
		if errors.Is(err, store.ErrConflict) {
			continue // changed again meanwhile: compare with the newest
		}
		return got, err
	}
}

// mismatch is the error of Register for another schedule.
type mismatch struct{ msg string }

func (m mismatch) Error() string        { return m.msg }
func (m mismatch) Is(target error) bool { return target == ErrScheduleMismatch }

// SameSpec reports whether the stored description stored and want describe
// the same schedule and policy. An older baton stored the schedule alone,
// which reads as catch-up all (see ParseSpec).
func SameSpec(stored, want string) bool {
	if stored != ManualOnly && !strings.Contains(stored, "; catch-up ") {
		stored += "; catch-up " + string(CatchUpAll)
	}
	return stored == want
}
