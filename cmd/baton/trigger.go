package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

func runTrigger(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("trigger", `trigger [--store URL] [--period KEY] [--json] JOB

Writes a pending run of JOB to the ledger; the leader of JOB runs it (at once
for a key in the past, else when its time comes). It needs no leader: the
row waits in the store until one exists, and the store must exist already.

Without --period the run gets a manual key, the current time to the
microsecond followed by "~manual" (2026-01-02T15:04:05Z~manual.250000): it
never collides with a scheduled period, and sorts among them by time. With
--period KEY it re-runs that period: a failed or skipped period runs again
(the leader sees such a re-run within a minute); a done period is refused
(exit 1); a pending or running one is left as it is.

JOB must be a scheduled job registered in the store (by its first
'baton run --every/--cron'): a trigger of any other name is refused (exit 1)
and writes nothing, since a typo or a singleton's name would wait forever
unnoticed. --create writes it anyway, for a job that has not started yet.`)
	storeURL := storeFlag(fs)
	period := fs.String("period", "", "the period key to run (again), e.g. 2026-01-02T15:04:05Z (default: a new manual key, now)")
	asJSON := fs.Bool("json", false, "print JSON")
	create := fs.Bool("create", false, "write the run even if JOB is not a registered scheduled job yet (it waits for the job's first 'baton run' with --every or --cron)")
	job, done, code := e.parseName("trigger", fs, args, "JOB")
	if done {
		return code
	}
	key := *period
	if key == "" {
		key = schedule.ManualKey(time.Now())
	} else if _, err := schedule.ParseKey(key); err != nil {
		return e.fail("trigger", usagef("invalid --period: %v", err))
	}
	st, err := e.openExisting(ctx, *storeURL)
	if err != nil {
		return e.fail("trigger", err)
	}
	defer st.Close()
	// One read of the job, one of the row (in Trigger), one write.
	_, jobErr := st.GetJob(ctx, job)
	registered := jobErr == nil
	if !registered && !*create {
		if err := ledgerWithoutJob(ctx, st, job, jobErr); err != nil {
			return e.fail("trigger", readErr(*storeURL, fmt.Errorf("%w; nothing written (--create writes the run for a job not started yet)", err)))
		}
	} else if !registered && !errors.Is(jobErr, store.ErrNotFound) {
		return e.fail("trigger", readErr(*storeURL, jobErr))
	}
	r, written, err := schedule.Trigger(ctx, st, job, key)
	if err != nil {
		return e.fail("trigger", readErr(*storeURL, err))
	}
	if !registered && written {
		// Kept (a trigger may precede the job's first start), but a typo
		// or a singleton's name would wait forever unnoticed.
		fmt.Fprintf(e.stderr, "baton trigger: warning: no scheduled job %q in this store yet; the run waits until a 'baton run' of %s with --every or --cron starts (a singleton never runs triggers)\n", job, job)
	}
	if *asJSON {
		v := struct {
			Job     string `json:"job"`
			Period  string `json:"period"`
			State   string `json:"state"`
			Token   uint64 `json:"token"`
			Attempt int    `json:"attempt"`
			Written bool   `json:"written"`
		}{job, key, string(r.State), r.Token, r.Attempt, written}
		return e.writeJSON("trigger", v, exitOK)
	}
	if written {
		fmt.Fprintf(e.stdout, "%s %s: pending; the leader of %s runs it\n", job, key, job)
	} else {
		fmt.Fprintf(e.stdout, "%s %s: already %s (token %d, attempt %d); nothing written\n", job, key, escape.String(string(r.State)), r.Token, r.Attempt)
	}
	return exitOK
}

// errNotScheduled says a name has an election record but neither a job nor
// a ledger: a singleton or a --once lock, which never runs triggers.
var errNotScheduled = errors.New("is not a scheduled job in this store (a singleton or a --once lock never runs triggers)")

// scheduled returns nil when job has a ledger: it is registered, or has
// rows (written by an earlier trigger --create). A name the store knows
// nothing of is inspect.ErrUnknown; one with only an election record is
// errNotScheduled.
func scheduled(ctx context.Context, st store.Store, job string) error {
	_, err := st.GetJob(ctx, job)
	return ledgerWithoutJob(ctx, st, job, err)
}

// ledgerWithoutJob is scheduled for a job whose GetJob returned err: nil
// for a registered job or one with ledger rows, err itself if the read
// failed.
func ledgerWithoutJob(ctx context.Context, st store.Store, job string, err error) error {
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return err
	}
	rows, err := st.RecentRuns(ctx, job, "", 1)
	if err != nil || len(rows) > 0 {
		return err
	}
	if err := inspect.Known(ctx, st, job); err != nil {
		return err
	}
	return fmt.Errorf("%s %w", job, errNotScheduled)
}
