package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/internal/timeline"
	"github.com/batonhq/baton/store"
)

// Bounds of what the status page reads per name on every refresh.
const (
	pageRuns    = 20 // newest ledger rows shown
	pageHistory = 50 // newest election log events drawn
)

// jobSummary is one name as GET /api/jobs lists it: the shared job view
// of 'baton status' (internal/inspect) plus what this server observed.
type jobSummary struct {
	Name        string `json:"name"`
	Holder      string `json:"holder"` // empty when free
	Incarnation string `json:"incarnation,omitempty"`
	Token       uint64 `json:"token"`
	// LeaseSeconds is the lease the holder promised to honour.
	LeaseSeconds float64 `json:"lease_seconds"`
	// Updated is the store's time of the last write (informational).
	Updated  *time.Time `json:"updated,omitempty"`
	Transfer string     `json:"transfer,omitempty"`
	// State is the name's state, the same as 'baton status' shows
	// (inspect.StateOf): free, held, session-ended or probably-dead.
	State inspect.State `json:"state"`
	// WatchedSeconds is how long this server has watched the record;
	// LeaseRemainingSeconds the most lease the holder can have left as
	// seen on this server's clock since it last saw the record change
	// (absent when free).
	WatchedSeconds        float64  `json:"watched_seconds"`
	LeaseRemainingSeconds *float64 `json:"lease_remaining_at_most_seconds,omitempty"`
	// Candidates are the nodes waiting to lead; Job the registration
	// (schedule, catch-up policy, next due period) when NAME is a job.
	Candidates []inspect.Candidate `json:"candidates"`
	// Preference is the job's preference policy and why the leader is or
	// is not the preferred candidate (docs/prefer.md); absent when the
	// name has no policy and no candidate says who it is.
	Preference *inspect.Preference `json:"preference,omitempty"`
	Job        *inspect.Job        `json:"job,omitempty"`
	LastRun    *inspect.Run        `json:"last_run,omitempty"`
	Error      string              `json:"error,omitempty"`
}

// jobDetail is one name as GET /api/jobs/NAME shows it: the summary, the
// newest ledger rows (newest first) and the newest election log events
// (oldest first).
type jobDetail struct {
	jobSummary
	Runs    []inspect.Run `json:"runs"`
	History []eventView   `json:"history"`
}

// eventView is an election log event.
type eventView struct {
	Seq      uint64    `json:"seq"`
	Kind     string    `json:"kind"`
	Holder   string    `json:"holder,omitempty"`
	Token    uint64    `json:"token"`
	Transfer string    `json:"transfer,omitempty"`
	Time     time.Time `json:"time"`
	Detail   string    `json:"detail,omitempty"`
}

// watch is what the server saw of one record on its own monotonic clock,
// the way a contender sees it (status --observe does the same once).
type watch struct {
	first   time.Time // when the server first read the record
	version int64
	changed time.Time // when it last saw the version change (first if never)
}

// readJob reads what the page shows of name: the job view 'baton status'
// prints (inspect.Read), the newest ledger rows and election log events.
// w carries the observation across refreshes; now is the server's clock.
// A name the store knows nothing of is an empty detail, not an error.
func readJob(ctx context.Context, st store.Store, name string, w *watch, now time.Time) (jobDetail, error) {
	d := jobDetail{jobSummary: jobSummary{Name: name, Candidates: []inspect.Candidate{}}, Runs: []inspect.Run{}, History: []eventView{}}
	v, err := inspect.Read(ctx, st, name, now, inspect.Options{Rows: pageRuns})
	switch {
	case errors.Is(err, inspect.ErrUnknown):
		return d, nil
	case err != nil:
		return d, err
	}
	d.State = v.State
	if e := v.Election; e != nil {
		// The renewals of a name held through a session are the session
		// record's writes: watch its version, not the name's.
		ver := e.Version
		if v.State.RenewalRecord != "" {
			ver = v.State.RenewalVersion
		}
		if w.first.IsZero() {
			w.first, w.changed, w.version = now, now, ver
		} else if ver != w.version {
			w.changed, w.version = now, ver
		}
		d.Holder, d.Incarnation, d.Token, d.Transfer = e.Holder, e.Incarnation, e.Token, e.Transfer
		d.LeaseSeconds = e.LeaseSeconds
		u := e.Updated
		d.Updated = &u
		d.WatchedSeconds = bound.Seconds(now.Sub(w.first))
		// Until a change was seen, the holder may have renewed just before
		// the server's first read: the bound starts from that read.
		if v.State.State == inspect.Held || v.State.State == inspect.ProbablyDead {
			left := bound.Seconds(max(e.Lease-now.Sub(w.changed), 0))
			d.LeaseRemainingSeconds = &left
		}
	}
	d.Candidates, d.Job, d.LastRun, d.Preference = v.Candidates, v.Job, v.Last, v.Preference
	rows, err := st.RecentRuns(ctx, name, "", pageRuns)
	if err != nil {
		return d, err
	}
	for _, r := range rows {
		d.Runs = append(d.Runs, inspect.ViewRun(r))
	}
	evs, err := st.History(ctx, name, 0, 0)
	if err != nil {
		return d, err
	}
	if len(evs) > pageHistory {
		evs = evs[len(evs)-pageHistory:]
	}
	for _, e := range evs {
		d.History = append(d.History, eventView{Seq: e.Seq, Kind: string(e.Kind), Holder: e.Holder, Token: e.Token, Transfer: e.Transfer, Time: e.Time.UTC(), Detail: escape.String(e.Detail)})
	}
	return d, nil
}

// holdsRecord reports whether an event leaves a holder on the record.
func holdsRecord(kind string) bool {
	switch store.EventKind(kind) {
	case store.Acquired, store.TakenOver, store.Transferred:
		return true
	}
	return false
}

// historyChart draws the election log as a timeline: one row per holder,
// a bar for each term (labelled with its token, titled with how it began),
// a band where nobody held the name. Times are the store's, so no two
// clocks are compared; the last term runs to the record's last write.
func historyChart(d jobDetail) string {
	if len(d.History) == 0 {
		return ""
	}
	from := d.History[0].Time
	to := d.History[len(d.History)-1].Time
	if d.Updated != nil && d.Updated.After(to) {
		to = *d.Updated
	}
	if !to.After(from) {
		to = from.Add(time.Second)
	}
	sec := func(t time.Time) float64 { return t.Sub(from).Seconds() }
	var order []string
	rows := map[string]*timeline.Row{}
	row := func(holder string) *timeline.Row {
		if rows[holder] == nil {
			order = append(order, holder)
			rows[holder] = &timeline.Row{Label: holder}
		}
		return rows[holder]
	}
	var bands []timeline.Span
	open := -1 // index into d.History of the term in progress
	freeSince := time.Time{}
	closeTerm := func(end time.Time) {
		if open < 0 {
			return
		}
		e := d.History[open]
		r := row(e.Holder)
		r.Spans = append(r.Spans, timeline.Span{From: sec(e.Time), To: sec(end), Class: "held",
			Label: fmt.Sprintf("token %d", e.Token),
			Title: fmt.Sprintf("%s held %s with token %d from %s to %s (%s)", e.Holder, d.Name, e.Token,
				e.Time.Format(time.TimeOnly), end.Format(time.TimeOnly), e.Kind)})
		open = -1
	}
	for i, e := range d.History {
		switch {
		case holdsRecord(e.Kind) && e.Holder != "":
			closeTerm(e.Time)
			if !freeSince.IsZero() {
				bands = append(bands, timeline.Span{From: sec(freeSince), To: sec(e.Time), Title: fmt.Sprintf("nobody held %s for %v",
					d.Name, e.Time.Sub(freeSince).Round(time.Millisecond))})
				freeSince = time.Time{}
			}
			open = i
			r := row(e.Holder)
			r.Marks = append(r.Marks, timeline.Mark{At: sec(e.Time), Shape: "diamond", Class: "event",
				Title: fmt.Sprintf("%s: %s, token %d, at %s", e.Kind, e.Holder, e.Token, e.Time.Format(time.TimeOnly))})
		case e.Kind == string(store.Released) || (holdsRecord(e.Kind) && e.Holder == ""):
			// A release, or a hand-over written as a release towards the
			// target (transferred with no holder yet).
			var who string
			if open >= 0 {
				who = d.History[open].Holder
			}
			closeTerm(e.Time)
			freeSince = e.Time
			if who != "" {
				r := row(who)
				r.Marks = append(r.Marks, timeline.Mark{At: sec(e.Time), Shape: "circle", Class: "lost",
					Title: fmt.Sprintf("%s by %s at %s (token %d)", e.Kind, who, e.Time.Format(time.TimeOnly), e.Token)})
			}
		case e.Kind == string(store.TransferRequested) && open >= 0:
			r := row(d.History[open].Holder)
			target := e.Transfer
			if target == store.AnyNode {
				target = "anyone (resign)"
			}
			r.Marks = append(r.Marks, timeline.Mark{At: sec(e.Time), Shape: "triangle", Class: "trigger",
				Title: fmt.Sprintf("handover to %s requested at %s", target, e.Time.Format(time.TimeOnly))})
		}
	}
	closeTerm(to)
	if !freeSince.IsZero() {
		bands = append(bands, timeline.Span{From: sec(freeSince), To: sec(to), Title: "nobody holds " + d.Name})
	}
	c := timeline.Chart{From: 0, To: sec(to), Bands: bands}
	for _, h := range order {
		c.Rows = append(c.Rows, *rows[h])
	}
	layout := time.TimeOnly
	if to.Sub(from) < 10*time.Second {
		layout = "15:04:05.000"
	}
	for i := 0; i <= 4; i++ {
		at := from.Add(time.Duration(float64(to.Sub(from)) * float64(i) / 4))
		c.Ticks = append(c.Ticks, timeline.Tick{At: sec(at), Label: at.Format(layout)})
	}
	return c.SVG()
}
