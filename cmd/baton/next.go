package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

const nextSynopsis = `next [--every D [--offset D] | --cron EXPR [--tz ZONE] | [--store URL] JOB] [--from T] [--count N] [--json]

Prints the next N instants of a schedule after --from (default: now), as
systemd-analyze calendar does: the period key (the UTC instant) and the local
time in the schedule's zone. Give the schedule with flags, or name a
registered JOB to read its schedule from the store (opened read-only).

` + cronRuleHelp

// nextDefaultCount is how many instants 'baton next' prints by default.
const nextDefaultCount = 5

func runNext(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("next", nextSynopsis)
	var sf scheduleFlags
	sf.register(fs)
	storeURL := storeFlag(fs)
	from := fs.String("from", "", "print the instants after this time (default: now): "+bound.InstantHelp)
	count := fs.Int("count", nextDefaultCount, "how many instants to print, 1 to 1000")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	set := flagsSet(fs)
	s, desc, err := func() (schedule.Schedule, string, error) {
		if *count < 1 || *count > 1000 {
			return nil, "", usagef("invalid --count %d; want 1 to 1000", *count)
		}
		s, err := sf.parse(set)
		if err != nil {
			return nil, "", err
		}
		switch {
		case s != nil && len(pos) > 0:
			return nil, "", usagef("give a schedule (--every or --cron) or a JOB, not both")
		case s != nil:
			return s, s.String(), nil
		case len(pos) == 0:
			return nil, "", usagef("missing schedule: give --every D, --cron EXPR, or the name of a registered JOB")
		}
		job, err := oneName(pos, "JOB")
		if err != nil {
			return nil, "", err
		}
		st, err := e.openReader(ctx, *storeURL)
		if err != nil {
			return nil, "", err
		}
		defer st.Close()
		j, err := st.GetJob(ctx, job)
		if errors.Is(err, store.ErrNotFound) {
			if err := inspect.Known(ctx, st, job); err != nil {
				return nil, "", readErr(*storeURL, err)
			}
			return nil, "", fmt.Errorf("job %s has no schedule in this store (a singleton or a --once lock); a job's schedule is stored when 'baton run' with --every or --cron first starts it", job)
		}
		if err != nil {
			return nil, "", readErr(*storeURL, err)
		}
		s, _, err = schedule.ParseSpec(j.Schedule)
		if err != nil {
			return nil, "", err
		}
		if s == nil {
			return nil, "", fmt.Errorf("job %s has no schedule: it runs only when triggered", job)
		}
		return s, specText(j.Schedule), nil
	}()
	if err != nil {
		return e.fail("next", err)
	}
	at := e.wallNow().UTC()
	if *from != "" {
		if at, err = parseTimeFlag("from", *from, at); err != nil {
			return e.fail("next", err)
		}
	}
	loc := schedule.Location(s)
	// A stored job's jitter delays each instant's start (the same delay
	// on every node).
	var jitter time.Duration
	if _, pol, err := schedule.ParseSpec(desc); err == nil && len(pos) > 0 {
		jitter = pol.Jitter
	}
	type instant struct {
		Period string `json:"period"`
		Time   string `json:"time"`
		Local  string `json:"local"`
		// Start and JitterSeconds: with a jitter, when the period starts.
		Start         string  `json:"start,omitempty"`
		JitterSeconds float64 `json:"jitter_seconds,omitempty"`
	}
	var out []instant
	for t := s.Next(at); !t.IsZero() && len(out) < *count; t = s.Next(t) {
		in := instant{Period: schedule.Key(t), Time: t.UTC().Format(time.RFC3339), Local: t.In(loc).Format(time.RFC3339)}
		if jitter > 0 {
			d := schedule.JitterOf(pos[0], in.Period, jitter)
			in.Start, in.JitterSeconds = t.Add(d).UTC().Format("2006-01-02T15:04:05.000Z07:00"), bound.Seconds(d)
		}
		out = append(out, in)
	}
	if len(out) == 0 {
		return e.fail("next", usagef("%s has no instant within five years after %s; fix the expression", desc, at.Format(time.RFC3339)))
	}
	if *asJSON {
		v := struct {
			Schedule string    `json:"schedule"`
			From     string    `json:"from"`
			Instants []instant `json:"instants"`
		}{desc, at.Format(time.RFC3339Nano), out}
		if v.Instants == nil {
			v.Instants = []instant{}
		}
		return e.writeJSON("next", v, exitOK)
	}
	fmt.Fprintf(e.stdout, "schedule:  %s\nfrom:      %s\n", escape.String(desc), at.Truncate(time.Millisecond).Format(time.RFC3339Nano))
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	if jitter > 0 {
		fmt.Fprintf(tw, "\tPERIOD\tLOCAL (%s)\tJITTER\n", loc)
	} else {
		fmt.Fprintf(tw, "\tPERIOD\tLOCAL (%s)\n", loc)
	}
	for i, in := range out {
		t, _ := time.Parse(time.RFC3339, in.Time)
		if jitter > 0 {
			fmt.Fprintf(tw, "%d\t%s\t%s\t+%v\n", i+1, in.Period, t.In(loc).Format("Mon 2006-01-02 15:04:05 MST"),
				time.Duration(in.JitterSeconds*float64(time.Second)).Round(time.Millisecond))
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", i+1, in.Period, t.In(loc).Format("Mon 2006-01-02 15:04:05 MST"))
	}
	tw.Flush()
	return exitOK
}
