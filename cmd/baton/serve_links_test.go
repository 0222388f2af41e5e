package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton/internal/browsertest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// clickThrough checks the page's links in Chromium by clicking them, as a
// reader does, on the page at base listing limit names a page: the name
// in the table's second row (the detail must be that name's), the next
// page link (the table must show names[limit:2*limit], names being every
// name in order) and then the count of state in the summary (the table
// must show inState, the first page of the names in state, each shown in
// it).
func clickThrough(t *testing.T, ctx context.Context, base string, limit int, names []string, state string, inState []string) {
	t.Helper()
	rows := func() []string {
		return eval[[]string](t, ctx, `[...document.querySelectorAll('table.names tbody tr')].map(r => r.dataset.name)`)
	}
	// click clicks the first element matching sel and waits until the
	// detail shows name and the address bar's parameter key is want.
	click := func(sel, name, key, want string) {
		t.Helper()
		href := eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%q).getAttribute("href")`, sel))
		before := eval[string](t, ctx, `location.search`)
		cond := fmt.Sprintf(`document.querySelector("section.job")?.dataset.name === %q && new URLSearchParams(location.search).get(%q) === %q`, name, key, want)
		var err error
		deadline := time.Now().Add(30 * time.Second)
		for try := 1; time.Now().Before(deadline); try++ {
			// The page's refresh (every second) replaces the table and
			// the pager: a node found just before it is gone when
			// clicked ("Could not find node"), and one replaced between
			// the mouse's press and release gets no click at all, so
			// the page stays where it was. Either way, click again.
			if err = chromedp.Do(ctx, chromedp.Click(sel)); err != nil && !strings.Contains(err.Error(), "Could not find node with given id") {
				t.Fatalf("clicking %s (href %q): %v", sel, href, err)
			}
			// The click navigates: an evaluation meanwhile may find no
			// page to run in, so poll from here until the new page
			// shows, or the old one is still there after 3s.
			for again := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				var ok bool
				if ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](cond)); err == nil && ok {
					if try > 1 {
						t.Logf("clicking %s took %d clicks (the page's refresh replaced it under the mouse)", sel, try)
					}
					return
				}
				if time.Now().After(again) {
					if at, e := chromedp.Run(ctx, chromedp.Evaluate[string](`location.search`)); e == nil && at == before {
						break
					}
				}
			}
		}
		got := eval[string](t, ctx, `location.search + " shows " + document.querySelector("section.job")?.dataset.name`)
		t.Fatalf("after clicking %s (href %q): the page is %s; want %s=%s showing %s (%v)", sel, href, got, key, want, name, err)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/?limit=%d", base, limit)), chromedp.WaitVisible(`table.names tbody tr`)); err != nil {
		t.Fatal(err)
	}
	if got := rows(); !slices.Equal(got, names[:limit]) {
		t.Fatalf("first page: %q; want %q", got, names[:limit])
	}
	// A name: its detail, on the same page of the table.
	click(`table.names tbody tr:nth-child(2) td a`, names[1], "name", names[1])
	if h := text(t, ctx, `section.job h2`); h != names[1] {
		t.Errorf("the detail's heading is %q; want %q", h, names[1])
	}
	if sel := text(t, ctx, `table.names tr.selected td a`); sel != names[1] {
		t.Errorf("the table marks %q selected; want %q", sel, names[1])
	}
	if got := rows(); !slices.Equal(got, names[:limit]) {
		t.Errorf("after clicking a name the table shows %q; want the same page %q", got, names[:limit])
	}
	// The next page, with the same page size; its first name is shown.
	next := names[limit:min(2*limit, len(names))]
	click(`nav.pager a.next`, next[0], "cursor", names[limit-1])
	if got := rows(); !slices.Equal(got, next) {
		t.Errorf("the next page shows %q; want %q", got, next)
	}
	// A state's count: only the names in that state.
	click(fmt.Sprintf(`section.summary a.count[data-state=%q]`, state), inState[0], "state", state)
	if got := rows(); !slices.Equal(got, inState) {
		t.Errorf("the names %s: %q; want %q", state, got, inState)
	}
	states := eval[[]string](t, ctx, `[...document.querySelectorAll('table.names tbody tr td.state')].map(td => td.textContent)`)
	for _, s := range states {
		if s != state {
			t.Errorf("the names %s include one %s: %q", state, s, states)
			break
		}
	}
}

// The status page's links in Chromium over a store of three names: a
// name, the next page and a state each show what they name.
func TestServePageLinksInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	t.Parallel() // its own store, server and browser
	st := memstore.New()
	for _, r := range []store.Record{
		{Name: "alpha", Holder: "node-a", Incarnation: "1", Token: 1, Lease: time.Hour},
		{Name: "beta", Holder: "node-b", Incarnation: "1", Token: 1, Lease: time.Hour},
		{Name: "gamma", Holder: "node-a", Incarnation: "1", Token: 1, Lease: time.Hour},
	} {
		if _, err := st.Swap(t.Context(), store.Swap{Event: store.Acquired, Record: r}); err != nil {
			t.Fatal(err)
		}
	}
	// beta is released: free.
	cur, err := st.Get(t.Context(), "beta")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Swap(t.Context(), store.Swap{Expect: cur.Version, Event: store.Released, Record: store.Record{Name: "beta", Token: 1}}); err != nil {
		t.Fatal(err)
	}
	s, err := newServer(st, "mem:", nil, time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.routes())
	t.Cleanup(hs.Close)
	ctx := browsertest.New(t, 60*time.Second)
	clickThrough(t, ctx, hs.URL, 2, []string{"alpha", "beta", "gamma"}, "free", []string{"beta"})
}
