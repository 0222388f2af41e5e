package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
)

// defaultListLimit is how many names 'baton status' lists per page.
const defaultListLimit = 50

// listFlags are the flags of 'baton status' without NAME.
type listFlags struct {
	limit  int
	all    bool
	q      inspect.ListQuery
	fields []string
}

func (l *listFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&l.limit, "limit", defaultListLimit, fmt.Sprintf("without NAME: list this many names per page (1 to %d)", inspect.MaxLimit))
	fs.BoolVar(&l.all, "all", false, "without NAME: list every name, page after page")
	fs.StringVar(&l.q.Prefix, "prefix", "", "without NAME: only names that begin with this")
	fs.StringVar(&l.q.State, "state", "", "without NAME: only names in this state (held, probably-dead, session-ended, free)")
	fs.StringVar(&l.q.Holder, "holder", "", "without NAME: only names held (or last held) by this node id")
	fs.StringVar(&l.q.After, "cursor", "", "without NAME: start after this name (the cursor the previous page printed)")
	l.fields = []string{"limit", "all", "prefix", "state", "holder", "cursor"}
}

// set reports whether any listing flag was given.
func (l *listFlags) set(fs *flag.FlagSet) bool {
	given := false
	fs.Visit(func(f *flag.Flag) {
		for _, n := range l.fields {
			if f.Name == n {
				given = true
			}
		}
	})
	return given
}

// statusRow is one name of 'baton status' without NAME.
type statusRow struct {
	Name    string        `json:"name"`
	State   inspect.State `json:"state"`
	Job     *inspect.Job  `json:"job,omitempty"`
	LastRun *inspect.Run  `json:"last_run,omitempty"`
}

// statusList is 'baton status --json' without NAME.
type statusList struct {
	Jobs []statusRow `json:"jobs"`
	// Next is the cursor of the next page (--cursor); empty after the last.
	Next string `json:"next"`
}

func runStatusList(ctx context.Context, e *env, storeURL string, asJSON bool, lf listFlags) int {
	if lf.limit < 1 || lf.limit > inspect.MaxLimit {
		return e.fail("status", usagef("invalid --limit %d; want 1 to %d", lf.limit, inspect.MaxLimit))
	}
	q := lf.q
	q.Limit = lf.limit
	if err := q.Check(); err != nil {
		return e.fail("status", usagef("%v", err))
	}
	st, err := e.openReader(ctx, storeURL)
	if err != nil {
		return e.fail("status", err)
	}
	defer st.Close()
	out := statusList{Jobs: []statusRow{}}
	var tw *tabwriter.Writer
	if !asJSON {
		tw = tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSTATE\tHOLDER\tTOKEN\tSCHEDULE\tNEXT DUE\tLAST RUN")
	}
	shown, scanned := 0, 0
	for {
		wall := e.wallNow()
		now, err := inspect.StoreNow(ctx, st, wall)
		if err != nil {
			return e.fail("status", readErr(storeURL, err))
		}
		p, err := inspect.List(ctx, st, nil, q, now)
		if err != nil {
			return e.fail("status", readErr(storeURL, err))
		}
		for _, en := range p.Entries {
			row := statusRow{Name: en.Name, State: en.State}
			if row.Job, row.LastRun, err = inspect.JobColumns(ctx, st, en.Name, wall); err != nil {
				return e.fail("status", readErr(storeURL, err))
			}
			if asJSON {
				out.Jobs = append(out.Jobs, row)
			} else {
				printStatusRow(tw, row)
			}
		}
		shown, scanned = shown+len(p.Entries), scanned+p.Scanned
		out.Next = p.Next
		if !lf.all || p.Next == "" {
			break
		}
		q.After = p.Next
		if tw != nil {
			tw.Flush() // a page at a time
		}
	}
	if asJSON {
		return e.writeJSON("status", out, exitOK)
	}
	tw.Flush()
	fmt.Fprintln(e.stdout)
	printPageEnd(e.stdout, "status", shown, scanned, out.Next)
	return exitOK
}

// printPageEnd ends a page of names listed by cmd: how many were shown
// (of how many read, when filters passed some over) and how to read the
// next page.
func printPageEnd(w io.Writer, cmd string, shown, scanned int, next string) {
	switch {
	case shown == 0 && next == "":
		fmt.Fprintln(w, "no names")
	case next != "" && scanned > shown:
		fmt.Fprintf(w, "%d names shown of %d read; more: baton %s --cursor %s with the same filters (or --all)\n",
			shown, scanned, cmd, shellQuote(escape.String(next)))
	case next != "":
		fmt.Fprintf(w, "%d names shown; more: baton %s --cursor %s (or --all)\n", shown, cmd, shellQuote(escape.String(next)))
	default:
		fmt.Fprintf(w, "%d names shown\n", shown)
	}
}

// printStatusRow prints one line of the listing.
func printStatusRow(w io.Writer, r statusRow) {
	sched, next, last := "-", "-", "-"
	if j := r.Job; j != nil {
		sched, _, _ = cutSpec(j.Schedule)
		if d := j.NextDue; d != nil {
			next = d.Scheduled.UTC().Format(time.RFC3339)
			if d.Overdue {
				next += " (overdue)"
			}
		}
	}
	if l := r.LastRun; l != nil {
		last = l.Period + " " + l.State
	}
	holder := r.State.Holder
	fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", escape.String(r.Name), r.State.State, cell(orDash(holder)), r.State.Token,
		cell(sched), next, escape.Cell(last, lastCellWidth))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '/') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
