package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/browsertest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// servedStore starts 'baton serve's handler over a fresh in-memory store
// and returns the store and the server's URL.
func servedStore(t *testing.T, adminToken string, refresh time.Duration) (*memstore.Store, string) {
	t.Helper()
	st := memstore.New()
	s, err := newServer(st, "mem:", nil, refresh, adminToken)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.routes())
	t.Cleanup(hs.Close)
	return st, hs.URL
}

// elect makes node campaign for name on st with a short real-time lease
// and returns its term.
func elect(t *testing.T, st *memstore.Store, name, node string) (*baton.Elector, <-chan *baton.Term) {
	t.Helper()
	el, err := baton.New(st.Client(node), name, baton.WithNode(node), baton.WithLease(2*time.Second),
		baton.WithPoll(50*time.Millisecond), baton.WithClockMargin(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { el.Close(context.Background()) })
	ch := make(chan *baton.Term, 1)
	go func() {
		term, err := el.Campaign(context.Background())
		if err == nil {
			ch <- term
		}
		close(ch)
	}()
	return el, ch
}

// The status page in headless Chromium shows the holder, the token, the
// ledger and the election timeline; after a handover it shows the new
// holder without a reload; an admin action without the token is refused.
func TestServePageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	t.Parallel() // its own store, server and browser
	ctx := browsertest.New(t, 60*time.Second)
	st, url := servedStore(t, "s3cret", 200*time.Millisecond)

	_, wonA := elect(t, st, "billing", "node-a")
	termA := <-wonA
	_, wonB := elect(t, st, "billing", "node-b")
	// billing is a job registered with its schedule, as 'baton run' does.
	every, err := schedule.Every(time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := schedule.New(st, schedule.Job{Name: "billing", Schedule: every}, func(context.Context, schedule.Period, uint64) (int, string, error) { return 0, "", nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A ledger with a done and a manual pending row.
	p := schedule.Key(time.Now().Add(-time.Minute))
	if _, err := st.SwapRun(t.Context(), store.RunSwap{Run: store.Run{Job: "billing", Period: p, Scheduled: time.Now().Add(-time.Minute),
		State: store.Done, Token: termA.Token(), Holder: "node-a", Attempt: 1, Started: time.Now().Add(-50 * time.Second),
		Finished: time.Now().Add(-49 * time.Second)}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := schedule.Trigger(t.Context(), st, "billing", schedule.Key(time.Now())); err != nil {
		t.Fatal(err)
	}

	const job = `section.job[data-name="billing"] `
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(job+`dd.holder`)); err != nil {
		t.Fatal(err)
	}
	// The ledger's rows may come with a refresh after the first paint (a
	// loaded machine): wait for both before reading the page.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(t => !!t && t.includes("done") && t.includes("pending"))(document.querySelector('`+job+`table.ledger')?.textContent)`)); err != nil {
		t.Fatalf("the ledger never showed its done and pending rows: %v", err)
	}
	holder, token, ledger := text(t, ctx, job+`dd.holder`), text(t, ctx, job+`dd.token`), text(t, ctx, job+`table.ledger`)
	if sched, next := text(t, ctx, job+`dd.schedule`), text(t, ctx, job+`dd.next`); !strings.Contains(sched, "1h") || next == "-" {
		t.Errorf("page shows schedule %q, next due %q", sched, next)
	}
	rows := eval[int](t, ctx, `document.querySelectorAll('`+job+`svg.timeline g.row').length`)
	eval[bool](t, ctx, `window.notReloaded = true`) // a marker that a reload would wipe
	if holder != "node-a" || token != "1" || rows != 1 || !strings.Contains(ledger, "done") || !strings.Contains(ledger, "pending") {
		t.Fatalf("page shows holder %q token %q, %d timeline rows, ledger:\n%s", holder, token, rows, ledger)
	}
	// node-b waits: a candidate, shown once the page has refreshed.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('`+job+`dd.candidates')?.textContent.includes("node-b")`)); err != nil {
		t.Fatalf("node-b never shown as a candidate: %v", err)
	}
	shot := browsertest.Screenshot(t, ctx, "")
	if img, err := png.Decode(bytes.NewReader(shot)); err != nil || img.Bounds().Dx() < 800 {
		t.Fatalf("screenshot: %v", err)
	}

	// Handover: node-a resigns, node-b takes over; the page follows.
	if err := termA.Resign(t.Context()); err != nil {
		t.Fatal(err)
	}
	termB := <-wonB
	if termB == nil || termB.Token() != 2 {
		t.Fatalf("node-b did not take over: %v", termB)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(job+`dd.holder[data-holder="node-b"]`)); err != nil {
		t.Fatal(err)
	}
	token = text(t, ctx, job+`dd.token`)
	rows = eval[int](t, ctx, `document.querySelectorAll('`+job+`svg.timeline g.row').length`)
	notReloaded := eval[bool](t, ctx, `window.notReloaded === true`)
	if token != "2" || rows != 2 || !notReloaded {
		t.Fatalf("after the handover: token %q, %d timeline rows, not reloaded %v", token, rows, notReloaded)
	}
	// node-b runs a period under its token; once its renewals have drawn
	// its bar, the page is the README's picture.
	due := time.Now().Add(-30 * time.Second) // a period of its own: the manual trigger has the current second
	if _, err := st.SwapRun(t.Context(), store.RunSwap{Run: store.Run{Job: "billing", Period: schedule.Key(due), Scheduled: due,
		State: store.Done, Token: termB.Token(), Holder: "node-b", Attempt: 1, Started: due.Add(120 * time.Millisecond),
		Finished: due.Add(900 * time.Millisecond)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('`+job+`g.row[data-row="node-b"] rect.bar.held')?.width.baseVal.value > 150`)); err != nil {
		t.Fatalf("node-b's term never grew on the timeline: %v", err)
	}
	browsertest.Screenshot(t, ctx, "serve.png")

	// An action from the page without the admin token is refused.
	status := eval[int](t, ctx, `fetch("/api/jobs/billing/resign", {method: "POST"}).then(r => r.status)`, chromedp.EvalAwaitPromise)
	if status != http.StatusForbidden {
		t.Fatalf("POST resign without the admin token from the page: %d, want 403", status)
	}
	if rec, _ := st.Get(t.Context(), "billing"); rec.Transfer != "" {
		t.Fatalf("a refused action wrote the record: %+v", rec)
	}
}

// The JSON API: the list and one job, and the actions' guard.
func TestServeAPI(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own store and server
	st, url := servedStore(t, "s3cret", time.Second)
	_, won := elect(t, st, "billing", "node-a")
	term := <-won

	var page jobPage
	getJSON(t, url+"/api/jobs", http.StatusOK, &page)
	if list := page.Jobs; len(list) != 1 || list[0].Name != "billing" || list[0].Holder != "node-a" || list[0].Token != term.Token() ||
		list[0].State.State != "held" || page.Next != "" {
		t.Fatalf("GET /api/jobs: %+v", page)
	}
	var d jobDetail
	getJSON(t, url+"/api/jobs/billing", http.StatusOK, &d)
	if len(d.History) != 1 || d.History[0].Kind != string(store.Acquired) || d.Runs == nil {
		t.Fatalf("GET /api/jobs/billing: %+v", d)
	}
	getJSON(t, url+"/api/jobs/nope", http.StatusNotFound, nil)

	post := func(path, token string) int {
		req, _ := http.NewRequest(http.MethodPost, url+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/api/jobs/billing/resign", "", http.StatusForbidden},
		{"/api/jobs/billing/resign", "wrong", http.StatusForbidden},
		{"/api/jobs/billing/transfer?to=x", "s3cret-but-longer", http.StatusForbidden},
		{"/api/jobs/billing/trigger", "", http.StatusForbidden},
		{"/api/jobs/billing/transfer", "s3cret", http.StatusBadRequest},
		{"/api/jobs/billing/resign?token=99", "s3cret", http.StatusConflict},
		{"/api/jobs/billing/transfer?to=ghost", "s3cret", http.StatusConflict}, // not campaigning
		{"/api/jobs/nope/trigger", "s3cret", http.StatusNotFound},              // an unknown job
		{"/api/jobs/billing/trigger", "s3cret", http.StatusNotFound},           // not a scheduled job yet
		{"register", "", 0},
		{"/api/jobs/billing/trigger?period=2026-01-02T03:04:05Z", "s3cret", http.StatusOK},
		{"/api/jobs/billing/resign", "s3cret", http.StatusOK},
	} {
		if tc.path == "register" {
			if _, err := st.EnsureJob(context.Background(), store.Job{Name: "billing", Schedule: "every 1m0s; catch-up all"}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got := post(tc.path, tc.token); got != tc.want {
			t.Errorf("POST %s with token %q: %d, want %d", tc.path, tc.token, got, tc.want)
		}
	}
	select {
	case <-term.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the leader did not resign after the admin's request")
	}
	if r, err := st.GetRun(t.Context(), "billing", "2026-01-02T03:04:05Z"); err != nil || r.State != store.Pending || !r.Manual {
		t.Fatalf("triggered row: %+v, %v", r, err)
	}

	// Without --admin-token every action is refused.
	_, url2 := servedStore(t, "", time.Second)
	if got := post("/api/jobs/billing/resign", ""); got != http.StatusForbidden {
		t.Fatalf("sanity: %d", got)
	}
	req, _ := http.NewRequest(http.MethodPost, url2+"/api/jobs/billing/trigger", nil)
	req.Header.Set("Authorization", "Bearer ")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("action on a server without an admin token: %d, want 403", resp.StatusCode)
	}
}

// text returns the text of the first element matching sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	// One evaluation in the page reads the element's text in one turn of
	// its event loop, so a refresh cannot replace the element between
	// finding it and reading it (chromedp.Text takes two round trips).
	// The predicate is an array (truthy even for an empty text), so the
	// poll waits only for the element to exist.
	expr := fmt.Sprintf(`(e => e ? [e.innerText] : null)(document.querySelector(%q))`, sel)
	v, err := chromedp.Run(ctx, chromedp.Poll[[]string](expr, chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || len(v) != 1 {
		t.Fatalf("text of %s: %v (%q)", sel, err, v)
	}
	return v[0]
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

func getJSON(t *testing.T, url string, want int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %d, want %d", url, resp.StatusCode, want)
	}
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
}

// serve refuses a non-loopback address unless --allow-remote is given.
func TestServeListen(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		allow bool
		ok    bool
	}{
		{"127.0.0.1:0", false, true},
		{"[::1]:0", false, true},
		{"localhost:0", false, true},
		{"0.0.0.0:7070", false, false},
		{":7070", false, false},
		{"192.0.2.1:7070", false, false},
		{"example.com:7070", false, false},
		{"0.0.0.0:7070", true, true},
		{"nope", false, false},
	} {
		if err := checkListen(tc.addr, tc.allow); (err == nil) != tc.ok {
			t.Errorf("checkListen(%q, allow %v) = %v", tc.addr, tc.allow, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, "--allow-remote"},
		{[]string{"--admin-token-file", filepath.Join(t.TempDir(), "missing")}, "cannot read the admin token"},
		{[]string{"--refresh", "1ms"}, "--refresh"},
	} {
		var out, errb strings.Builder
		code := run(t.Context(), append([]string{"serve", "--store", "mem:"}, tc.args...), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), tc.want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("serve %q: exit %d, stderr %q", tc.args, code, errb.String())
		}
	}
}

// GET /api/jobs pages and filters; GET /api/summary counts by state; bad
// parameters are 400 with the reason.
func TestServeAPIPages(t *testing.T) {
	st, url := servedStore(t, "", time.Second)
	ctx := t.Context()
	sess := store.SessionPrefix + "g/1/1"
	if _, err := st.Swap(ctx, store.Swap{Record: store.Record{Name: sess, Holder: "g", Incarnation: "1", Lease: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	for i := range 250 {
		r := store.Record{Name: fmt.Sprintf("shard-%03d", i), Token: 1}
		if i < 200 {
			r.Holder, r.Incarnation, r.Session, r.Lease = "g", "1", sess, time.Hour
		}
		if _, err := st.Swap(ctx, store.Swap{Record: r, Event: store.Acquired}); err != nil {
			t.Fatal(err)
		}
	}
	all := func(query string) (names []string, pages int) {
		t.Helper()
		cursor := ""
		for {
			var p jobPage
			getJSON(t, url+"/api/jobs?"+query+"&cursor="+cursor, http.StatusOK, &p)
			for _, j := range p.Jobs {
				names = append(names, j.Name)
			}
			pages++
			if p.Next == "" {
				return names, pages
			}
			cursor = p.Next
		}
	}
	if names, pages := all("limit=100"); len(names) != 250 || pages != 3 || names[0] != "shard-000" || names[249] != "shard-249" {
		t.Fatalf("pages of 100: %d names in %d pages", len(names), pages)
	}
	for query, want := range map[string]int{
		"limit=30&state=free":               50,
		"limit=1000&state=held":             200,
		"limit=7&holder=g":                  200,
		"limit=50&prefix=shard-24":          10,
		"limit=50&session=" + sess:          200,
		"limit=50&state=probably-dead":      0,
		"limit=5&prefix=shard-1&state=held": 100,
	} {
		if names, _ := all(query); len(names) != want {
			t.Errorf("%s: %d names; want %d", query, len(names), want)
		}
	}
	for _, bad := range []string{"limit=0", "limit=1001", "limit=x", "state=asleep"} {
		resp, err := http.Get(url + "/api/jobs?" + bad)
		if err != nil {
			t.Fatal(err)
		}
		var e map[string]string
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e["error"], "invalid") {
			t.Errorf("GET /api/jobs?%s: %d %v; want 400 naming the parameter", bad, resp.StatusCode, e)
		}
		// The range a bad limit's error states is the one accepted here:
		// 0 is refused, so it must not be offered.
		if strings.HasPrefix(bad, "limit=") && (!strings.Contains(e["error"], "want 1 to 1000, or leave limit out for pages of 100") || strings.Contains(e["error"], "0:")) {
			t.Errorf("GET /api/jobs?%s: %q; want the range accepted (1 to 1000) and the fix", bad, e["error"])
		}
	}
	var sum struct {
		Names   int            `json:"names"`
		States  map[string]int `json:"states"`
		Holders []struct {
			Holder string `json:"holder"`
			Names  int    `json:"names"`
			State  string `json:"state"`
		} `json:"holders"`
	}
	getJSON(t, url+"/api/summary", http.StatusOK, &sum)
	if sum.Names != 250 || sum.States["held"] != 200 || sum.States["free"] != 50 || len(sum.Holders) != 1 || sum.Holders[0].Names != 200 {
		t.Fatalf("GET /api/summary: %+v", sum)
	}
	// The page itself: the summary, a page of the table, one detail.
	code, body := get(t, url+"/?state=held&limit=20")
	if code != http.StatusOK || strings.Count(body, `<tr class="held`) != 20 || !strings.Contains(body, `class="next"`) ||
		!strings.Contains(body, `<section class="job" data-name="shard-000">`) {
		t.Fatalf("GET /?state=held&limit=20: %d\n%s", code, body)
	}
}

// The page shows each candidate's attributes, a damaged row's escaped and
// marked, and the job's preference: its policy, the leader's attributes
// and why the leader is (or is not) the preferred one.
func TestServePageShowsPreference(t *testing.T) {
	t.Parallel()
	ms, url := servedStore(t, "", time.Second)
	ctx := context.Background()
	if _, err := ms.EnsureJob(ctx, store.Job{Name: "pj", Schedule: "every 1s; catch-up all, max 100", Prefer: "highest-weight"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "pj", Holder: "w1", Incarnation: "i1", Token: 1, Lease: time.Minute}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []store.Candidate{
		{Name: "pj", Node: "w1", Incarnation: "i1", Every: time.Second, Attrs: "version=1.4 weight=1 zone=eu-1"},
		{Name: "pj", Node: "w10", Incarnation: "i10", Every: time.Second, Attrs: "version=1.5 weight=10"},
		{Name: "pj", Node: "bad", Incarnation: "ib", Every: time.Second, Attrs: `weight=<script>alert(1)</script>`},
	} {
		if err := ms.Heartbeat(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	code, body := get(t, url+"/fragment?name=pj")
	if code != http.StatusOK {
		t.Fatalf("GET /fragment?name=pj: %d\n%s", code, body)
	}
	for _, want := range []string{
		`<span class="attrs">(version=1.5 weight=10)</span>`,
		`<span class="attrs damaged" title="attributes refused: `,
		`(weight=&lt;script&gt;alert(1)&lt;/script&gt;)`,
		`<dd class="preference" data-policy="highest-weight" data-leader-preferred="false">`,
		`the leader says <span class="attrs">version=1.4 weight=1 zone=eu-1</span>`,
		`w10 (version=1.5 weight=10) is preferred by highest-weight to the leader w1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the job's detail lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script>") {
		t.Errorf("a candidate's attributes reached the page unescaped:\n%s", body)
	}
}
