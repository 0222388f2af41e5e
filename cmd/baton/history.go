package main

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/store"
)

func runHistory(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("history", `history [--store URL] [--json] NAME
       history [--store URL] [--json] [--events N] [--limit N | --all] [--prefix P] [--state S] [--holder H] [--cursor C]

Prints the election log of NAME, oldest first: every acquisition, release,
takeover, transfer and transfer request, with the token after it, and every
change of the job's schedule (rescheduled, DETAIL: from -> to). TIME is the
store's time of the write, for people to read. The last line ("now:")
says the name's state as 'baton status' does: the log of a Group's name
still ends in "acquired" after its session ended.

Without NAME, history lists the names a page at a time, as 'baton status'
does (--limit names per page, default 50, filtered by --prefix, --state,
--holder; --cursor for the next page, --all for every page), each with the
last --events events of its log (default 5), oldest first. The log is kept
per name: a page reads the whole log of each of its names. With --json:
{"names": [{"name", "state", "events": [...]}], "next": CURSOR}.

The store is opened read-only: nothing is created or written.`)
	storeURL := storeFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	events := fs.Int("events", defaultHistoryEvents, fmt.Sprintf("without NAME: the last this many events of each name (1 to %d)", maxHistoryEvents))
	var lf listFlags
	lf.register(fs)
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	if len(pos) == 0 {
		return runHistoryList(ctx, e, *storeURL, *asJSON, *events, lf)
	}
	if lf.set(fs) || flagsSet(fs)["events"] {
		return e.fail("history", usagef("--events, --limit, --all, --prefix, --state, --holder and --cursor list names; give them without NAME"))
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
		return e.writeJSON("history", logEventViews(evs), exitOK)
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

// defaultHistoryEvents and maxHistoryEvents bound 'baton history
// --events' (without NAME).
const (
	defaultHistoryEvents = 5
	maxHistoryEvents     = 1000
)

// logEventView is one election log event in JSON.
type logEventView struct {
	Seq         uint64 `json:"seq"`
	Time        string `json:"time"`
	Kind        string `json:"kind"`
	Holder      string `json:"holder,omitempty"`
	Incarnation string `json:"incarnation,omitempty"`
	Token       uint64 `json:"token"`
	Transfer    string `json:"transfer,omitempty"`
	Detail      string `json:"detail,omitempty"`
}

func logEventViews(evs []store.Event) []logEventView {
	views := make([]logEventView, 0, len(evs))
	for _, ev := range evs {
		views = append(views, logEventView{ev.Seq, ev.Time.UTC().Format(timeLayout), string(ev.Kind), ev.Holder, ev.Incarnation, ev.Token, ev.Transfer, ev.Detail})
	}
	return views
}

// historyName is one name of 'baton history --json' without NAME.
type historyName struct {
	Name   string         `json:"name"`
	State  inspect.State  `json:"state"`
	Events []logEventView `json:"events"`
}

// runHistoryList is 'baton history' without NAME: a page of names (as
// 'baton status' lists them), each with the last events of its log.
func runHistoryList(ctx context.Context, e *env, storeURL string, asJSON bool, events int, lf listFlags) int {
	if lf.limit < 1 || lf.limit > inspect.MaxLimit {
		return e.fail("history", usagef("invalid --limit %d; want 1 to %d", lf.limit, inspect.MaxLimit))
	}
	if events < 1 || events > maxHistoryEvents {
		return e.fail("history", usagef("invalid --events %d; want 1 to %d", events, maxHistoryEvents))
	}
	q := lf.q
	q.Limit = lf.limit
	if err := q.Check(); err != nil {
		return e.fail("history", usagef("%v", err))
	}
	st, err := e.openReader(ctx, storeURL)
	if err != nil {
		return e.fail("history", err)
	}
	defer st.Close()
	out := struct {
		Names []historyName `json:"names"`
		Next  string        `json:"next,omitempty"`
	}{Names: []historyName{}}
	shown, scanned := 0, 0
	for {
		now, err := inspect.StoreNow(ctx, st, e.wallNow())
		if err != nil {
			return e.fail("history", readErr(storeURL, err))
		}
		p, err := inspect.List(ctx, st, nil, q, now)
		if err != nil {
			return e.fail("history", readErr(storeURL, err))
		}
		for _, en := range p.Entries {
			evs, err := st.History(ctx, en.Name, 0, 0)
			if err != nil {
				return e.fail("history", readErr(storeURL, err))
			}
			evs = evs[max(0, len(evs)-events):]
			if asJSON {
				out.Names = append(out.Names, historyName{Name: en.Name, State: en.State, Events: logEventViews(evs)})
				continue
			}
			if shown > 0 {
				fmt.Fprintln(e.stdout)
			}
			fmt.Fprintf(e.stdout, "%s: %s\n", escape.String(en.Name), escape.String(en.State.Describe()))
			if len(evs) == 0 {
				fmt.Fprintln(e.stdout, "no election history")
			} else {
				printHistory(e.stdout, evs)
			}
			shown++
		}
		if asJSON {
			shown += len(p.Entries)
		}
		scanned += p.Scanned
		out.Next = p.Next
		if !lf.all || p.Next == "" {
			break
		}
		q.After = p.Next
	}
	if asJSON {
		return e.writeJSON("history", out, exitOK)
	}
	if shown > 0 || out.Next != "" {
		fmt.Fprintln(e.stdout)
	}
	printPageEnd(e.stdout, "history", shown, scanned, out.Next)
	return exitOK
}
