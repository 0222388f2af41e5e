package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// testSuspend checks SuspendJob: a compare-and-swap on the job's
// suspension, kept across handles, logged with who and why, and leaving
// the election record (and so its holder's term) as it was.
func testSuspend(t *testing.T, open func() store.Store) {
	s := open()
	c := ctx(t)
	on := store.JobSuspend{Name: "job", Suspend: true, By: "ops@host", Reason: "bad deploy"}
	if _, err := s.SuspendJob(c, on); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("suspending a missing job: %v, want ErrNotFound", err)
	}
	for _, bad := range []store.JobSuspend{{Suspend: true, By: "x"}, {Name: "job", Suspend: true}, {Name: "job", Suspend: true, By: "x", Reason: strings.Repeat("r", store.MaxReasonLen+1)}, {Name: "job", Suspend: true, By: "x", Reason: "a\x1b[2Jb"}} {
		if _, err := s.SuspendJob(c, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("SuspendJob(%+v): %v, want ErrInvalid", bad, err)
		}
	}
	j, err := s.EnsureJob(c, store.Job{Name: "job", Schedule: "a", Suspension: store.Suspension{By: "planted"}})
	if err != nil {
		t.Fatal(err)
	}
	if j.Suspension != (store.Suspension{}) {
		t.Fatalf("a new job is suspended: %+v", j.Suspension)
	}
	if _, err := s.SuspendJob(c, store.JobSuspend{Name: "job", By: "x"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("resuming a job that is not suspended: %v, want ErrConflict", err)
	}
	rec := mustSwap(t, s, store.Swap{Record: acquire("job", "a", 1), Event: store.Acquired})
	got, err := s.SuspendJob(c, on)
	if err != nil || !got.Suspension.Active() || got.Suspension.By != on.By || got.Suspension.Reason != on.Reason || got.Schedule != "a" || !got.Created.Equal(j.Created) {
		t.Fatalf("SuspendJob = %+v, %v", got, err)
	}
	if _, err := s.SuspendJob(c, on); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("suspending a suspended job: %v, want ErrConflict", err)
	}
	// Another handle sees it, through GetJob and EnsureJob.
	other := open()
	for what, read := range map[string]func() (store.Job, error){
		"GetJob":    func() (store.Job, error) { return other.GetJob(c, "job") },
		"EnsureJob": func() (store.Job, error) { return other.EnsureJob(c, store.Job{Name: "job", Schedule: "b"}) },
	} {
		if j2, err := read(); err != nil || j2.Suspension.By != on.By || j2.Suspension.Reason != on.Reason || !j2.Suspension.At.Equal(got.Suspension.At) {
			t.Errorf("%s after a suspension = %+v, %v; want %+v", what, j2, err, got.Suspension)
		}
	}
	// The record is untouched: its holder renews with the version it has.
	if now, err := s.Get(c, "job"); err != nil || now != rec {
		t.Fatalf("record after a suspension %+v, %v; want it unchanged %+v", now, err, rec)
	}
	rec = mustSwap(t, s, store.Swap{Expect: rec.Version, Record: rec})
	// Rescheduling keeps the suspension.
	if up, err := s.UpdateJob(c, store.JobUpdate{Name: "job", Expect: "a", Schedule: "b"}); err != nil || up.Suspension.By != on.By {
		t.Fatalf("UpdateJob of a suspended job = %+v, %v; want it still suspended", up, err)
	}
	got, err = s.SuspendJob(c, store.JobSuspend{Name: "job", By: "dev@host"})
	if err != nil || got.Suspension != (store.Suspension{}) || got.Schedule != "b" {
		t.Fatalf("resume = %+v, %v", got, err)
	}
	if j2, err := other.GetJob(c, "job"); err != nil || j2.Suspension.Active() {
		t.Errorf("GetJob after resume = %+v, %v", j2, err)
	}
	evs, err := s.History(c, "job", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds, details []string
	for _, ev := range evs {
		kinds = append(kinds, string(ev.Kind))
		if ev.Kind == store.Suspended || ev.Kind == store.Resumed {
			details = append(details, ev.Detail)
			if ev.Holder != rec.Holder || ev.Token != rec.Token {
				t.Errorf("%s event %+v: want the record's holder and token", ev.Kind, ev)
			}
		}
	}
	if want := "acquired suspended rescheduled resumed"; strings.Join(kinds, " ") != want {
		t.Errorf("log kinds %q, want %q", kinds, want)
	}
	if want := "by ops@host: bad deploy|by dev@host"; strings.Join(details, "|") != want {
		t.Errorf("log details %q, want %q", details, want)
	}
	// Suspensions between the record's own events, several in a row:
	// the log stays one sequence, numbered from 1 up by one, and pages of
	// it follow each other by cursor whatever their size.
	if rec, err = s.Get(c, "job"); err != nil { // rescheduling changed its version
		t.Fatal(err)
	}
	for i := range 3 {
		rec = mustSwap(t, s, store.Swap{Expect: rec.Version, Record: rec, Event: store.TransferRequested})
		for range i + 1 {
			if _, err := s.SuspendJob(c, on); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SuspendJob(c, store.JobSuspend{Name: "job", By: "dev@host"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, err := s.History(c, "job", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(evs)+3+2*6 {
		t.Fatalf("%d events after more suspensions, want %d", len(all), len(evs)+3+2*6)
	}
	for i, ev := range all {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d of the log has Seq %d: %+v", i, ev.Seq, all)
		}
	}
	for _, limit := range []int{1, 2, 5} {
		var paged []store.Event
		for after := uint64(0); ; {
			page, err := s.History(c, "job", after, limit)
			if err != nil {
				t.Fatal(err)
			}
			paged = append(paged, page...)
			if len(page) < limit {
				break
			}
			after = page[len(page)-1].Seq
		}
		if !slices.Equal(paged, all) {
			t.Errorf("History in pages of %d:\n%+v\nwant\n%+v", limit, paged, all)
		}
	}
}

// testSuspendedClaim checks that SwapRun refuses, with ErrSuspended and
// writing nothing, a claim or skip of a period of a job that another
// handle suspended after the caller's last read of it; that the outcome
// of a run in progress and a pending row still land while it is
// suspended; and that claims land again after the resume.
func testSuspendedClaim(t *testing.T, open func() store.Store) {
	s, op := open(), open() // the leader's handle and the operator's
	c := ctx(t)
	const p2, p3, p4 = "2026-11-29T01:00:00Z", "2026-11-29T02:00:00Z", "2026-11-29T03:00:00Z"
	sched := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	if _, err := s.EnsureJob(c, store.Job{Name: "job", Schedule: "every 1h"}); err != nil {
		t.Fatal(err)
	}
	mustSwap(t, s, store.Swap{Record: acquire("job", "n1", 1), Event: store.Acquired})
	run := func(period string, st store.RunState, attempt int) store.Run {
		return store.Run{Job: "job", Period: period, Scheduled: sched, State: st, Token: 1, Holder: "n1", Attempt: attempt, Started: sched}
	}
	running, err := s.SwapRun(c, store.RunSwap{Run: run(p1, store.Running, 1), Fenced: true})
	if err != nil {
		t.Fatalf("claim before the suspension: %v", err)
	}
	pending, err := s.SwapRun(c, store.RunSwap{Run: store.Run{Job: "job", Period: p3, Scheduled: sched, State: store.Pending, Manual: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.SuspendJob(c, store.JobSuspend{Name: "job", Suspend: true, By: "ops@host"}); err != nil {
		t.Fatal(err)
	}
	// A manual trigger while suspended: its pending row waits for the resume.
	if _, err := s.SwapRun(c, store.RunSwap{Run: store.Run{Job: "job", Period: p4, Scheduled: sched, State: store.Pending, Manual: true}}); err != nil {
		t.Fatalf("a pending row while the job is suspended: %v, want it written", err)
	}
	before, err := s.Runs(c, "job", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	takeover := run(p1, store.Running, 2)
	pendingClaim := run(p3, store.Running, 1)
	pendingClaim.Manual = true
	skip := run(p2, store.Skipped, 0)
	skip.Output = "outside the catch-up window"
	for what, sw := range map[string]store.RunSwap{
		"a claim of a new period":         {Run: run(p2, store.Running, 1), Fenced: true},
		"an unfenced claim":               {Run: run(p2, store.Running, 1)},
		"a skip":                          {Run: skip, Fenced: true},
		"a claim of a pending row":        {Expect: pending.Version, Run: pendingClaim, Fenced: true},
		"a takeover of the running row":   {Expect: running.Version, Run: takeover, Fenced: true},
		"a claim of a pending row (bare)": {Expect: pending.Version, Run: pendingClaim},
	} {
		if got, err := s.SwapRun(c, sw); !errors.Is(err, store.ErrSuspended) || errors.Is(err, store.ErrConflict) || store.Permanent(err) {
			t.Errorf("%s while the job is suspended = %+v, %v; want ErrSuspended", what, got, err)
		}
	}
	if after, err := s.Runs(c, "job", "", 0); err != nil || !slices.Equal(after, before) {
		t.Fatalf("ledger after refused claims:\n%+v, %v\nwant it unchanged:\n%+v", after, err, before)
	}
	// The run in progress finishes.
	done := running
	done.State, done.Finished, done.Output = store.Done, sched.Add(time.Minute), "ok\n"
	if _, err := s.SwapRun(c, store.RunSwap{Expect: running.Version, Run: done, Fenced: true}); err != nil {
		t.Fatalf("recording the outcome of a run in progress while suspended: %v, want it written", err)
	}
	if _, err := op.SuspendJob(c, store.JobSuspend{Name: "job", By: "ops@host"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SwapRun(c, store.RunSwap{Run: run(p2, store.Running, 1), Fenced: true}); err != nil {
		t.Fatalf("claim after the resume: %v", err)
	}
	if _, err := s.SwapRun(c, store.RunSwap{Expect: pending.Version, Run: pendingClaim, Fenced: true}); err != nil {
		t.Fatalf("claim of the pending row after the resume: %v", err)
	}
	// The version rule comes before the suspension's.
	if _, err := op.SuspendJob(c, store.JobSuspend{Name: "job", Suspend: true, By: "ops@host"}); err != nil {
		t.Fatal(err)
	}
	skip.Period = p4
	if _, err := s.SwapRun(c, store.RunSwap{Run: skip, Fenced: true}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a skip at the wrong version while suspended: %v; want ErrConflict (the version rule first)", err)
	}
}

// testSuspendRacingClaims runs suspensions and resumes of a job against
// fenced claims of its periods on other handles: every claim lands or is
// refused with ErrSuspended (no deadlock, no other error), and each
// toggle applies.
func testSuspendRacingClaims(t *testing.T, open func() store.Store) {
	s, op := open(), open()
	c := ctx(t)
	if _, err := s.EnsureJob(c, store.Job{Name: "job", Schedule: "every 1h"}); err != nil {
		t.Fatal(err)
	}
	mustSwap(t, s, store.Swap{Record: acquire("job", "n1", 1), Event: store.Acquired})
	const toggles, claims = 10, 40
	var wg sync.WaitGroup
	errs := make(chan error, toggles+claims)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range toggles {
			if _, err := op.SuspendJob(c, store.JobSuspend{Name: "job", Suspend: i%2 == 0, By: "ops@host"}); err != nil {
				errs <- fmt.Errorf("toggle %d: %w", i, err)
			}
		}
	}()
	go func() {
		defer wg.Done()
		at := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
		for i := range claims {
			p := at.Add(time.Duration(i) * time.Hour)
			r := store.Run{Job: "job", Period: p.Format(time.RFC3339), Scheduled: p, State: store.Running, Token: 1, Holder: "n1", Attempt: 1}
			if _, err := s.SwapRun(c, store.RunSwap{Run: r, Fenced: true}); err != nil && !errors.Is(err, store.ErrSuspended) {
				errs <- fmt.Errorf("claim %d: %w", i, err)
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
