// Package inspect reads what an operator wants to know about one name from
// a store: its election record, the nodes waiting to take over, the job's
// schedule and catch-up policy, the next due period, the periods pending or
// running and the last finished run. "baton status" prints it and
// "baton serve" renders it: both call Read, so they never disagree.
//
// Read only reads, and a bounded number of ledger rows (Options.Rows): its
// cost does not grow with the ledger.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// DefaultRows is how many of the newest ledger rows Read looks at.
const DefaultRows = 50

// Options tunes Read.
type Options struct {
	// Rows is how many of the newest ledger rows to read (default
	// DefaultRows). Open periods older than those are not shown.
	Rows int
}

// View is one name as an operator sees it. Times are UTC (RFC 3339 in
// JSON), durations are seconds in JSON.
type View struct {
	// Name is the election (and job) name.
	Name string `json:"name"`
	// Election is the election record; nil if no node ever led.
	Election *Election `json:"election,omitempty"`
	// State is the name's state (StateOf): free, held, session-ended
	// or probably-dead.
	State State `json:"state"`
	// Candidates are the nodes campaigning without holding the record,
	// by node id: those whose row is fresh (store.Candidate.Stale false).
	Candidates []Candidate `json:"candidates"`
	// Job is the job's registration; nil if name is not a registered job.
	Job *Job `json:"job,omitempty"`
	// Open are the pending and running periods among the rows read,
	// oldest first.
	Open []Run `json:"open_runs"`
	// Last is the newest finished run among the rows read (done, failed
	// or skipped); nil if none.
	Last *Run `json:"last_run,omitempty"`
	// Rows is how many ledger rows were read, and More whether older
	// ones exist.
	Rows int  `json:"rows_read"`
	More bool `json:"older_rows"`
	// Preference is the job's preference policy and why the leader is or
	// is not the preferred candidate (docs/prefer.md); nil when the name
	// has no policy and no candidate says who it is.
	Preference *Preference `json:"preference,omitempty"`
}

// Election is an election record.
type Election struct {
	Holder       string  `json:"holder,omitempty"`
	Incarnation  string  `json:"incarnation,omitempty"`
	Token        uint64  `json:"token"`
	LeaseSeconds float64 `json:"lease_seconds"`
	Transfer     string  `json:"transfer,omitempty"`
	// Session is the session record the holder renews for this name and
	// its others (empty: the holder renews this record itself).
	Session string    `json:"session,omitempty"`
	Version int64     `json:"version"`
	Updated time.Time `json:"updated"`
	// Lease is LeaseSeconds as a duration, for Go callers.
	Lease time.Duration `json:"-"`
}

// Candidate is a node waiting to take over.
type Candidate struct {
	Node        string    `json:"node"`
	Incarnation string    `json:"incarnation"`
	Since       time.Time `json:"since"`
	LastSeen    time.Time `json:"last_seen"`
	// AgeSeconds is how long ago it was last seen, on the store's clock.
	AgeSeconds float64 `json:"last_seen_seconds_ago"`
	// Age is AgeSeconds as a duration, for Go callers.
	Age time.Duration `json:"-"`
	// Attrs are the attributes the node says it has, for a preference
	// policy (canonical text such as "version=1.4.2 weight=10
	// zone=eu-1"; empty: none). AttrsError is set when the row's
	// attributes do not parse (a damaged row): Attrs is then the row's
	// text escaped, and no policy judges it.
	Attrs      string `json:"attrs,omitempty"`
	AttrsError string `json:"attrs_error,omitempty"`
}

// Job is a job's registration and what follows from it.
type Job struct {
	// Schedule is the job's description as stored (schedule.Describe).
	Schedule string `json:"schedule"`
	// CatchUp and WindowSeconds are the catch-up policy; empty when the
	// description cannot be read (ScheduleError says why).
	CatchUp       string    `json:"catch_up,omitempty"`
	WindowSeconds float64   `json:"catch_up_window_seconds,omitempty"`
	Registered    time.Time `json:"registered"`
	// NextDue is the first scheduled period after the newest one in the
	// ledger (or after registration); nil for a job run by hand only.
	NextDue *Due `json:"next_due,omitempty"`
	// ScheduleError is set when the stored description is not one this
	// baton can read.
	ScheduleError string `json:"schedule_error,omitempty"`
	// Suspended is the operator's suspension ('baton suspend'); nil when
	// the job is not suspended.
	Suspended *Suspension `json:"suspended,omitempty"`
}

// Suspension is who suspended a job, why and when (store time).
type Suspension struct {
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
}

// Due is a scheduled period that comes or came due.
type Due struct {
	Period    string    `json:"period"`
	Scheduled time.Time `json:"scheduled"`
	// Overdue is true when it is before now: a leader should be running
	// it (or none leads). LateSeconds says by how much.
	Overdue     bool    `json:"overdue"`
	LateSeconds float64 `json:"late_seconds,omitempty"`
	// Late is LateSeconds as a duration, for Go callers.
	Late time.Duration `json:"-"`
}

// Run is a ledger row.
type Run struct {
	Job       string     `json:"job"`
	Period    string     `json:"period"`
	Scheduled time.Time  `json:"scheduled"`
	State     string     `json:"state"`
	Token     uint64     `json:"token"`
	Holder    string     `json:"holder,omitempty"`
	Attempt   int        `json:"attempt"`
	Manual    bool       `json:"manual"`
	Started   *time.Time `json:"started,omitempty"`
	Finished  *time.Time `json:"finished,omitempty"`
	// DelaySeconds is Started - Scheduled: how late the run started (0
	// before it started).
	DelaySeconds float64 `json:"delay_seconds"`
	ExitCode     int     `json:"exit_code"`
	Output       string  `json:"output,omitempty"`
	// Delay is DelaySeconds as a duration, for Go callers.
	Delay time.Duration `json:"-"`
}

// ViewRun returns the view of a ledger row.
func ViewRun(r store.Run) Run {
	v := Run{Job: r.Job, Period: r.Period, Scheduled: r.Scheduled.UTC(), State: string(r.State), Token: r.Token,
		Holder: r.Holder, Attempt: r.Attempt, Manual: r.Manual, ExitCode: r.ExitCode, Output: r.Output}
	if !r.Started.IsZero() {
		s := r.Started.UTC()
		v.Started = &s
		v.Delay = schedule.Delay(r)
		v.DelaySeconds = bound.Seconds(v.Delay)
	}
	if !r.Finished.IsZero() {
		f := r.Finished.UTC()
		v.Finished = &f
	}
	return v
}

// ErrUnknown is returned by Read for a name the store knows nothing of: no
// election record, no job, no ledger row.
var ErrUnknown = errors.New("no election record, job or run of that name in this store")

// Read returns the view of name at wall time now (which decides whether
// the next due period is overdue and, on a store without a clock of its
// own, is the store's time for the state: StoreNow).
func Read(ctx context.Context, st store.Store, name string, now time.Time, opts Options) (View, error) {
	if opts.Rows <= 0 {
		opts.Rows = DefaultRows
	}
	v := View{Name: name, Candidates: []Candidate{}, Open: []Run{}, State: State{State: Free}}
	storeNow, err := StoreNow(ctx, st, now)
	if err != nil {
		return v, err
	}
	es, err := ReadStates(ctx, st, []string{name}, storeNow)
	if err != nil {
		return v, err
	}
	if rec := es[0].Record; rec != nil {
		v.Election = &Election{Holder: rec.Holder, Incarnation: rec.Incarnation, Token: rec.Token,
			LeaseSeconds: bound.Seconds(rec.Lease), Lease: rec.Lease, Transfer: rec.Transfer, Session: rec.Session,
			Version: rec.Version, Updated: rec.Updated.UTC()}
	}
	v.State = es[0].State
	cands, err := st.Candidates(ctx, name)
	if err != nil {
		return v, err
	}
	var fresh []candidacy
	for _, c := range cands {
		if c.Stale() {
			continue
		}
		a, err := election.ParseAttrs(c.Attrs)
		cd := candidacy{row: c, attrs: a, err: err}
		fresh = append(fresh, cd)
		if v.Election != nil && c.Node == v.Election.Holder {
			continue // the leader's own row, with a policy: shown in Preference
		}
		vc := Candidate{Node: c.Node, Incarnation: c.Incarnation, Since: c.Since.UTC(),
			LastSeen: c.Seen.UTC(), AgeSeconds: bound.Seconds(c.Age.Round(time.Millisecond)), Age: c.Age}
		vc.Attrs, vc.AttrsError = viewAttrs(cd)
		v.Candidates = append(v.Candidates, vc)
	}
	rows, err := st.RecentRuns(ctx, name, "", opts.Rows+1)
	if err != nil {
		return v, err
	}
	if len(rows) > opts.Rows {
		rows, v.More = rows[:opts.Rows], true
	}
	v.Rows = len(rows)
	for i := len(rows) - 1; i >= 0; i-- { // oldest first
		if !rows[i].State.Final() {
			v.Open = append(v.Open, ViewRun(rows[i]))
		}
	}
	for _, r := range rows {
		if r.State.Final() {
			last := ViewRun(r)
			v.Last = &last
			break
		}
	}
	job, err := st.GetJob(ctx, name)
	switch {
	case err == nil:
		v.Job = viewJob(job, rows, now)
		v.Preference = preference(v.Election, &job, fresh)
	case !errors.Is(err, store.ErrNotFound):
		return v, err
	default:
		v.Preference = preference(v.Election, nil, fresh)
	}
	if v.Election == nil && v.Job == nil && len(rows) == 0 {
		return v, fmt.Errorf("%s: %w", name, ErrUnknown)
	}
	return v, nil
}

// viewJob reads a job's description and finds its next due period: the
// first scheduled instant after the newest scheduled row (rows are newest
// first) or, without one, after the registration.
func viewJob(j store.Job, rows []store.Run, now time.Time) *Job {
	out := &Job{Schedule: j.Schedule, Registered: j.Created.UTC()}
	if s := j.Suspension; s.Active() {
		out.Suspended = &Suspension{By: s.By, Reason: s.Reason, Since: s.At.UTC()}
	}
	s, p, err := schedule.ParseSpec(j.Schedule)
	if err != nil {
		out.ScheduleError = err.Error()
		return out
	}
	out.CatchUp, out.WindowSeconds = string(p.CatchUp), bound.Seconds(p.Window)
	if s == nil {
		return out
	}
	from := j.Created
	for _, r := range rows {
		if !r.Manual {
			if r.Scheduled.After(from) {
				from = r.Scheduled
			}
			break
		}
	}
	if next := s.Next(from); !next.IsZero() {
		out.NextDue = &Due{Period: schedule.Key(next), Scheduled: next}
		if next.Before(now) {
			d := out.NextDue
			d.Overdue, d.Late = true, now.Sub(next)
			d.LateSeconds = bound.Seconds(d.Late)
		}
	}
	return out
}
