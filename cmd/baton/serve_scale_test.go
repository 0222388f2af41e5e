package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"

	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton/internal/browsertest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

// fillHeld writes n names held through one live session into st, in
// batches, as a Group holding them leaves them.
func fillHeld(t *testing.T, st store.Store, n int) {
	t.Helper()
	sess := store.SessionPrefix + "bench/1/1"
	if _, err := st.Swap(t.Context(), store.Swap{Record: store.Record{Name: sess, Holder: "bench", Incarnation: "1", Lease: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < n; lo += 1000 {
		var swaps []store.Swap
		for i := lo; i < min(lo+1000, n); i++ {
			swaps = append(swaps, store.Swap{Event: store.Acquired, Record: store.Record{Name: fmt.Sprintf("bench-%06d", i+1),
				Holder: "bench", Incarnation: "1", Token: 1, Lease: time.Hour, Session: sess}})
		}
		res, err := st.SwapMany(t.Context(), swaps)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
}

// The page over 100,000 held names (20,000 outside CI) renders in headless Chromium within
// seconds and shows them all held; its refresh, the API's page and the
// summary each read a page or one grouped query, not every name; a name,
// the next page and the held count, clicked, show what they name. (The
// acceptance figure, 2 s, is measured in BENCHMARKS.md; the test allows
// a loaded machine more.) With $BATON_SERVE_URL it measures that running
// 'baton serve' instead (BENCHMARKS.md: over 'baton bench hold --names
// 100000'), which must show $BATON_SERVE_NAMES (default 100000) held.
func TestServePageAtScaleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 names and starts a browser")
	}
	testenv.ParallelUnlessLong(t)
	// 100,000 names in CI (testenv.Long); 20,000 in a developer's go test,
	// where writing them took more CPU than any other test of the
	// package. A page whose work grew with the names fails either way.
	n := 100000
	if !testenv.Long() {
		n = 20000
	}
	// serve starts the page over a new SQLite store of k held names.
	serve := func(k int) string {
		st, err := storeurl.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), fmt.Sprintf("b%d.db", k)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		began := time.Now()
		fillHeld(t, st, k)
		t.Logf("wrote %d names in %v", k, time.Since(began).Round(time.Millisecond))
		s, err := newServer(st, "sqlite", nil, time.Second, "")
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.routes())
		t.Cleanup(hs.Close)
		return hs.URL
	}
	// The 100,000 names are written before the browser's time limit
	// starts: under the race detector, beside other packages' tests, the
	// writes alone took 105 s in CI.
	var big string
	if os.Getenv("BATON_SERVE_URL") == "" {
		big = serve(n)
	}
	ctx := browsertest.New(t, 120*time.Second)
	// render loads the page at url and returns how long it took to show
	// its summary and its table.
	render := func(url string) time.Duration {
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(`section.summary a.count[data-state="held"]`),
			chromedp.WaitVisible(`table.names tbody tr`)); err != nil {
			t.Fatal(err)
		}
		return time.Since(began)
	}
	// The bound on the render: 10 s, plus five times what the same page
	// of 100 names takes in the same browser just before (on a machine
	// loaded by other tests both grow; a page whose work grew with the
	// names would take minutes). Not checked under the race detector.
	limit := 10 * time.Second
	base := os.Getenv("BATON_SERVE_URL")
	if base == "" {
		small := render(serve(100))
		limit += 5 * small
		t.Logf("the page of 100 names rendered in %v: limit %v", small.Round(time.Millisecond), limit.Round(time.Millisecond))
		base = big
	} else if v := os.Getenv("BATON_SERVE_NAMES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("BATON_SERVE_NAMES=%q: %v", v, err)
		}
	}
	took := render(base)
	held := text(t, ctx, `section.summary a.count[data-state="held"] b`)
	total := eval[string](t, ctx, `document.querySelector('section.summary').dataset.names`)
	rows := eval[int](t, ctx, `document.querySelectorAll('table.names tbody tr').length`)
	t.Logf("page of %d names rendered in Chromium in %v: %s held, %d rows", n, took.Round(time.Millisecond), held, rows)
	if held != fmt.Sprint(n) || total != fmt.Sprint(n) || rows != 100 {
		t.Fatalf("the page shows %s held of %s names, %d rows; want %d, %d, 100", held, total, rows, n, n)
	}
	switch {
	case took > limit && raceEnabled:
		// The race detector slows the server's code many times over (the
		// 100,000 names take 30-40 times as long to write): the bound
		// would measure the detector. The page's shape is checked above.
		t.Logf("the page took %v to render, more than %v: not a failure under the race detector", took, limit.Round(time.Millisecond))
	case took > limit:
		t.Errorf("the page took %v to render, more than %v", took, limit.Round(time.Millisecond))
	}
	if os.Getenv("BATON_SERVE_URL") == "" {
		browsertest.Screenshot(t, ctx, "serve-100k.png")
		// Its links, clicked: a name, the next page, the held names.
		var first []string
		for i := 1; i <= 200; i++ {
			first = append(first, fmt.Sprintf("bench-%06d", i))
		}
		clickThrough(t, ctx, base, 100, first, "held", first[:100])
	}

	for _, path := range []string{"/fragment", "/api/jobs?limit=100", "/api/summary", "/api/jobs?limit=100&state=held&prefix=bench-09"} {
		start := time.Now()
		code, body := get(t, base+path)
		t.Logf("GET %s: %d, %d bytes in %v", path, code, len(body), time.Since(start).Round(time.Microsecond))
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		if len(body) > 500_000 {
			t.Errorf("GET %s: %d bytes for one page", path, len(body))
		}
	}
}
