package drill

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/schedule"
)

// This file measures a process-mode run from the nodes' reports: the
// lesson's measures and the measured times, as the in-process mode
// accounts them.

// span is a stretch of real time.
type span struct{ from, to time.Time }

// validSpans returns, per node, when it held a term valid by its own clock
// and was running (not stopped): from its election to its deadline, its
// loss of the term or its death, whichever came first, minus the time it
// was stopped.
func (d *procDrill) validSpans(end time.Time) [][]span {
	out := make([][]span, len(d.procs))
	for i := range d.procs {
		var evs []procEvent
		for _, e := range d.events {
			if e.node == i {
				evs = append(evs, e)
			}
		}
		slices.SortStableFunc(evs, func(a, b procEvent) int { return a.at.Compare(b.at) })
		var valid, stops []span
		var cur *span
		var tok uint64
		var stoppedAt time.Time
		closeTerm := func(at time.Time) {
			if cur != nil {
				cur.to = minTime(cur.to, at)
				if cur.to.After(cur.from) {
					valid = append(valid, *cur)
				}
				cur = nil
			}
		}
		for _, e := range evs {
			switch e.verb {
			case "elected":
				closeTerm(e.at)
				cur, tok = &span{e.at, e.until()}, e.token()
			case "valid":
				if cur != nil && e.token() == tok {
					cur.to = e.until()
				}
			case "lost", "killed":
				closeTerm(e.at)
			case "paused", "freezing":
				stoppedAt = e.at
			case "continued":
				if !stoppedAt.IsZero() {
					stops = append(stops, span{stoppedAt, e.at})
					stoppedAt = time.Time{}
				}
			}
		}
		closeTerm(end)
		if !stoppedAt.IsZero() {
			stops = append(stops, span{stoppedAt, end})
		}
		out[i] = subtract(valid, stops)
	}
	return out
}

func subtract(spans, holes []span) []span {
	for _, h := range holes {
		var next []span
		for _, s := range spans {
			if !h.from.Before(s.to) || !h.to.After(s.from) {
				next = append(next, s)
				continue
			}
			if s.from.Before(h.from) {
				next = append(next, span{s.from, h.from})
			}
			if h.to.Before(s.to) {
				next = append(next, span{h.to, s.to})
			}
		}
		spans = next
	}
	return spans
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// result measures the run. pending names the periods still open in the
// ledger when the nodes were stopped (see drain): they count as pending at
// the end, and their lines neither as written nor as missing.
func (d *procDrill) result(ctx context.Context, res *sql.DB, pending map[string]bool) (Result, error) {
	p := d.p
	var r Result
	rel := func(t time.Time) time.Duration { return t.Sub(d.t0) }
	end := d.t0.Add(time.Duration(p.Rounds+1) * p.Round)

	d.mu.Lock()
	defer d.mu.Unlock()
	var elections []procEvent
	for _, e := range d.events {
		switch e.verb {
		case "elected":
			elections = append(elections, e)
		case "rejected":
			r.Rejected++
		}
	}
	slices.SortStableFunc(elections, func(a, b procEvent) int { return a.at.Compare(b.at) })
	if len(elections) > 0 {
		r.Handovers = len(elections) - 1
		faultStart := time.Duration(p.Start) * p.Round
		for _, el := range elections[1:] {
			if at := rel(el.at); at >= faultStart {
				dd := at - faultStart
				r.HandoverSeconds = dd.Seconds()
				r.HandoverRounds = int((dd + p.Round - 1) / p.Round)
				break
			}
		}
	}

	// Running leaders over time, from round 1 on, as the in-process mode
	// accounts them.
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, spans := range d.validSpans(end) {
		for _, s := range spans {
			edges = append(edges, edge{s.from, 1}, edge{s.to, -1})
		}
	}
	slices.SortStableFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.d, b.d) // an end before a start at the same instant
	})
	leaderless, twoLeaders := map[int]bool{}, map[int]bool{}
	var lessDur, twoDur time.Duration
	account := func(from, to time.Time, count int) {
		lo, hi := max(rel(from), p.Round), min(rel(to), rel(end))
		if hi <= lo || count == 1 {
			return
		}
		days := twoLeaders
		if count == 0 {
			days = leaderless
			lessDur += hi - lo
		} else {
			twoDur += hi - lo
		}
		for day := int(lo / p.Round); time.Duration(day)*p.Round < hi; day++ {
			days[day] = true
		}
	}
	count, last := 0, d.t0
	for _, e := range edges {
		account(last, e.at, count)
		count += e.d
		last = e.at
	}
	account(last, end, count)
	r.LeaderlessRounds, r.TwoLeaderRounds = len(leaderless), len(twoLeaders)
	r.LeaderlessSeconds, r.TwoLeaderSeconds = lessDur.Seconds(), twoDur.Seconds()

	landings := map[string]int{}
	first := map[string]time.Time{}
	rows, err := res.QueryContext(ctx, `SELECT period, COUNT(*), MIN(at) FROM landings GROUP BY period`)
	if err != nil {
		return r, err
	}
	for rows.Next() {
		var period string
		var n int
		var at int64
		if err := rows.Scan(&period, &n, &at); err != nil {
			rows.Close()
			return r, err
		}
		landings[period], first[period] = n, time.Unix(0, at)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return r, err
	}
	var keys []string
	for _, t := range p.Triggers {
		key := schedule.Key(vcluster.Config{Day: p.Round}.Wall(time.Duration(t) * p.Round))
		n := landings[key]
		if n == 0 && pending[key] {
			r.PendingAtEnd++
			continue
		}
		keys = append(keys, key)
		if n == 0 {
			r.Missed++
			continue
		}
		r.Started++
		r.DoubleStarts += n - 1
		r.DelayedRounds += int((rel(first[key]) - time.Duration(t)*p.Round) / p.Round)
	}
	r.DuplicateLines, r.MissingLines, err = countLines(ctx, res, keys, p.InvoiceLines)
	return r, err
}
