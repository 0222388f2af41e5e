package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/history"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

func runVerify(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("verify", `verify [--store URL] [--fence-db URL] [--fence-log TABLE] [--from T] [--to T] [--keep AGE] [--keep-rows N] [--allow-empty] [--json] [JOB|NAME...]

Proves from what the deployment recorded that every due period of each JOB
was done exactly once, under a token of a term of the election log, and
that the fence refused only stale tokens. It reads three records: the
election log (see 'baton history'), the run ledger (see 'baton runs') and
the fence log, the fence's own record of the tokens it accepted and
refused, kept in the resource's database when the fence is opened with a
log (fence.Dialect.WithLog, pgfence.CheckLogged, Guard.SetLog, or the SQL
function of 'baton fence install --log' called with $BATON_PERIOD; the
command passes BATON_PERIOD on with its token: fence.WriteFromEnv). Without NAMEs
it verifies every name in the store.

It checks that the election log misses no event (so its terms, each from
its event to the next, do not overlap; its times are the writers' clocks
and do not count) and that the terms' tokens rise; that the election
record is what the log's last event left (its token and holder) and is
not damaged (as 'baton status' flags it); that the fence accepted rising
tokens, each one a term's; that every refused token was stale (the fence
held a higher one); that every done period in range was accepted exactly
once, a failed, pending or running one at most once, a skipped one
never; and that every accepted period is in the ledger, or was pruned
from it: the retention --keep and --keep-rows (those of 'baton run' and
'baton prune', the same defaults; give the tightest you ran with) deletes
it now, by age or by the rows the ledger keeps newer than it, and the
ledger has a newer row (a prune never deletes the newest scheduled row).
A pruned period is counted, not judged; any other is a missing row. A
ledger row in a state baton never writes is an error naming the row.
Without --fence-db only the election log, the record and the ledger's
tokens are checked: no period is judged, so the verdict says so and verify
exits 1 unless --allow-empty.

It prints, per name, a verdict and a table of the periods: due time,
ledger state, the tokens the fence accepted and the stale tokens it
refused; then every violation, naming its period. The verdict is
"exactly once" only when at least one period was judged and all is
well; with no period judged (an empty ledger and fence log, a range that
holds none, a name that is no job's) it is "nothing judged", which
proves nothing and exits 1 unless --allow-empty. A --fence-db without the
fence log table (a SQL fence installed without 'baton fence install --log',
a Go fence opened without WithLog) judges no period either: the verdict
says the fence keeps no log, and it exits 1 unless --allow-empty. --from
and --to bound the periods judged by their
scheduled instant (FROM <= due < TO; RFC 3339 or a date, 2026-01-02); the
terms and tokens are checked over the whole logs.

What it cannot see: a fenced write made without the log, refusals the
writer did not log (fence.LogRefusal is best effort, after the rollback),
and a period that never got a ledger row (it learns from the ledger which
periods came due).

Exit status: 0 when everything holds, 1 on a violation, when nothing
was judged (without --allow-empty) or when a store cannot be read, 2 on
a usage error. Both stores are opened read-only.`)
	storeURL := storeFlag(fs)
	fenceURL := fs.String("fence-db", "", "the fence's database: sqlite:PATH or a postgres:// URL (password from the URL or $PGPASSWORD)")
	logTable := fs.String("fence-log", fence.DefaultLogTable, "the fence log table in --fence-db")
	fromS := fs.String("from", "", "judge periods due at or after T: a period key or "+bound.InstantHelp)
	toS := fs.String("to", "", "judge periods due before T: a period key or "+bound.InstantHelp)
	keep, keepRows := retentionFlags(fs, "the ledger's retention: rows older than this may be pruned")
	allowEmpty := fs.Bool("allow-empty", false, "exit 0 when no period was judged (the verdict still says \"nothing judged\")")
	asJSON := fs.Bool("json", false, "print JSON: the verdict and, per name, the periods and violations")
	names, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	ret, err := parseRetention(*keep, *keepRows)
	if err != nil {
		return e.fail("verify", err)
	}
	from, err := parseInstant("from", *fromS, e.wallNow())
	if err != nil {
		return e.fail("verify", err)
	}
	to, err := parseInstant("to", *toS, e.wallNow())
	if err != nil {
		return e.fail("verify", err)
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		return e.fail("verify", usagef("--from %s is not before --to %s; give a range that holds a period", *fromS, *toS))
	}
	for _, n := range names {
		if err := checkName("NAME", n); err != nil {
			return e.fail("verify", err)
		}
	}
	st, err := e.openReader(ctx, *storeURL)
	if err != nil {
		return e.fail("verify", err)
	}
	defer st.Close()
	var fdb *fenceDB
	logMissing := false
	if *fenceURL != "" {
		if fdb, err = e.openFenceDB(ctx, *fenceURL, *logTable, true); err != nil {
			return e.fail("verify", err)
		}
		defer fdb.Close()
		has, err := fdb.hasLog(ctx)
		if err != nil {
			return e.fail("verify", err)
		}
		logMissing = !has
	}
	if len(names) == 0 {
		if names, err = st.Names(ctx); err != nil {
			return e.fail("verify", readErr(*storeURL, err))
		}
		if len(names) == 0 {
			return e.fail("verify", fmt.Errorf("the store holds no name to verify"))
		}
	}
	now := time.Now()
	storeNow, err := inspect.StoreNow(ctx, st, now)
	if err != nil {
		return e.fail("verify", readErr(*storeURL, err))
	}
	var reps []history.Report
	for _, name := range names {
		p := history.Production{Name: name, From: from, To: to, HasLog: fdb != nil && !logMissing, LogMissing: logMissing, Retention: ret, Now: now}
		if p.Events, err = st.History(ctx, name, 0, 0); err != nil {
			return e.fail("verify", readErr(*storeURL, err))
		}
		// The record, and whether it is damaged, as every view reads it.
		states, err := inspect.ReadStates(ctx, st, []string{name}, storeNow)
		if err != nil {
			return e.fail("verify", readErr(*storeURL, err))
		}
		p.Record, p.Damaged = states[0].Record, states[0].State.Damaged
		if p.Ledger, err = st.RecentRuns(ctx, name, "", 0); err != nil {
			return e.fail("verify", readErr(*storeURL, err))
		}
		if len(p.Events) == 0 && len(p.Ledger) == 0 {
			if err := inspect.Known(ctx, st, name); err != nil {
				return e.fail("verify", readErr(*storeURL, err))
			}
		}
		if p.HasLog {
			if p.Log, err = fence.ReadLog(ctx, fdb.db, fdb.d, name); errors.Is(err, store.ErrCorrupt) {
				return e.fail("verify", err) // names the row; nothing is judged
			} else if err != nil {
				return e.fail("verify", fmt.Errorf("%w (is the fence opened with a log? see 'baton verify --help')", err))
			}
		}
		reps = append(reps, history.Verify(p))
	}
	ok := true
	var empty []string // names whose fence database was read and nothing judged
	for _, r := range reps {
		ok = ok && r.OK()
		if v := r.Verdict(); r.OK() && (v == history.NothingJudged || v == history.NoFenceLog || v == history.NotJudged) {
			empty = append(empty, r.Name)
		}
	}
	ok = ok && (len(empty) == 0 || *allowEmpty)
	code = exitOK
	if !ok {
		code = exitFailure
	}
	if *asJSON {
		type name struct {
			Verdict string `json:"verdict"`
			history.Report
		}
		v := struct {
			Verdict       string   `json:"verdict"`
			OK            bool     `json:"ok"`
			NothingJudged []string `json:"nothing_judged"`
			Names         []name   `json:"names"`
		}{Verdict: verdictOf(reps), OK: ok, NothingJudged: empty}
		if v.NothingJudged == nil {
			v.NothingJudged = []string{}
		}
		for _, r := range reps {
			v.Names = append(v.Names, name{r.Verdict(), r})
		}
		for i := range v.Names {
			if v.Names[i].Periods == nil {
				v.Names[i].Periods = []history.PeriodRow{}
			}
			if v.Names[i].Violations == nil {
				v.Names[i].Violations = []history.Violation{}
			}
			for j := range v.Names[i].Periods {
				p := &v.Names[i].Periods[j]
				if p.Accepted == nil {
					p.Accepted = []uint64{}
				}
				if p.Refused == nil {
					p.Refused = []uint64{}
				}
			}
		}
		return e.writeJSON("verify", v, code)
	}
	for i, r := range reps {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		printVerify(e.stdout, r)
	}
	if len(reps) > 1 {
		fmt.Fprintf(e.stdout, "\nverdict: %s\n", verdictOf(reps))
	}
	return code
}

// verdictOf is the one-line verdict over every name: "exactly once" only
// when every name judged a period (history.Report.Verdict).
func verdictOf(reps []history.Report) string {
	n, logged, empty := 0, true, 0
	for _, r := range reps {
		n += len(r.Violations)
		logged = logged && r.HasLog
		if r.Verdict() == history.NothingJudged {
			empty++
		}
	}
	switch {
	case n > 0:
		return "VIOLATED: " + plural(n, "violation", "violations")
	case len(reps) > 0 && reps[0].LogMissing:
		return history.NoFenceLog
	case !logged:
		return history.NotJudged
	case empty == len(reps):
		return history.NothingJudged
	case empty > 0:
		return fmt.Sprintf("%s for %d of %d names (exactly once for the others)", history.NothingJudged, empty, len(reps))
	}
	return history.ExactlyOnce
}

// printVerify prints one name's report: the verdict, the period table,
// the violations. Every string from a store is escaped.
func printVerify(w io.Writer, r history.Report) {
	name := escape.String(r.Name)
	done, judged := 0, 0
	for _, p := range r.Periods {
		if p.State == "done" {
			done++
		}
		if p.Verdict != "not judged" {
			judged++
		}
	}
	verdict := r.Verdict()
	switch verdict {
	case history.NothingJudged:
		verdict += ": no period in range in the ledger or the fence log, so nothing is proven (see --from, --to, --allow-empty)"
	case history.NotJudged:
		verdict += ": give the fence's database (--fence-db) to judge them, or --allow-empty to accept this"
	}
	fmt.Fprintf(w, "%s: %s\n", name, verdict)
	if r.HasLog {
		fmt.Fprintf(w, "  %s; %s judged (%d done); the fence accepted %d and refused %d writes",
			plural(r.Terms, "term", "terms"), plural(judged, "period", "periods"), done, r.Accepted, r.Refused)
		if r.Pruned > 0 {
			fmt.Fprintf(w, "; %d accepted periods pruned from the ledger by its retention, not judged", r.Pruned)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "  %s; %s in the ledger\n", plural(r.Terms, "term", "terms"), plural(len(r.Periods), "period", "periods"))
	}
	if len(r.Periods) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "PERIOD\tDUE\tSTATE\tLEDGER TOKEN\tACCEPTED BY\tREFUSED (STALE)\tVERDICT")
		for _, p := range r.Periods {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(p.Period), p.Scheduled.UTC().Format(time.RFC3339),
				cell(p.State), tokenOrDash(p.LedgerToken), tokenList(p.Accepted), tokenList(p.Refused), p.Verdict)
		}
		tw.Flush()
	}
	for _, v := range r.Violations {
		fmt.Fprintf(w, "violation: %s: %s\n", v.Check, escape.String(v.Detail))
	}
}

func tokenOrDash(t uint64) string {
	if t == 0 {
		return "-"
	}
	return fmt.Sprint(t)
}

func tokenList(ts []uint64) string {
	if len(ts) == 0 {
		return "-"
	}
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = fmt.Sprint(t)
	}
	return strings.Join(s, ",")
}

// parseInstant parses --from or --to (flagName without its dashes): a
// period key, or what every time flag takes (parseTimeFlag); empty is the
// zero time (no bound).
func parseInstant(flagName, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := parseTimeFlag(flagName, s, now)
	if err != nil {
		// A period key that is no time (a manual run's "...~manual.N"),
		// within the same range.
		if k, kerr := schedule.ParseKey(s); kerr == nil && !k.Before(bound.MinInstant) && !k.After(bound.MaxInstant) {
			return k, nil
		}
	}
	return t, err
}

// plural returns "1 violation" or "N violations".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// retentionFlags defines --keep and --keep-rows, with the defaults of
// 'baton run' (schedule.DefaultRetention); parseRetention reads them.
func retentionFlags(fs *flag.FlagSet, what string) (keep *string, keepRows *int) {
	keep = fs.String("keep", schedule.FormatAge(schedule.DefaultRetention.Age), what+": days (30d) or a duration (72h); 0: no bound by age")
	keepRows = fs.Int("keep-rows", schedule.DefaultRetention.Rows, "rows beyond the newest N (0: no bound by count)")
	return keep, keepRows
}

// parseRetention reads --keep and --keep-rows.
func parseRetention(keep string, keepRows int) (schedule.Retention, error) {
	var r schedule.Retention
	if keep != "0" {
		age, err := schedule.ParseAge(keep)
		if err != nil {
			return r, usagef("invalid --keep: %v; or 0 for no bound by age", err)
		}
		r.Age = age
	}
	if keepRows < 0 {
		return r, usagef("invalid --keep-rows %d; want 0 (no bound) or more", keepRows)
	}
	r.Rows = keepRows
	return r, nil
}
