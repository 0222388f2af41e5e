package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/store"
)

// The human output of the read commands. Golden files under testdata/ hold
// it byte for byte (go test ./cmd/baton -run Golden -update rewrites them).

// printStatus prints what 'baton status' shows of v, and what --observe
// saw (seen.watched == 0: nothing).
func printStatus(w io.Writer, v inspect.View, seen observation) {
	v = printableView(v)
	fmt.Fprintf(w, "name:      %s\n", v.Name)
	if el := v.Election; el != nil {
		holder := "(free)"
		if el.Holder != "" {
			holder = fmt.Sprintf("%s (incarnation %s)", el.Holder, el.Incarnation)
		}
		fmt.Fprintf(w, "holder:    %s\n", holder)
		fmt.Fprintf(w, "state:     %s\n", escape.String(v.State.Describe()))
		fmt.Fprintf(w, "token:     %d\n", el.Token)
		fmt.Fprintf(w, "lease:     %v\n", el.Lease)
		if el.Session != "" {
			note := "the holder renews it for all its names"
			if v.State.State == inspect.SessionEnded {
				note = "ended: the holder no longer renews it"
			}
			fmt.Fprintf(w, "session:   %s (%s)\n", el.Session, note)
		}
		fmt.Fprintf(w, "written:   %s (store time, informational)\n", el.Updated.Format(timeLayout))
		if seen.watched > 0 && el.Holder != "" {
			fmt.Fprintf(w, "observed:  %s\n", seen.describe(el.Lease))
		}
		switch el.Transfer {
		case "":
			fmt.Fprintf(w, "transfer:  none requested\n")
		case store.AnyNode:
			fmt.Fprintf(w, "transfer:  resignation requested\n")
		default:
			fmt.Fprintf(w, "transfer:  to %s\n", el.Transfer)
		}
	} else {
		fmt.Fprintf(w, "holder:    (no election record yet)\n")
	}
	if len(v.Candidates) == 0 {
		fmt.Fprintf(w, "waiting:   no other node is campaigning\n")
	}
	for i, c := range v.Candidates {
		label := "waiting:  "
		if i > 0 {
			label = "          "
		}
		fmt.Fprintf(w, "%s %s since %s, last seen %v ago%s\n", label, c.Node, c.Since.Format(timeLayout), c.Age.Round(time.Millisecond), attrsNote(c))
	}
	if p := v.Preference; p != nil {
		policy := p.Policy
		if p.HysteresisSeconds > 0 {
			policy += fmt.Sprintf(" (hysteresis %v)", time.Duration(p.HysteresisSeconds*float64(time.Second)).Round(time.Millisecond))
		}
		if p.LeaderAttrs != "" {
			policy += "; the leader says " + p.LeaderAttrs
		}
		fmt.Fprintf(w, "prefer:    %s\n", policy)
		fmt.Fprintf(w, "           %s\n", p.Why)
	}
	if j := v.Job; j != nil {
		fmt.Fprintln(w)
		if j.ScheduleError != "" {
			fmt.Fprintf(w, "schedule:  %s (this baton cannot read it: %s)\n", j.Schedule, j.ScheduleError)
		} else {
			sched, _, _ := cutSpec(j.Schedule)
			fmt.Fprintf(w, "schedule:  %s\n", sched)
			if policy, ok := policyText(j.Schedule); ok {
				fmt.Fprintf(w, "catch-up:  %s\n", escape.String(policy))
			}
		}
		if s := j.Suspended; s != nil {
			why := ""
			if s.Reason != "" {
				why = ": " + escape.String(s.Reason)
			}
			fmt.Fprintf(w, "suspended: since %s by %s%s (no period is claimed until 'baton resume')\n", s.Since.Format(timeLayout), escape.String(s.By), why)
		}
		if d := j.NextDue; d != nil {
			note := ""
			if d.Overdue && j.Suspended != nil {
				note = fmt.Sprintf(" (due %v ago; the job is suspended)", d.Late.Round(time.Second))
			} else if d.Overdue {
				note = fmt.Sprintf(" (due %v ago and not started: the leader is busy or catching up, or nobody leads)", d.Late.Round(time.Second))
			}
			fmt.Fprintf(w, "next due:  %s%s\n", d.Period, note)
		}
		fmt.Fprintf(w, "since:     %s (registered)\n", j.Registered.Format(timeLayout))
	}
	if v.Rows == 0 {
		if v.Job != nil {
			fmt.Fprintln(w, "\nno runs yet")
		}
		return
	}
	fmt.Fprintln(w)
	if len(v.Open) == 0 {
		fmt.Fprintln(w, "no period pending or running")
	} else {
		fmt.Fprintln(w, "pending or running:")
		printRuns(w, v.Open)
	}
	if v.Last != nil {
		fmt.Fprintln(w, "\nlast finished:")
		printRuns(w, []inspect.Run{*v.Last})
	}
	if v.More {
		fmt.Fprintf(w, "\n(read the newest %d ledger rows; 'baton runs --all %s' lists every one)\n", v.Rows, v.Name)
	}
}

// cutSpec splits a job description into its schedule and policy parts.
func cutSpec(desc string) (sched, policy string, ok bool) {
	return strings.Cut(desc, "; catch-up ")
}

// printRuns prints rows as a table.
func printRuns(w io.Writer, rows []inspect.Run) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PERIOD\tSTATE\tATTEMPT\tTOKEN\tHOLDER\tMANUAL\tDELAY\tEXIT")
	for _, r := range rows {
		delay, exit, manual := "-", "-", ""
		if r.Started != nil {
			delay = r.Delay.String()
		}
		if r.State == string(store.Done) || r.State == string(store.Failed) {
			exit = fmt.Sprint(r.ExitCode)
		}
		if r.Manual {
			manual = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", cell(r.Period), cell(r.State), r.Attempt, r.Token, cell(orDash(r.Holder)), manual, delay, exit)
	}
	tw.Flush()
}

// printHistory prints election log events as a table.
func printHistory(w io.Writer, evs []store.Event) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tHOLDER\tTOKEN\tTRANSFER\tDETAIL")
	for _, ev := range evs {
		transfer := cell(orDash(ev.Transfer))
		if ev.Transfer == store.AnyNode {
			transfer = "any (resign)" // 'baton resign': whoever takes it first
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", ev.Seq, ev.Time.UTC().Format(timeLayout), cell(string(ev.Kind)), cell(orDash(ev.Holder)), ev.Token,
			transfer, escape.Cell(orDash(ev.Detail), lastCellWidth))
	}
	tw.Flush()
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJSON prints v as JSON on standard output (printJSON) and returns
// code; when the write fails it prints that as cmd's error instead and
// returns 1.
func (e *env) writeJSON(cmd string, v any, code int) int {
	if err := printJSON(e.stdout, v); err != nil {
		return e.fail(cmd, err)
	}
	return code
}

// attrsNote is what a waiting node says it is, for its status line: its
// attributes, or why they were refused (the row's text escaped).
func attrsNote(c inspect.Candidate) string {
	switch {
	case c.AttrsError != "":
		return fmt.Sprintf(" (attributes refused: %s: %s)", escape.String(c.AttrsError), c.Attrs)
	case c.Attrs != "":
		return " (" + c.Attrs + ")"
	}
	return ""
}
