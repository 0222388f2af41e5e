package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/store"
)

func runStatus(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("status", "status [--store URL] [--json] NAME\n\nPrints the election record of NAME (holder, fencing token, lease, the store's\ntime of the last write, a pending transfer request) and, when NAME is a job,\nits periods that are pending or running and its last finished one.\nNAME is required: the store has no list of names.\n\nExit status 1 with \"store unavailable\" when the store cannot decide (an\netcd cluster without a quorum): degraded mode, nobody can lead until it is back.")
	storeURL := fs.String("store", storeFromEnv(), storeUsage)
	asJSON := fs.Bool("json", false, "print JSON")
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

	rec, err := st.Get(ctx, name)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return e.fail("status", readErr(*storeURL, err))
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
			Open        []runView `json:"open_runs"`
			Last        *runView  `json:"last_run,omitempty"`
		}
		v := statusView{Name: name, Open: []runView{}}
		if found {
			v.Holder, v.Incarnation, v.Token, v.Transfer = rec.Holder, rec.Incarnation, rec.Token, rec.Transfer
			v.Lease, v.Updated = rec.Lease.String(), rec.Updated.UTC().Format(timeLayout)
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
