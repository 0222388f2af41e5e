package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"unicode"
	"unicode/utf8"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/store"
)

const suspendAbout = `suspend [--store URL] [--reason R] [--by WHO] [--stop] [--json] JOB

Suspends the scheduled job JOB on every node, durably: the suspension is
stored with the job (who, why, when) and recorded in the job's election log.
Every node's scheduler reads the job before it plans; while the job is
suspended no node claims a period of it, whichever node leads and however
often the leader changes, until 'baton resume JOB'. The leader keeps its
lease: a run in progress finishes and is recorded (with --stop the leader is
asked to resign instead, which stops the run; the next leader runs that
period again after the resume). A leader learns of the suspension at its
next read of the job, within one poll of its scheduler (a second).

Periods that come due while the job is suspended stay due: on resume they
are caught up by the job's catch-up policy, as after an outage (by default
those within the window, at most the newest --catch-up-max; older ones are
recorded skipped). Manual triggers and backfilled periods wait for the
resume too.

Suspending a suspended job is refused (exit 1) and changes nothing; an
unknown job exits 1. Flags may also follow JOB.`

const resumeAbout = `resume [--store URL] [--by WHO] [--reason R] [--json] JOB

Resumes a job suspended with 'baton suspend': the next leader's pass (within
one poll) plans again, catching up the periods that came due meanwhile by the
job's catch-up policy. Recorded in the job's election log with who and why.
Resuming a job that is not suspended is refused (exit 1). Flags may also
follow JOB.`

func runSuspend(ctx context.Context, e *env, args []string) int {
	return suspendResume(ctx, e, "suspend", args)
}

func runResume(ctx context.Context, e *env, args []string) int {
	return suspendResume(ctx, e, "resume", args)
}

// suspendResume implements 'baton suspend' and 'baton resume': one
// compare-and-swap on the job's suspension (store.Store.SuspendJob).
func suspendResume(ctx context.Context, e *env, cmd string, args []string) int {
	about := suspendAbout
	if cmd == "resume" {
		about = resumeAbout
	}
	fs := e.newFlagSet(cmd, about)
	storeURL := storeFlag(fs)
	reason := fs.String("reason", "", "why, recorded with the "+cmd+" and in the election log")
	by := fs.String("by", "", "who, recorded likewise (default: USER@HOST)")
	asJSON := fs.Bool("json", false, "print JSON")
	var stop *bool
	if cmd == "suspend" {
		stop = fs.Bool("stop", false, "also ask the leader to resign, which stops a run in progress (it runs again after the resume)")
	}
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	name, err := oneName(pos, "JOB")
	if err == nil && flagsSet(fs)["by"] && *by == "" {
		err = usagef("--by must not be empty; leave it out for USER@HOST")
	}
	if err == nil && (len(*by) > store.MaxReasonLen || len(*reason) > store.MaxReasonLen) {
		err = usagef("--by and --reason take at most %d bytes", store.MaxReasonLen)
	}
	if err == nil {
		err = printable("--reason", *reason)
	}
	if err == nil {
		err = printable("--by", *by)
	}
	if err != nil {
		return e.fail(cmd, err)
	}
	who := *by
	if who == "" {
		who = operator()
	}
	st, err := e.openExisting(ctx, *storeURL)
	if err != nil {
		return e.fail(cmd, err)
	}
	defer st.Close()
	if err := inspect.Known(ctx, st, name); err != nil {
		return e.fail(cmd, readErr(*storeURL, err))
	}
	if _, err := st.GetJob(ctx, name); errors.Is(err, store.ErrNotFound) {
		return e.fail(cmd, fmt.Errorf("%s is not a scheduled job (it has no schedule in the store; 'baton run --every/--cron' registers one)", name))
	} else if err != nil {
		return e.fail(cmd, readErr(*storeURL, err))
	}
	j, err := st.SuspendJob(ctx, store.JobSuspend{Name: name, Suspend: cmd == "suspend", By: who, Reason: *reason})
	if errors.Is(err, store.ErrConflict) {
		if cmd == "resume" {
			return e.fail(cmd, fmt.Errorf("refused: %s is not suspended", name))
		}
		cur, rerr := st.GetJob(ctx, name)
		if rerr != nil {
			return e.fail(cmd, fmt.Errorf("refused: %s is already suspended", name))
		}
		return e.fail(cmd, fmt.Errorf("refused: %s is already suspended (by %s since %s); 'baton resume %s' first",
			name, escape.String(cur.Suspension.By), cur.Suspension.At.UTC().Format(timeLayout), name))
	}
	if err != nil {
		return e.fail(cmd, readErr(*storeURL, err))
	}
	stopped := ""
	if stop != nil && *stop {
		if rec, err := st.Get(ctx, name); err == nil && !rec.Free() {
			if err := baton.RequestResign(ctx, st, name, rec.Token); err != nil {
				return e.fail(cmd, fmt.Errorf("suspended, but asking the leader to resign failed: %w", err))
			}
			stopped = rec.Holder
		}
	}
	if *asJSON {
		v := struct {
			Job       string `json:"job"`
			Action    string `json:"action"`
			By        string `json:"by"`
			Reason    string `json:"reason,omitempty"`
			Suspended bool   `json:"suspended"`
			Stopped   string `json:"stopped_leader,omitempty"`
		}{name, cmd, who, *reason, j.Suspension.Active(), stopped}
		if err := printJSON(e.stdout, v); err != nil {
			return e.fail(cmd, err)
		}
		return exitOK
	}
	if cmd == "resume" {
		fmt.Fprintf(e.stdout, "resumed %s (by %s); missed periods are caught up by its catch-up policy\n", name, escape.String(who))
		return exitOK
	}
	fmt.Fprintf(e.stdout, "suspended %s (by %s", name, escape.String(who))
	if *reason != "" {
		fmt.Fprintf(e.stdout, ": %s", escape.String(*reason))
	}
	fmt.Fprintln(e.stdout, "); no node claims a period until 'baton resume'")
	if stopped != "" {
		fmt.Fprintf(e.stdout, "asked the leader %s to resign: its run in progress stops\n", escape.String(stopped))
	}
	return exitOK
}

// printable refuses a flag value with a control character: it is stored
// and shown by every view.
func printable(flagName, v string) error {
	if !utf8.ValidString(v) {
		return usagef("%s must be valid UTF-8", flagName)
	}
	for _, r := range v {
		if !unicode.IsPrint(r) {
			return usagef("%s must be printable text without control characters (it has %U)", flagName, r)
		}
	}
	return nil
}

// operator names who runs this command: USER@HOST, or what of it is
// known.
func operator() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		name += "@" + h
	}
	return name
}
