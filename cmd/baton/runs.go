package main

import (
	"context"
	"fmt"
)

func runRuns(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("runs", "runs [--store URL] [--json] [--limit N] JOB\n\nPrints the run ledger of JOB, one row per period, oldest first: state, attempt,\nfencing token, holder, whether it was triggered by hand, DELAY (how late the\nrun started after its scheduled instant) and exit status.")
	storeURL := storeFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON, with start and finish times and the output tail")
	limit := fs.Int("limit", 0, "print only the last N rows (0: all)")
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	job, err := oneName(pos, "JOB")
	if err == nil && *limit < 0 {
		err = usagef("invalid --limit %d; want 0 or more", *limit)
	}
	if err != nil {
		return e.fail("runs", err)
	}
	st, err := e.openStore(ctx, *storeURL)
	if err != nil {
		return e.fail("runs", err)
	}
	defer st.Close()
	rows, err := st.Runs(ctx, job, "", 0)
	if err != nil {
		return e.fail("runs", err)
	}
	if *limit > 0 && len(rows) > *limit {
		rows = rows[len(rows)-*limit:]
	}
	if *asJSON {
		views := make([]runView, 0, len(rows))
		for _, r := range rows {
			views = append(views, viewRun(r))
		}
		if err := printJSON(e.stdout, views); err != nil {
			return e.fail("runs", err)
		}
		return exitOK
	}
	if len(rows) == 0 {
		fmt.Fprintf(e.stdout, "no runs of %s\n", job)
		return exitOK
	}
	printRuns(e.stdout, rows)
	return exitOK
}
