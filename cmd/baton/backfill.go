package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// defaultBackfillMax is backfill's --max.
const defaultBackfillMax = 1000

func runBackfill(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("backfill", `backfill [--store URL] --from T --to T [--plan] [--max N] [--json] JOB

Runs JOB's past periods from --from to --to (both included) again: every
instant of the job's stored schedule in the range gets a pending run in
the ledger, which the leader of JOB runs in period order, one at a time,
fenced like any run (it sees them within a minute). A period with no row
is added, a failed or skipped one is re-run, a done, pending or running
one is left untouched: a second backfill of the same range adds nothing.
The rows are manual runs of the periods' own keys (as trigger --period
writes): no catch-up policy, cap, window or overlap policy skips them.

--plan prints what a backfill would do and writes nothing (the store is
opened read-only). T is an RFC 3339 time (2026-03-01T00:00:00Z), a date
(2026-03-01: midnight UTC, whatever the job's zone) or relative to now
(-3d, -12h), as for every time flag of baton. A range with more than --max
periods is refused.`)
	storeURL := storeFlag(fs)
	fromS := fs.String("from", "", "the first instant of the range (required): "+bound.InstantHelp)
	toS := fs.String("to", "", "the last instant of the range, not in the future (required): "+bound.InstantHelp)
	plan := fs.Bool("plan", false, "print the periods and what would be done with each; write nothing")
	max := fs.Int("max", defaultBackfillMax, fmt.Sprintf("refuse a range of more than N periods (at most %d)", scheduler.MaxBackfill))
	asJSON := fs.Bool("json", false, "print JSON")
	job, done, code := e.parseName("backfill", fs, args, "JOB")
	if done {
		return code
	}
	var from, to time.Time
	var err error
	now := e.wallNow()
	for _, f := range []struct {
		name string
		s    string
		t    *time.Time
	}{{"from", *fromS, &from}, {"to", *toS, &to}} {
		if f.s == "" {
			return e.fail("backfill", usagef("missing --%s; want %s", f.name, bound.InstantHelp))
		}
		if *f.t, err = parseTimeFlag(f.name, f.s, now); err != nil {
			return e.fail("backfill", err)
		}
	}
	if *max < 1 || *max > scheduler.MaxBackfill {
		return e.fail("backfill", usagef("invalid --max %d; want 1 to %d", *max, scheduler.MaxBackfill))
	}
	var st store.Store
	if *plan {
		st, err = e.openReader(ctx, *storeURL)
	} else {
		st, err = e.openExisting(ctx, *storeURL)
	}
	if err != nil {
		return e.fail("backfill", err)
	}
	defer st.Close()
	j, err := st.GetJob(ctx, job)
	if errors.Is(err, store.ErrNotFound) {
		if err := inspect.Known(ctx, st, job); err != nil {
			return e.fail("backfill", readErr(*storeURL, err))
		}
		return e.fail("backfill", fmt.Errorf("%s %w", job, errNotScheduled))
	}
	if err != nil {
		return e.fail("backfill", readErr(*storeURL, err))
	}
	s, _, err := schedule.ParseSpec(j.Schedule)
	if err != nil {
		return e.fail("backfill", err)
	}
	rows, err := st.Runs(ctx, job, schedule.Key(from.Add(-time.Second)), 0)
	if err != nil {
		return e.fail("backfill", readErr(*storeURL, err))
	}
	var sched scheduler.Schedule
	if s != nil {
		sched = s
	}
	items, err := scheduler.PlanBackfill(sched, from, to, time.Now(), rows, *max)
	if err != nil {
		return e.fail("backfill", usagef("%v", err))
	}
	type itemView struct {
		Period string `json:"period"`
		Do     string `json:"do"`
		State  string `json:"state,omitempty"` // the row's state before
		Now    string `json:"now,omitempty"`   // the row's state after (not with --plan)
	}
	views := make([]itemView, 0, len(items))
	counts := map[string]int{}
	for _, it := range items {
		v := itemView{Period: it.Period.Key, Do: it.Do, State: string(it.Prev.State)}
		if !*plan && it.Do != scheduler.BackfillKeep {
			r, _, err := schedule.Trigger(ctx, st, job, it.Period.Key)
			switch {
			case errors.Is(err, schedule.ErrAlreadyDone):
				v.Do = scheduler.BackfillKeep // done meanwhile
			case err != nil:
				return e.fail("backfill", readErr(*storeURL, fmt.Errorf("after %d periods: %s: %w", len(views), it.Period.Key, err)))
			}
			v.Now = string(r.State)
		}
		counts[v.Do]++
		views = append(views, v)
	}
	if *asJSON {
		out := struct {
			Job     string     `json:"job"`
			Plan    bool       `json:"plan"`
			Added   int        `json:"added"`
			Rerun   int        `json:"rerun"`
			Kept    int        `json:"kept"`
			Periods []itemView `json:"periods"`
		}{job, *plan, counts[scheduler.BackfillAdd], counts[scheduler.BackfillRerun], counts[scheduler.BackfillKeep], views}
		return e.writeJSON("backfill", out, exitOK)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PERIOD\tDO\tWAS")
	for _, v := range views {
		was := v.State
		if was == "" {
			was = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Period, v.Do, cell(was))
	}
	tw.Flush()
	verb := "the leader of " + job + " runs the pending ones in period order"
	switch {
	case *plan:
		verb = "--plan: nothing written"
	case counts[scheduler.BackfillAdd]+counts[scheduler.BackfillRerun] == 0:
		verb = "nothing written"
	}
	fmt.Fprintf(e.stdout, "%s: %d periods: %d added, %d re-run, %d kept; %s\n", job, len(views),
		counts[scheduler.BackfillAdd], counts[scheduler.BackfillRerun], counts[scheduler.BackfillKeep], verb)
	return exitOK
}
