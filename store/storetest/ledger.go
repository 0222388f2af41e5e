package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

func testEnsureJob(t *testing.T, open func() store.Store) {
	s := open()
	j1, err := s.EnsureJob(ctx(t), store.Job{Name: "billing", Schedule: "every 24h"})
	if err != nil {
		t.Fatal(err)
	}
	if j1.Created.IsZero() || j1.Schedule != "every 24h" {
		t.Fatalf("EnsureJob = %+v", j1)
	}
	j2, err := open().EnsureJob(ctx(t), store.Job{Name: "billing", Schedule: "every 1h"})
	if err != nil {
		t.Fatal(err)
	}
	if !j2.Created.Equal(j1.Created) || j2.Schedule != "every 24h" {
		t.Fatalf("second EnsureJob = %+v, want the first registration %+v", j2, j1)
	}
	if _, err := s.GetJob(ctx(t), "other"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetJob of a missing job: %v, want ErrNotFound", err)
	}
	j3, err := open().GetJob(ctx(t), "billing")
	if err != nil || j3.Name != "billing" || !j3.Created.Equal(j1.Created) || j3.Schedule != "every 24h" {
		t.Fatalf("GetJob = %+v, %v; want %+v", j3, err, j1)
	}
}

const p1 = "2026-11-29T00:00:00Z"

func testRunLedger(t *testing.T, open func() store.Store) {
	s := open()
	sched := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	r, err := s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "j", Period: p1, Scheduled: sched, State: store.Pending, Manual: true}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Version == 0 {
		t.Fatalf("pending row has no version: %+v", r)
	}
	if _, err := s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "j", Period: p1, State: store.Pending}}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second create of a row: got %v, want ErrConflict", err)
	}
	claim := r
	claim.State, claim.Token, claim.Holder, claim.Attempt = store.Running, 1, "n1", 1
	claim.Started = sched.Add(2 * time.Second)
	c, err := s.SwapRun(ctx(t), store.RunSwap{Expect: r.Version, Run: claim})
	if err != nil {
		t.Fatal(err)
	}
	done := c
	done.State, done.Finished, done.ExitCode, done.Output = store.Done, sched.Add(5*time.Second), 0, "ok\n"
	d, err := s.SwapRun(ctx(t), store.RunSwap{Expect: c.Version, Run: done})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx(t), "j", p1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != d.Version || got.State != store.Done || got.Token != 1 || got.Holder != "n1" || got.Attempt != 1 ||
		!got.Manual || got.Output != "ok\n" || !got.Scheduled.Equal(sched) || !got.Started.Equal(claim.Started) || !got.Finished.Equal(done.Finished) {
		t.Fatalf("GetRun = %+v, want %+v", got, d)
	}
	again := got
	again.State = store.Running
	if _, err := s.SwapRun(ctx(t), store.RunSwap{Expect: got.Version, Run: again}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("rewriting a done row: got %v, want ErrInvalid", err)
	}
}

func testFencedRun(t *testing.T, open func() store.Store) {
	s := open()
	rec := mustSwap(t, s, store.Swap{Record: acquire("job", "n1", 1), Event: store.Acquired})
	pending, err := s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "job", Period: p1, State: store.Pending}})
	if err != nil {
		t.Fatal(err)
	}
	claim := pending
	claim.State, claim.Token, claim.Holder, claim.Attempt = store.Running, 1, "n1", 1
	old, err := s.SwapRun(ctx(t), store.RunSwap{Expect: pending.Version, Run: claim, Fenced: true})
	if err != nil {
		t.Fatalf("fenced claim with the current token: %v", err)
	}
	// n2 takes over the election; n1's completion must be rejected.
	mustSwap(t, s, store.Swap{Expect: rec.Version, Record: acquire("job", "n2", 2), Event: store.TakenOver})
	stale := old
	stale.State = store.Done
	if _, err := s.SwapRun(ctx(t), store.RunSwap{Expect: old.Version, Run: stale, Fenced: true}); !errors.Is(err, store.ErrStaleToken) {
		t.Fatalf("fenced completion with a deposed token: got %v, want store.ErrStaleToken", err)
	}
	got, _ := s.GetRun(ctx(t), "job", p1)
	if got.State != store.Running || got.Version != old.Version {
		t.Fatalf("a rejected fenced write changed the row: %+v", got)
	}
	take := got
	take.Token, take.Holder, take.Attempt = 2, "n2", 2
	tk, err := s.SwapRun(ctx(t), store.RunSwap{Expect: got.Version, Run: take, Fenced: true})
	if err != nil {
		t.Fatalf("takeover of the running row by the new leader: %v", err)
	}
	fin := tk
	fin.State = store.Done
	if _, err := s.SwapRun(ctx(t), store.RunSwap{Expect: tk.Version, Run: fin, Fenced: true}); err != nil {
		t.Fatalf("fenced completion by the new leader: %v", err)
	}
}

func testRunsPaging(t *testing.T, open func() store.Store) {
	s := open()
	periods := []string{"2026-11-29T03:00:00Z", "2026-11-29T01:00:00Z", "2026-11-29T02:00:00Z"}
	for _, p := range periods {
		if _, err := s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "p", Period: p, State: store.Pending}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "other", Period: p1, State: store.Pending}}); err != nil {
		t.Fatal(err)
	}
	all, err := s.Runs(ctx(t), "p", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Period != "2026-11-29T01:00:00Z" || all[2].Period != "2026-11-29T03:00:00Z" {
		t.Fatalf("Runs = %+v", all)
	}
	page, _ := s.Runs(ctx(t), "p", "2026-11-29T01:00:00Z", 1)
	if len(page) != 1 || page[0].Period != "2026-11-29T02:00:00Z" {
		t.Fatalf("Runs(after 01:00, limit 1) = %+v", page)
	}
}

func testConcurrentRunClaim(t *testing.T, open func() store.Store) {
	s := open()
	pending, err := s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "rc", Period: p1, State: store.Pending}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		h := open()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := pending
			r.State, r.Holder, r.Attempt = store.Running, fmt.Sprintf("n%d", i), 1
			_, errs[i] = h.SwapRun(context.Background(), store.RunSwap{Expect: pending.Version, Run: r})
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
		} else if !errors.Is(err, store.ErrConflict) {
			t.Errorf("unexpected error %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d claims of one row succeeded, want 1", wins)
	}
}

// testLedgerBound: a store that reports a bound on the rows of a job's
// ledger (store.LedgerBounded) keeps that many rows of one job, each like
// a done run of baton run's (holder, token, times, exit code, a short
// output), and lists them all: the bound it reports is true.
func testLedgerBound(t *testing.T, s store.Store, rows int) {
	start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		at := start.Add(time.Duration(i) * time.Second)
		r := store.Run{Job: "bounded", Period: at.Format(time.RFC3339), Scheduled: at, State: store.Done,
			Token: 7, Holder: "billing-7d9f8b6c5d-x2x4q", Attempt: 1, Started: at.Add(3 * time.Millisecond),
			Finished: at.Add(250 * time.Millisecond), ExitCode: 0, Output: "billed 42 invoices"}
		if _, err := s.SwapRun(ctx(t), store.RunSwap{Run: r}); err != nil {
			t.Fatalf("row %d of the %d the store says it keeps: %v", i+1, rows, err)
		}
	}
	got, err := s.Runs(ctx(t), "bounded", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != rows {
		t.Fatalf("Runs lists %d rows; the store keeps %d a job (LedgerRows)", len(got), rows)
	}
}
