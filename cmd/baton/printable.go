package main

// What the human-readable outputs show of a store's text: every string
// read from a store passes through escape.String before it is printed (or
// rendered on the serve page), so that a control character in a holder, a
// node id or a detail cannot redraw a terminal or forge a line. These
// helpers apply it to whole views at the render points; JSON output takes
// the views as they are.

import (
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
)

// Table cells: a store's value is shown whole in a line of its own (the
// status view) and in JSON, but cut short in a table column (escape.Cell,
// ending in "…"), so that a hostile or huge value, a 1 MB holder, cannot
// pad every row of the table to its width.
const (
	// cellWidth bounds a column that tabwriter pads.
	cellWidth = 64
	// lastCellWidth bounds the free text of a table's last column (a
	// history event's detail), which pads nothing but fills the screen.
	lastCellWidth = 240
)

// cell returns s escaped and cut to cellWidth for a table column.
func cell(s string) string { return escape.Cell(s, cellWidth) }

// printableView returns a copy of v with every string escaped.
func printableView(v inspect.View) inspect.View {
	v.Name = escape.String(v.Name)
	if v.Election != nil {
		el := *v.Election
		el.Holder, el.Incarnation = escape.String(el.Holder), escape.String(el.Incarnation)
		el.Transfer, el.Session = escape.String(el.Transfer), escape.String(el.Session)
		v.Election = &el
	}
	v.Candidates = printableCandidates(v.Candidates)
	v.Job = printableJob(v.Job)
	v.Open = printableRuns(v.Open)
	if v.Last != nil {
		r := printableRun(*v.Last)
		v.Last = &r
	}
	return v
}

func printableCandidates(cs []inspect.Candidate) []inspect.Candidate {
	out := make([]inspect.Candidate, len(cs))
	for i, c := range cs {
		c.Node, c.Incarnation = escape.String(c.Node), escape.String(c.Incarnation)
		c.Attrs, c.AttrsError = escape.String(c.Attrs), escape.String(c.AttrsError)
		out[i] = c
	}
	return out
}

func printableJob(j *inspect.Job) *inspect.Job {
	if j == nil {
		return nil
	}
	c := *j
	c.Schedule, c.CatchUp, c.ScheduleError = escape.String(c.Schedule), escape.String(c.CatchUp), escape.String(c.ScheduleError)
	if c.NextDue != nil {
		d := *c.NextDue
		d.Period = escape.String(d.Period)
		c.NextDue = &d
	}
	return &c
}

// printableRun returns r with every string escaped.
func printableRun(r inspect.Run) inspect.Run {
	r.Job, r.Period, r.State = escape.String(r.Job), escape.String(r.Period), escape.String(r.State)
	r.Holder, r.Output = escape.String(r.Holder), escape.String(r.Output)
	return r
}

func printableRuns(rs []inspect.Run) []inspect.Run {
	out := make([]inspect.Run, len(rs))
	for i, r := range rs {
		out[i] = printableRun(r)
	}
	return out
}

// printableDetail returns a copy of d, as the serve page renders it, with
// every string escaped: the page's HTML escaping (pagehtml.go) escapes
// markup, not control characters.
func printableDetail(d jobDetail) jobDetail {
	d.Name, d.Holder, d.Incarnation = escape.String(d.Name), escape.String(d.Holder), escape.String(d.Incarnation)
	d.Transfer, d.Error = escape.String(d.Transfer), escape.String(d.Error)
	d.Candidates = printableCandidates(d.Candidates)
	if p := d.Preference; p != nil {
		q := *p
		q.Policy, q.LeaderAttrs, q.Preferred, q.Why = escape.String(q.Policy), escape.String(q.LeaderAttrs), escape.String(q.Preferred), escape.String(q.Why)
		d.Preference = &q
	}
	d.Job = printableJob(d.Job)
	if d.LastRun != nil {
		r := printableRun(*d.LastRun)
		d.LastRun = &r
	}
	d.Runs = printableRuns(d.Runs)
	hist := make([]eventView, len(d.History))
	for i, e := range d.History {
		e.Kind, e.Holder, e.Transfer = escape.String(e.Kind), escape.String(e.Holder), escape.String(e.Transfer)
		hist[i] = e
	}
	d.History = hist
	return d
}
