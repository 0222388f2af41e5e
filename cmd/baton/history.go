package main

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
)

func runHistory(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("history", `history [--store URL] [--json] NAME

Prints the election log of NAME, oldest first: every acquisition, release,
takeover, transfer and transfer request, with the token after it, and every
change of the job's schedule (rescheduled, DETAIL: from -> to). TIME is the
store's time of the write, for people to read. The last line ("now:")
says the name's state as 'baton status' does: the log of a Group's name
still ends in "acquired" after its session ended.

NAME is required: the log is kept per name, and 'baton status' lists the
names. The store is opened read-only: nothing is created or written.`)
	storeURL := storeFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	if len(pos) == 0 {
		// The log is kept per name: listing every name's recent events
		// would read every name's log (no store keeps one log of all).
		return e.fail("history", usagef("missing NAME; the election log is kept per name: give one ('baton status' lists the names, a page at a time)"))
	}
	name, err := oneName(pos, "NAME")
	if err != nil {
		return e.fail("history", err)
	}
	st, err := e.openReader(ctx, *storeURL)
	if err != nil {
		return e.fail("history", err)
	}
	defer st.Close()
	evs, err := st.History(ctx, name, 0, 0)
	if err == nil && len(evs) == 0 {
		err = inspect.Known(ctx, st, name)
	}
	if err != nil {
		return e.fail("history", readErr(*storeURL, err))
	}
	if *asJSON {
		type eventView struct {
			Seq         uint64 `json:"seq"`
			Time        string `json:"time"`
			Kind        string `json:"kind"`
			Holder      string `json:"holder,omitempty"`
			Incarnation string `json:"incarnation,omitempty"`
			Token       uint64 `json:"token"`
			Transfer    string `json:"transfer,omitempty"`
			Detail      string `json:"detail,omitempty"`
		}
		views := make([]eventView, 0, len(evs))
		for _, ev := range evs {
			views = append(views, eventView{ev.Seq, ev.Time.UTC().Format(timeLayout), string(ev.Kind), ev.Holder, ev.Incarnation, ev.Token, ev.Transfer, ev.Detail})
		}
		return e.writeJSON("history", views, exitOK)
	}
	if len(evs) == 0 {
		fmt.Fprintf(e.stdout, "no election history for %s\n", name)
		return exitOK
	}
	printHistory(e.stdout, evs)
	// The log says what happened; the record and its session say what
	// holds now (a Group's names stay "acquired" in the log when its
	// session ends).
	now, err := inspect.StoreNow(ctx, st, e.wallNow())
	if err != nil {
		return e.fail("history", readErr(*storeURL, err))
	}
	es, err := inspect.ReadStates(ctx, st, []string{name}, now)
	if err != nil {
		return e.fail("history", readErr(*storeURL, err))
	}
	fmt.Fprintf(e.stdout, "\nnow: %s\n", escape.String(es[0].State.Describe()))
	return exitOK
}

// timeLayout prints store times: RFC 3339 in UTC with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
