package main

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

func runTrigger(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("trigger", "trigger [--store URL] [--period KEY] JOB\n\nWrites a pending run of JOB to the ledger; the leader of JOB runs it (at once\nfor a key in the past, else when its time comes). It needs no leader: the\nrow waits in the store until one exists. Triggering a failed or skipped\nperiod runs it again (the leader sees such a re-run within a minute); a done\nperiod is refused (exit 1).")
	storeURL := storeFlag(fs)
	period := fs.String("period", "", "the period key, e.g. 2026-01-02T15:04:05Z (default: now, to the second, in UTC)")
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	job, err := oneName(pos, "JOB")
	if err != nil {
		return e.fail("trigger", err)
	}
	key := *period
	if key == "" {
		key = schedule.Key(time.Now())
	} else if _, err := schedule.ParseKey(key); err != nil {
		return e.fail("trigger", usagef("invalid --period: %v", err))
	}
	st, err := e.openStore(ctx, *storeURL)
	if err != nil {
		return e.fail("trigger", err)
	}
	defer st.Close()
	r, err := schedule.Trigger(ctx, st, job, key)
	if err != nil {
		return e.fail("trigger", err)
	}
	switch r.State {
	case store.Pending:
		fmt.Fprintf(e.stdout, "%s %s: pending; the leader of %s runs it\n", job, key, job)
	default:
		fmt.Fprintf(e.stdout, "%s %s: already %s (token %d, attempt %d); nothing written\n", job, key, r.State, r.Token, r.Attempt)
	}
	return exitOK
}
