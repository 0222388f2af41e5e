package main

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/schedule"
)

// defaultRunsLimit is how many rows 'baton runs' prints without --limit.
const defaultRunsLimit = 20

func runRuns(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("runs", fmt.Sprintf(`runs [--store URL] [--json] [--limit N | --all] [--before KEY] JOB

Prints the run ledger of JOB, newest period first, %d rows unless --limit or
--all says otherwise: state, attempt, fencing token, holder, whether it was
triggered by hand, DELAY (how late the run started after its scheduled
instant) and exit status. --before KEY pages back: it shows the rows older
than the period KEY (the last one printed).

The store is opened read-only: nothing is created or written. Rows pruned by
retention (see 'baton run --keep' and 'baton prune') are gone.`, defaultRunsLimit))
	storeURL := storeFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON, with start and finish times and the output tail (durations in seconds)")
	limit := fs.Int("limit", defaultRunsLimit, "print at most N rows, the newest")
	all := fs.Bool("all", false, "print every row (the whole ledger)")
	before := fs.String("before", "", "print only rows whose period key sorts before KEY (paging back)")
	job, done, code := e.parseName("runs", fs, args, "JOB")
	if done {
		return code
	}
	var err error
	switch {
	case *limit < 1:
		err = usagef("invalid --limit %d; want 1 or more (or --all)", *limit)
	case *all && flagsSet(fs)["limit"]:
		err = usagef("--limit and --all exclude each other; give one")
	case *before != "":
		if _, perr := schedule.ParseKey(*before); perr != nil {
			err = usagef("invalid --before: %v", perr)
		}
	}
	if err != nil {
		return e.fail("runs", err)
	}
	st, err := e.openReader(ctx, *storeURL)
	if err != nil {
		return e.fail("runs", err)
	}
	defer st.Close()
	n := *limit
	if *all {
		n = 0
	}
	rows, err := st.RecentRuns(ctx, job, *before, n)
	if err == nil && len(rows) == 0 {
		err = inspect.Known(ctx, st, job)
	}
	if err != nil {
		return e.fail("runs", readErr(*storeURL, err))
	}
	views := make([]inspect.Run, 0, len(rows))
	for _, r := range rows {
		views = append(views, inspect.ViewRun(r))
	}
	if *asJSON {
		return e.writeJSON("runs", views, exitOK)
	}
	if len(rows) == 0 {
		fmt.Fprintf(e.stdout, "no runs of %s\n", job)
		return exitOK
	}
	printRuns(e.stdout, views)
	if !*all && len(rows) == n {
		newest := fmt.Sprintf("the newest %d", n)
		if *before != "" {
			newest += " before " + *before
		}
		fmt.Fprintf(e.stdout, "(%s; older: --before %s, or --all)\n", newest, escape.String(rows[len(rows)-1].Period))
	}
	return exitOK
}
