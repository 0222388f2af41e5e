package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

// damagedPeriod is the period of the planted row of damagedStore.
const damagedPeriod = "2026-01-02T00:00:00Z"

// damagedStore makes an SQLite store in dir with job billing (held by n1
// with token 1, then released; a done period and a pending one) and plants the state
// "weird" in the pending row, below the store API; it returns the URL.
func damagedStore(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(dir, "baton.db")
	url := "sqlite:" + path
	st, err := storeurl.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Minute}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, state := range []store.RunState{store.Done, store.Pending} {
		at := day.Add(time.Duration(i) * 24 * time.Hour)
		if _, err := st.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "billing", Period: at.Format(time.RFC3339), Scheduled: at, State: state, Token: 1, Holder: "n1", Attempt: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Swap(ctx, store.Swap{Expect: rec.Version, Record: store.Record{Name: "billing", Token: 1, Lease: time.Minute}, Event: store.Released}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE baton_runs SET state = 'weird' WHERE job = 'billing' AND period = ?`, damagedPeriod); err != nil {
		t.Fatal(err)
	}
	return url
}

// wantDamaged fails unless msg names the damaged row, says it is damaged
// and gives the fix, on one line.
func wantDamaged(t *testing.T, what, msg string) {
	t.Helper()
	for _, w := range []string{`"billing"`, damagedPeriod, `"weird"`, "damaged", "fix: "} {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: %q lacks %q", what, msg, w)
		}
	}
	if n := strings.Count(strings.TrimSuffix(msg, "\n"), "\n"); n > 0 {
		t.Errorf("%s: %d lines, want one:\n%s", what, n+1, msg)
	}
}

// A ledger row in a state no baton writes (planted in SQLite below the
// store API) is an error with one line naming the row, that it is
// damaged, and the fix, in every command that reads it: status, runs,
// verify (which would otherwise judge it "at most once", hiding a lost
// period), serve's API and page, and run, whose scheduler never runs the
// period again: the row is unchanged after it.
func TestDamagedLedgerRow(t *testing.T) {
	url := damagedStore(t, t.TempDir())
	for _, args := range [][]string{
		{"status", "billing"},
		{"status", "--json", "billing"},
		{"runs", "billing"},
		{"verify", "billing"},
		{"verify", "--json", "billing"},
	} {
		code, out, stderr := runBaton(t, append(args, "--store", url)...)
		if code != exitFailure {
			t.Errorf("%v: exit %d, want %d\n%s%s", args, code, exitFailure, out, stderr)
		}
		wantDamaged(t, strings.Join(args, " "), stderr)
	}

	ctx := context.Background()
	st, err := storeurl.OpenReadOnly(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := newServer(st, url, []string{"billing"}, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.routes())
	defer hs.Close()
	for _, path := range []string{"/api/jobs/billing", "/", "/fragment"} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if path == "/api/jobs/billing" {
			var v struct{ Error string }
			if err := json.Unmarshal(body, &v); err != nil || resp.StatusCode == http.StatusOK {
				t.Errorf("serve %s: %d %s, want an error", path, resp.StatusCode, body)
			}
			wantDamaged(t, "serve "+path, v.Error)
			continue
		}
		if !strings.Contains(string(body), damagedPeriod) || !strings.Contains(string(body), "the row is damaged; fix: ") {
			t.Errorf("serve %s: %d without naming the damaged row:\n%s", path, resp.StatusCode, body)
		}
	}

	// Bounded: a run that does not refuse the row goes on working.
	runCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var outb, errb syncBuffer
	code := run(runCtx, []string{"run", "--store", url, "--node", "n2", "--lease", "2s", "--every", "24h", "billing", "--", "true"}, &outb, &errb)
	out, stderr := outb.String(), errb.String()
	if code != exitFailure || runCtx.Err() != nil {
		t.Errorf("run: exit %d (%v), want %d at once\n%s%s", code, runCtx.Err(), exitFailure, out, stderr)
	}
	last := stderr[max(strings.LastIndex(stderr, "baton run: "), 0):]
	wantDamaged(t, "run", last)
	db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(url, "sqlite:")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var state string
	var attempt int
	if err := db.QueryRow(`SELECT state, attempt FROM baton_runs WHERE job = 'billing' AND period = ?`, damagedPeriod).Scan(&state, &attempt); err != nil || state != "weird" || attempt != 1 {
		t.Errorf("the damaged row after run: state %q attempt %d (%v), want it untouched", state, attempt, err)
	}
}
