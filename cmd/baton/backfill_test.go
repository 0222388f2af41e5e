package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// backfill --plan writes nothing; without it each period of the range gets
// one pending manual run of its own key, a done one is kept, and a second
// backfill of the same range adds nothing. Bad ranges are usage errors; an
// unknown job says what every command says.
func TestBackfill(t *testing.T) {
	e, out, errb, ms := shared()
	ctx := context.Background()
	if _, err := ms.EnsureJob(ctx, store.Job{Name: "daily", Schedule: `cron "0 2 * * *" in UTC; catch-up all, max 100`}); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.SwapRun(ctx, store.RunSwap{Run: row("daily", "2026-03-02T02:00:00Z", store.Done)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.SwapRun(ctx, store.RunSwap{Run: row("daily", "2026-03-03T02:00:00Z", store.Failed)}); err != nil {
		t.Fatal(err)
	}
	do := func(args ...string) result {
		o, eb := len(out.String()), len(errb.String())
		code := e.run(ctx, append([]string{"backfill", "--store", "mem:"}, args...))
		return result{code, out.String()[o:], errb.String()[eb:]}
	}
	rows := func() []store.Run {
		rs, err := ms.Runs(ctx, "daily", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	rng := []string{"--from", "2026-03-01T00:00:00Z", "--to", "2026-03-04T23:00:00Z"}

	before := rows()
	r := do(append(rng, "--plan", "daily")...)
	if r.code != 0 || !strings.Contains(r.stdout, "2026-03-01T02:00:00Z  add    -") || !strings.Contains(r.stdout, "2026-03-02T02:00:00Z  keep   done") ||
		!strings.Contains(r.stdout, "2026-03-03T02:00:00Z  rerun  failed") || !strings.Contains(r.stdout, "4 periods: 2 added, 1 re-run, 1 kept; --plan: nothing written") {
		t.Errorf("backfill --plan:\n%s", r)
	}
	if after := rows(); !reflect.DeepEqual(before, after) {
		t.Fatalf("--plan wrote: %+v", after)
	}

	r = do(append(rng, "--json", "daily")...)
	var v struct{ Added, Rerun, Kept int }
	if err := json.Unmarshal([]byte(r.stdout), &v); r.code != 0 || err != nil || v.Added != 2 || v.Rerun != 1 || v.Kept != 1 {
		t.Errorf("backfill: %+v %v\n%s", v, err, r)
	}
	for _, row := range rows() {
		if row.Period == "2026-03-02T02:00:00Z" {
			if row.State != store.Done {
				t.Errorf("a done period was touched: %+v", row)
			}
			continue
		}
		if row.State != store.Pending || !row.Manual {
			t.Errorf("backfilled row %+v, want a pending manual run of its key", row)
		}
	}
	once := rows()
	if r := do(append(rng, "daily")...); r.code != 0 || !strings.Contains(r.stdout, "0 added, 0 re-run, 4 kept; nothing written") {
		t.Errorf("second backfill:\n%s", r)
	}
	if again := rows(); !reflect.DeepEqual(once, again) {
		t.Errorf("a second backfill changed the ledger: %+v", again)
	}

	for _, args := range [][]string{
		{"daily"},
		{"--from", "2026-03-01T00:00:00Z", "daily"},
		{"--from", "yesterday", "--to", "2026-03-01T00:00:00Z", "daily"},
		{"--from", "2026-03-02T00:00:00Z", "--to", "2026-03-01T00:00:00Z", "daily"},
		{"--from", "2026-03-01T00:00:00Z", "--to", "2999-01-01T00:00:00Z", "daily"},
		{"--from", "2026-01-01T00:00:00Z", "--to", "2026-03-01T00:00:00Z", "--max", "10", "daily"},
		{"--from", "2026-03-01T00:00:00Z", "--to", "2026-03-01T00:00:00Z", "--max", "0", "daily"},
	} {
		if r := do(args...); r.code != exitUsage || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("backfill %v: want one line and exit 2:\n%s", args, r)
		}
	}
	if r := do(append(rng, "nosuch")...); r.code != exitFailure || !strings.Contains(r.stderr, "nosuch: no election record, job or run of that name in this store") {
		t.Errorf("backfill of an unknown job:\n%s", r)
	}
	untouched(t, ms, "nosuch")
}

// row is a finished ledger row of job's period key.
func row(job, key string, state store.RunState) store.Run {
	at, err := time.Parse(time.RFC3339, key)
	if err != nil {
		panic(err)
	}
	return store.Run{Job: job, Period: key, Scheduled: at, State: state, Token: 1, Holder: "n1", Attempt: 1,
		Started: at, Finished: at.Add(time.Second)}
}

// next shows a stored job's jitter: the delay every node gives each period.
func TestNextShowsJitter(t *testing.T) {
	e, out, _, ms := shared()
	ctx := context.Background()
	if _, err := ms.EnsureJob(ctx, store.Job{Name: "jit", Schedule: "every 1m0s; catch-up all, max 100, jitter 30s"}); err != nil {
		t.Fatal(err)
	}
	if code := e.run(ctx, []string{"next", "--store", "mem:", "--json", "--count", "3", "--from", "2026-03-01T00:00:30Z", "jit"}); code != 0 {
		t.Fatalf("next: exit %d", code)
	}
	var v struct {
		Instants []struct {
			Period        string  `json:"period"`
			JitterSeconds float64 `json:"jitter_seconds"`
		} `json:"instants"`
	}
	if err := json.Unmarshal([]byte(out.String()), &v); err != nil || len(v.Instants) != 3 {
		t.Fatalf("next --json: %v\n%s", err, out)
	}
	for _, in := range v.Instants {
		if want := schedule.JitterOf("jit", in.Period, 30*time.Second).Seconds(); in.JitterSeconds != want || want == 0 {
			t.Errorf("%s: jitter %v, want %v", in.Period, in.JitterSeconds, want)
		}
	}
}

// A job stored by a baton without the catch-up cap: a node with the new
// default refuses, says which flag keeps the stored policy, and starts
// with it.
func TestRunStoredWithoutCap(t *testing.T) {
	e, _, errb, ms := shared()
	ctx := context.Background()
	if _, err := ms.EnsureJob(ctx, store.Job{Name: "old", Schedule: "every 10s; catch-up all"}); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--store", "mem:", "--every", "10s", "old", "--", "true"}
	code := e.run(ctx, args)
	checkOneLine(t, args, code, errb.String(), "give --catch-up-max 0 to keep it")
	if j, _ := ms.GetJob(ctx, "old"); j.Schedule != "every 10s; catch-up all" {
		t.Errorf("the stored schedule changed: %q", j.Schedule)
	}
}
