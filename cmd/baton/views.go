package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// runView is a ledger row as 'baton runs' and 'baton status' print it.
type runView struct {
	Job       string     `json:"job"`
	Period    string     `json:"period"`
	Scheduled time.Time  `json:"scheduled"`
	State     string     `json:"state"`
	Token     uint64     `json:"token"`
	Holder    string     `json:"holder,omitempty"`
	Attempt   int        `json:"attempt"`
	Manual    bool       `json:"manual"`
	Started   *time.Time `json:"started,omitempty"`
	Finished  *time.Time `json:"finished,omitempty"`
	// Delay is Started - Scheduled: how late the run started.
	Delay        string  `json:"delay,omitempty"`
	DelaySeconds float64 `json:"delay_seconds"`
	ExitCode     int     `json:"exit_code"`
	Output       string  `json:"output,omitempty"`
}

func viewRun(r store.Run) runView {
	v := runView{Job: r.Job, Period: r.Period, Scheduled: r.Scheduled.UTC(), State: string(r.State), Token: r.Token,
		Holder: r.Holder, Attempt: r.Attempt, Manual: r.Manual, ExitCode: r.ExitCode, Output: r.Output}
	if !r.Started.IsZero() {
		s := r.Started.UTC()
		v.Started = &s
		d := schedule.Delay(r)
		v.Delay, v.DelaySeconds = d.String(), d.Seconds()
	}
	if !r.Finished.IsZero() {
		f := r.Finished.UTC()
		v.Finished = &f
	}
	return v
}

// printRuns prints rows as a table.
func printRuns(w io.Writer, rows []store.Run) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PERIOD\tSTATE\tATTEMPT\tTOKEN\tHOLDER\tMANUAL\tDELAY\tEXIT")
	for _, r := range rows {
		v := viewRun(r)
		delay, exit, manual := "-", "-", ""
		if v.Delay != "" {
			delay = v.Delay
		}
		if r.State == store.Done || r.State == store.Failed {
			exit = fmt.Sprint(r.ExitCode)
		}
		if r.Manual {
			manual = "yes"
		}
		holder := r.Holder
		if holder == "" {
			holder = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", r.Period, r.State, r.Attempt, r.Token, holder, manual, delay, exit)
	}
	tw.Flush()
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
