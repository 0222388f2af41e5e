package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton/internal/browsertest"
	"github.com/batonhq/baton/store"
)

// hostile is what a writer of the store may have put in a holder: an ESC
// sequence that clears a terminal and a newline that forges a line.
const hostile = "x\x1b[2J\nholder: evil"

// escapedHostile is how every human-readable output shows it.
const escapedHostile = `x\x1b[2J\nholder: evil`

// Text written through the store API with control characters in it (a
// holder, an incarnation, a transfer target, a candidate's node id, an
// event's kind and detail, a run's holder) is shown escaped by status,
// history, runs and the serve page: no raw control character, no forged
// line. (A run's state is one of store.RunStates or the row is refused as
// damaged: TestDamagedLedgerRow.)
func TestHostileStoreTextEscaped(t *testing.T) {
	e, _, _, ms := shared()
	ctx := context.Background()
	st := ms.Client("")
	writeHostile(t, st)

	check := func(what, got string, wants ...string) {
		t.Helper()
		for _, r := range got {
			if r != '\n' && !unicode.IsPrint(r) {
				t.Errorf("%s holds the raw control character %U:\n%s", what, r, got)
				break
			}
		}
		for _, l := range strings.Split(got, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "holder: evil") || strings.HasPrefix(strings.TrimSpace(l), "waiting: evil") || strings.HasPrefix(l, "forged") {
				t.Errorf("%s has a forged line %q:\n%s", what, l, got)
			}
		}
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s lacks %q:\n%s", what, w, got)
			}
		}
	}
	for _, tc := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"status", "billing"}, []string{escapedHostile, `inc\r\x1b[1A`, `node\u202eb`, `cand\x1b[2J\nwaiting: evil`, `detail\n\x1b[2Jforged`}},
		{[]string{"history", "billing"}, []string{escapedHostile, `acquired\x1b[31m`, `node\u202eb`, `sched\x1b]0;pwned\a -> detail\n\x1b[2Jforged`}},
		{[]string{"history"}, []string{escapedHostile, `acquired\x1b[31m`, `node\u202eb`, `sched\x1b]0;pwned\a -> detail\n\x1b[2Jforged`}},
		{[]string{"runs", "billing"}, []string{escapedHostile}},
		{[]string{"next", "billing"}, []string{`detail\n\x1b[2Jforged`}},
	} {
		out, errb := &syncBuffer{}, &syncBuffer{}
		e.stdout, e.stderr = out, errb
		e.run(ctx, append(tc.args, "--store", "mem:"))
		check(strings.Join(tc.args, " "), out.String()+errb.String(), tc.wants...)
	}

	// The serve page, as the browser gets it and as it refreshes.
	s, err := newServer(st, "mem:", []string{"billing"}, time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.routes())
	defer hs.Close()
	for _, path := range []string{"/", "/fragment"} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d, %v", path, resp.StatusCode, err)
		}
		check("serve "+path, string(body), escapedHostile, `cand\x1b[2J\nwaiting: evil`, `node\u202eb`)
	}
}

// writeHostile writes records full of control characters through the
// store API: a job, an election record, a transfer request, a
// reschedule (an event detail), a candidate and a ledger row.
func writeHostile(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.EnsureJob(ctx, store.Job{Name: "billing", Schedule: "sched\x1b]0;pwned\x07"}); err != nil {
		t.Fatal(err)
	}
	rec, err := st.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: hostile, Incarnation: "inc\r\x1b[1A", Token: 3, Lease: time.Minute}, Event: store.EventKind("acquired\x1b[31m")})
	if err != nil {
		t.Fatal(err)
	}
	rec.Transfer = "node\u202eb"
	if _, err := st.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec, Event: store.TransferRequested}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateJob(ctx, store.JobUpdate{Name: "billing", Expect: "sched\x1b]0;pwned\x07", Schedule: "detail\n\x1b[2Jforged"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Heartbeat(ctx, store.Candidate{Name: "billing", Node: "cand\x1b[2J\nwaiting: evil", Incarnation: "i\x00", Every: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "billing", Period: "2026-01-01T00:00:00Z", State: store.Done, Token: 3, Holder: hostile, Attempt: 1, Output: "out\x1b[2J"}}); err != nil {
		t.Fatal(err)
	}

}

// In headless Chromium the serve page shows the hostile holder and
// candidate escaped, as text, on one line each.
func TestHostileStoreTextInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	t.Parallel() // its own store, server and browser
	ctx := browsertest.New(t, 60*time.Second)
	// No refresh while the test reads the page: a refresh replaces the
	// nodes it queries.
	st, url := servedStore(t, "", time.Hour)
	writeHostile(t, st)
	const job = `section.job[data-name="billing"] `
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(job+`dd.holder`)); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, job+`dd.holder`); got != escapedHostile {
		t.Errorf("holder shown as %q, want %q", got, escapedHostile)
	}
	if got := text(t, ctx, job+`dd.candidates`); got != `cand\x1b[2J\nwaiting: evil` {
		t.Errorf("candidates shown as %q", got)
	}
	if got := text(t, ctx, job+`table.ledger`); strings.ContainsRune(got, 0x1b) || !strings.Contains(got, escapedHostile) {
		t.Errorf("ledger shown as %q", got)
	}
}

// A huge value in the store (a 1 MB holder, incarnation, transfer target
// and run holder; a run state no baton writes is a damaged row, refused
// on read: TestDamagedLedgerRow) is cut short, with an ellipsis, in every table, so no
// column is padded to its width; JSON keeps it whole.
func TestHugeStoreValueBoundedInTables(t *testing.T) {
	e, _, _, ms := shared()
	ctx := context.Background()
	huge := "\x1b" + strings.Repeat("h", 1<<20)
	rec, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: huge, Incarnation: huge, Token: 3, Lease: time.Minute}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	rec.Transfer = huge
	if _, err := ms.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec, Event: store.TransferRequested}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"} {
		if _, err := ms.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "billing", Period: p, State: store.Done, Token: 3, Holder: huge, Attempt: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		out, errb := &syncBuffer{}, &syncBuffer{}
		e.stdout, e.stderr = out, errb
		if code := e.run(ctx, append(args, "--store", "mem:")); code != exitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, errb)
		}
		return out.String()
	}
	for _, args := range [][]string{{"runs", "billing"}, {"history", "billing"}, {"status"}} {
		out := run(args...)
		table, _, _ := strings.Cut(out, "\n\n") // the lines after it hold one value each, whole
		for _, l := range strings.Split(table, "\n") {
			if len(l) > 400 {
				t.Errorf("%v: a line of %d bytes; want every table row bounded:\n%.400s...", args, len(l), l)
				break
			}
		}
		if !strings.Contains(table, `\x1bhhh`) || !strings.Contains(table, "h…") {
			t.Errorf("%v shows no escaped, cut-short value:\n%.2000s", args, out)
		}
	}
	if out := run("runs", "--json", "billing"); strings.Count(out, strings.Repeat("h", 1<<20)) != 2 {
		t.Errorf("runs --json does not keep the whole holder of both rows (%d bytes)", len(out))
	}
}
