package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/store"
)

func runStatus(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("status", "status [--store URL] [--json] NAME\n\nPrints the election record of NAME (holder, fencing token, lease, the store's\ntime of the last write, a pending transfer request) and, when NAME is a job,\nits periods that are pending or running and its last finished one.\nNAME is required: the store has no list of names.\n\nWith --observe D, status watches the record for D on this process's own clock\nand reports when it last saw a renewal and the lease remaining as seen from\nhere: no store or wall clock is compared. A contender decides the same way.\n\nExit status 1 with \"store unavailable\" when the store cannot decide (an\netcd cluster without a quorum): degraded mode, nobody can lead until it is back.")
	storeURL := storeFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	observeFor := fs.Duration("observe", 0, "watch the record for this long and report the lease remaining as seen by this process (0: do not watch)")
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	name, err := oneName(pos, "NAME (the store has no list of names)")
	if err != nil {
		return e.fail("status", err)
	}
	st, err := e.openStore(ctx, *storeURL)
	if err != nil {
		return e.fail("status", err)
	}
	defer st.Close()

	if *observeFor < 0 {
		return e.fail("status", usagef("invalid --observe %v; want 0 or a positive duration", *observeFor))
	}
	rec, err := st.Get(ctx, name)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return e.fail("status", readErr(*storeURL, err))
	}
	var seen observation
	if found && *observeFor > 0 {
		if rec, seen, err = observe(ctx, st, rec, *observeFor); err != nil {
			return e.fail("status", readErr(*storeURL, err))
		}
	}
	rows, err := st.Runs(ctx, name, "", 0)
	if err != nil {
		return e.fail("status", readErr(*storeURL, err))
	}
	if !found && len(rows) == 0 {
		return e.fail("status", fmt.Errorf("%s: no election record and no runs in this store", name))
	}
	var open []store.Run
	var last *store.Run
	for i, r := range rows {
		if r.State.Final() {
			last = &rows[i]
		} else {
			open = append(open, r)
		}
	}

	if *asJSON {
		type statusView struct {
			Name        string    `json:"name"`
			Holder      string    `json:"holder,omitempty"`
			Incarnation string    `json:"incarnation,omitempty"`
			Token       uint64    `json:"token"`
			Lease       string    `json:"lease,omitempty"`
			Updated     string    `json:"updated,omitempty"`
			Transfer    string    `json:"transfer,omitempty"`
			Observed    string    `json:"observed,omitempty"`
			Remaining   string    `json:"lease_remaining_at_most,omitempty"`
			Open        []runView `json:"open_runs"`
			Last        *runView  `json:"last_run,omitempty"`
		}
		v := statusView{Name: name, Open: []runView{}}
		if found {
			v.Holder, v.Incarnation, v.Token, v.Transfer = rec.Holder, rec.Incarnation, rec.Token, rec.Transfer
			v.Lease, v.Updated = rec.Lease.String(), rec.Updated.UTC().Format(timeLayout)
			if seen.watched > 0 && !rec.Free() {
				v.Observed, v.Remaining = seen.watched.String(), seen.remaining(rec.Lease).String()
			}
		}
		for _, r := range open {
			v.Open = append(v.Open, viewRun(r))
		}
		if last != nil {
			lv := viewRun(*last)
			v.Last = &lv
		}
		if err := printJSON(e.stdout, v); err != nil {
			return e.fail("status", err)
		}
		return exitOK
	}

	w := e.stdout
	fmt.Fprintf(w, "name:      %s\n", name)
	if found {
		holder := "(free)"
		if !rec.Free() {
			holder = fmt.Sprintf("%s (incarnation %s)", rec.Holder, rec.Incarnation)
		}
		fmt.Fprintf(w, "holder:    %s\n", holder)
		fmt.Fprintf(w, "token:     %d\n", rec.Token)
		fmt.Fprintf(w, "lease:     %v\n", rec.Lease)
		fmt.Fprintf(w, "written:   %s (store time, informational)\n", rec.Updated.UTC().Format(timeLayout))
		if seen.watched > 0 && !rec.Free() {
			fmt.Fprintf(w, "observed:  %s\n", seen.describe(rec.Lease))
		}
		switch rec.Transfer {
		case "":
			fmt.Fprintf(w, "transfer:  none requested\n")
		case store.AnyNode:
			fmt.Fprintf(w, "transfer:  resignation requested\n")
		default:
			fmt.Fprintf(w, "transfer:  to %s\n", rec.Transfer)
		}
	} else {
		fmt.Fprintf(w, "holder:    (no election record yet)\n")
	}
	if len(rows) == 0 {
		return exitOK
	}
	fmt.Fprintln(w)
	if len(open) == 0 {
		fmt.Fprintln(w, "no period pending or running")
	} else {
		fmt.Fprintln(w, "pending or running:")
		printRuns(w, open)
	}
	if last != nil {
		fmt.Fprintln(w, "\nlast finished:")
		printRuns(w, []store.Run{*last})
	}
	return exitOK
}

// readErr explains a failed read: an unavailable store is degraded mode.
func readErr(url string, err error) error {
	if errors.Is(err, store.ErrUnavailable) {
		return unavailable(url, err)
	}
	return err
}

// observation is what status saw of a record on this process's clock.
type observation struct {
	watched time.Duration // how long it watched
	changed bool          // whether it saw the version change
	since   time.Duration // time since it last saw a change (or since it started watching)
}

// observe polls the record for d and returns the last record read and
// what was seen: the time since the version last changed, measured on this
// process's monotonic clock, like a contender does.
func observe(ctx context.Context, st store.Store, rec store.Record, d time.Duration) (store.Record, observation, error) {
	start := time.Now()
	last := start
	var o observation
	tick := time.NewTicker(min(100*time.Millisecond, d))
	defer tick.Stop()
	for time.Since(start) < d {
		select {
		case <-ctx.Done():
			return rec, o, ctx.Err()
		case <-tick.C:
		}
		cur, err := st.Get(ctx, rec.Name)
		if err != nil {
			return rec, o, err
		}
		if cur.Version != rec.Version {
			o.changed, last = true, time.Now()
		}
		rec = cur
	}
	o.watched, o.since = time.Since(start), time.Since(last)
	return rec, o, nil
}

// remaining is the most lease the holder can have left, as seen from here:
// its last renewal was no later than the last change seen.
func (o observation) remaining(lease time.Duration) time.Duration {
	return max(lease-o.since, 0)
}

func (o observation) describe(lease time.Duration) string {
	left := o.remaining(lease)
	var b strings.Builder
	if o.changed {
		fmt.Fprintf(&b, "renewed %v ago (last change seen in %v of watching)", o.since.Round(time.Millisecond), o.watched.Round(time.Millisecond))
	} else {
		fmt.Fprintf(&b, "no renewal seen in %v of watching", o.watched.Round(time.Millisecond))
	}
	if left > 0 {
		fmt.Fprintf(&b, "; lease remaining at most %v as seen by this process", left.Round(time.Millisecond))
	} else {
		fmt.Fprintf(&b, "; the lease has run out as seen by this process: a contender takes over after its clock margin")
	}
	return b.String()
}
