package main

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/schedule"
)

func runPrune(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("prune", fmt.Sprintf(`prune [--store URL] [--keep AGE] [--keep-rows N] [--failed] [--fence-db URL] [--json] JOB

Deletes the finished rows of JOB's run ledger that are past the retention:
older than --keep, or beyond the newest --keep-rows rows (default: %s).
Done and skipped rows only; failed rows are kept until they are re-run or
--failed is given. Pending and running rows, and the newest scheduled row
(where the leader's planning resumes), are never deleted.

An operator's command: it is not fenced and needs no leader, since it
deletes only rows that no leader changes again. It writes in batches of %d
rows. The leader of a job started with 'baton run' prunes by itself with the
same rule (--keep, --keep-rows there).

With --fence-db it also deletes JOB's rows of the fence log (see 'baton
verify') written more than --keep ago, except those of the periods the
ledger still has (whatever their age): verify judges every period the
ledger keeps on its whole record, and does not judge older ones.`, schedule.DefaultRetention, schedule.PruneBatch))
	storeURL := storeFlag(fs)
	keep := fs.String("keep", schedule.FormatAge(schedule.DefaultRetention.Age), "delete rows older than this: days (30d) or a duration (72h); 0: no bound by age")
	keepRows := fs.Int("keep-rows", schedule.DefaultRetention.Rows, "delete rows beyond the newest N (0: no bound by count)")
	failed := fs.Bool("failed", false, "delete failed rows past the retention too")
	fenceURL := fs.String("fence-db", "", "also prune the fence log in this database: sqlite:PATH or a postgres:// URL")
	logTable := fs.String("fence-log", fence.DefaultLogTable, "the fence log table in --fence-db")
	asJSON := fs.Bool("json", false, "print JSON")
	job, done, code := e.parseName("prune", fs, args, "JOB")
	if done {
		return code
	}
	r, err := parseRetention(*keep, *keepRows)
	if err != nil {
		return e.fail("prune", err)
	}
	st, err := e.openExisting(ctx, *storeURL)
	if err != nil {
		return e.fail("prune", err)
	}
	defer st.Close()
	if err := inspect.Known(ctx, st, job); err != nil {
		return e.fail("prune", readErr(*storeURL, err))
	}
	var fdb *fenceDB
	if *fenceURL != "" {
		if fdb, err = e.openFenceDB(ctx, *fenceURL, *logTable, false); err != nil {
			return e.fail("prune", err)
		}
		defer fdb.Close()
	}
	now := time.Now()
	n, err := schedule.Prune(ctx, st, job, r, now, *failed)
	if err != nil {
		return e.fail("prune", readErr(*storeURL, fmt.Errorf("after deleting %d rows: %w", n, err)))
	}
	var logged int64
	if fdb != nil && r.Age > 0 {
		// The log rows of every period the ledger keeps stay, so that
		// verify judges each of those periods on its whole record.
		rows, err := st.RecentRuns(ctx, job, "", 0)
		if err != nil {
			return e.fail("prune", readErr(*storeURL, fmt.Errorf("after deleting %d ledger rows: %w", n, err)))
		}
		oldest := ""
		for _, row := range rows {
			if oldest == "" || row.Period < oldest {
				oldest = row.Period
			}
		}
		if logged, err = fence.PruneLog(ctx, fdb.db, fdb.d, job, now.Add(-r.Age), oldest); err != nil {
			return e.fail("prune", fmt.Errorf("after deleting %d ledger rows: %w", n, err))
		}
	}
	if *asJSON {
		v := struct {
			Job            string  `json:"job"`
			Deleted        int     `json:"deleted"`
			KeepSeconds    float64 `json:"keep_seconds"`
			KeepRows       int     `json:"keep_rows"`
			FailedIncluded bool    `json:"failed_included"`
			FenceLog       *int64  `json:"fence_log_deleted,omitempty"`
		}{job, n, bound.Seconds(r.Age), r.Rows, *failed, nil}
		if fdb != nil {
			v.FenceLog = &logged
		}
		return e.writeJSON("prune", v, exitOK)
	}
	what := "done and skipped"
	if *failed {
		what = "done, skipped and failed"
	}
	fmt.Fprintf(e.stdout, "%s: deleted %d %s rows past the retention (%s)\n", job, n, what, r)
	switch {
	case fdb != nil && r.Age == 0:
		fmt.Fprintf(e.stdout, "%s: fence log kept (--keep 0: no bound by age)\n", job)
	case fdb != nil:
		fmt.Fprintf(e.stdout, "%s: deleted %d fence log rows older than %s\n", job, logged, schedule.FormatAge(r.Age))
	}
	return exitOK
}
