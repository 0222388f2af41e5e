// Package storetest is the conformance suite every store backend passes.
//
// A backend's test calls Run with a Factory. The suite checks the contract
// documented in package store: compare-and-swap semantics, the election log
// written atomically with the record, tokens that never go back, fenced run
// ledger writes, concurrency between handles, durability across reopening,
// batched reads and swaps, the change feed, listing, session deletion and
// suspension: the whole of store.Store, on every backend, with no part of
// it skipped. It does not test the optional store.Identifier and
// store.TimeSource (each backend's own tests do).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// Factory makes a fresh, empty store location for one test and returns a
// function that opens a new handle on it. Handles opened from the same
// location see the same data, like separate processes on one database; the
// suite closes every handle it opens.
type Factory func(t *testing.T) (open func() store.Store)

// Run runs the conformance suite against the backend made by f: every
// method of store.Store, none of them optional.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open func() store.Store)
	}{
		{"GetMissing", testGetMissing},
		{"CreateAndConflict", testCreateAndConflict},
		{"VersionChangesOnEveryWrite", testVersionChanges},
		{"TokenNeverGoesBack", testTokenNeverGoesBack},
		{"TokenAboveMaximumIsPermanent", testTokenLimit},
		{"InvalidSwaps", testInvalidSwaps},
		{"HistoryAtomicWithRecord", testHistory},
		{"HistoryPaging", testHistoryPaging},
		{"ConcurrentAcquireOneWinner", testConcurrentAcquire},
		{"DurableAcrossReopen", testDurable},
		{"CancelledContext", testCancelledContext},
		{"EnsureJob", testEnsureJob},
		{"RunLedger", testRunLedger},
		{"FencedRunWrites", testFencedRun},
		{"RunsOrderAndPaging", testRunsPaging},
		{"ConcurrentRunClaimOneWinner", testConcurrentRunClaim},
		{"SwapMany", testSwapMany},
		{"RecentRuns", testRecentRuns},
		{"PruneRuns", testPruneRuns},
		{"UpdateJob", testUpdateJob},
		{"Suspend", testSuspend},
		{"Candidates", testCandidates},
		{"Sessions", testSessions},
		{"DeleteSession", testDeleteSession},
		{"GetMany", testGetMany},
		{"ManyNames", testManyNames},
		{"WatchChanges", testWatchChanges},
		{"Names", testNames},
		{"NamesPage", testNamesPage},
		{"CountHolders", testCountHolders},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			open := f(t)
			tc.fn(t, func() store.Store {
				s := open()
				t.Cleanup(func() { s.Close() })
				return s
			})
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func acquire(name, node string, token uint64) store.Record {
	return store.Record{Name: name, Holder: node, Incarnation: node + "-1", Token: token, Lease: 3 * time.Second}
}

func mustSwap(t *testing.T, s store.Store, sw store.Swap) store.Record {
	t.Helper()
	rec, err := s.Swap(ctx(t), sw)
	if err != nil {
		t.Fatalf("Swap(%+v): %v", sw, err)
	}
	return rec
}

func testGetMissing(t *testing.T, open func() store.Store) {
	s := open()
	_, err := s.Get(ctx(t), "nobody")
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of a missing record: got %v, want ErrNotFound", err)
	}
	_, err = s.GetRun(ctx(t), "nojob", "2026-01-01T00:00:00Z")
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetRun of a missing row: got %v, want ErrNotFound", err)
	}
	evs, err := s.History(ctx(t), "nobody", 0, 0)
	if err != nil || len(evs) != 0 {
		t.Fatalf("History of a missing record: %v, %v; want empty, nil", evs, err)
	}
}

func testCreateAndConflict(t *testing.T, open func() store.Store) {
	s := open()
	rec := mustSwap(t, s, store.Swap{Record: acquire("a", "n1", 1), Event: store.Acquired})
	if rec.Version == 0 || rec.Holder != "n1" || rec.Token != 1 || rec.Lease != 3*time.Second || rec.Updated.IsZero() {
		t.Fatalf("created record = %+v", rec)
	}
	got, err := s.Get(ctx(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	if got != rec && !(got.Version == rec.Version && got.Holder == rec.Holder && got.Token == rec.Token && got.Updated.Equal(rec.Updated)) {
		t.Fatalf("Get = %+v, Swap returned %+v", got, rec)
	}
	_, err = s.Swap(ctx(t), store.Swap{Record: acquire("a", "n2", 1), Event: store.Acquired})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second create: got %v, want ErrConflict", err)
	}
	_, err = s.Swap(ctx(t), store.Swap{Expect: rec.Version + 1000, Record: acquire("a", "n2", 2), Event: store.TakenOver})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("swap at a wrong version: got %v, want ErrConflict", err)
	}
	got, _ = s.Get(ctx(t), "a")
	if got.Holder != "n1" || got.Token != 1 || got.Version != rec.Version {
		t.Fatalf("a failed swap changed the record: %+v", got)
	}
	evs, _ := s.History(ctx(t), "a", 0, 0)
	if len(evs) != 1 {
		t.Fatalf("failed swaps wrote log events: %+v", evs)
	}
}

func testVersionChanges(t *testing.T, open func() store.Store) {
	s := open()
	rec := mustSwap(t, s, store.Swap{Record: acquire("v", "n1", 1), Event: store.Acquired})
	seen := map[int64]bool{rec.Version: true}
	for i := 0; i < 5; i++ {
		next := mustSwap(t, s, store.Swap{Expect: rec.Version, Record: rec})
		if seen[next.Version] {
			t.Fatalf("renewal %d reused version %d", i, next.Version)
		}
		seen[next.Version] = true
		rec = next
	}
	// A write to another name must not disturb this one's CAS.
	mustSwap(t, s, store.Swap{Record: acquire("other", "n2", 1), Event: store.Acquired})
	mustSwap(t, s, store.Swap{Expect: rec.Version, Record: rec})
}

func testTokenNeverGoesBack(t *testing.T, open func() store.Store) {
	s := open()
	rec := mustSwap(t, s, store.Swap{Record: acquire("t", "n1", 5), Event: store.Acquired})
	_, err := s.Swap(ctx(t), store.Swap{Expect: rec.Version, Record: acquire("t", "n2", 4), Event: store.TakenOver})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("lowering the token: got %v, want ErrInvalid", err)
	}
	got, _ := s.Get(ctx(t), "t")
	if got.Token != 5 || got.Version != rec.Version {
		t.Fatalf("rejected swap changed the record: %+v", got)
	}
}

// testTokenLimit: store.MaxToken is held; a token above it, by Swap,
// SwapMany or SwapRun, is refused with a permanent error (store.Permanent,
// store.ErrTokenLimit, store.ErrInvalid), and nothing is written.
func testTokenLimit(t *testing.T, open func() store.Store) {
	s := open()
	rec := mustSwap(t, s, store.Swap{Record: acquire("max", "n1", store.MaxToken), Event: store.Acquired})
	if got, err := s.Get(ctx(t), "max"); err != nil || got.Token != store.MaxToken {
		t.Fatalf("Get after writing token %d = %+v, %v", uint64(store.MaxToken), got, err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !store.Permanent(err) || !errors.Is(err, store.ErrTokenLimit) || !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("%s: got %v, want a permanent error wrapping ErrTokenLimit and ErrInvalid", what, err)
		}
	}
	// The next term's token: one more than a store holds.
	_, err := s.Swap(ctx(t), store.Swap{Expect: rec.Version, Record: acquire("max", "n2", store.MaxToken+1), Event: store.TakenOver})
	refused("a takeover to token MaxToken+1", err)
	_, err = s.Swap(ctx(t), store.Swap{Record: acquire("huge", "n1", 1<<64-1), Event: store.Acquired})
	refused("a new record at token 2^64-1", err)
	res, err := s.SwapMany(ctx(t), []store.Swap{
		{Expect: rec.Version, Record: acquire("max", "n2", store.MaxToken+1), Event: store.TakenOver},
		{Record: acquire("ok", "n1", 1), Event: store.Acquired},
	})
	if err != nil || len(res) != 2 || res[1].Err != nil {
		t.Fatalf("SwapMany with one token above the maximum = %+v, %v; want the other swap applied", res, err)
	}
	refused("SwapMany to token MaxToken+1", res[0].Err)
	_, err = s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "max", Period: "2026-01-01T00:00:00Z", State: store.Running, Token: store.MaxToken + 1, Holder: "n1"}})
	refused("a run at token MaxToken+1", err)
	got, err := s.Get(ctx(t), "max")
	if err != nil || got.Version != rec.Version || got.Holder != "n1" || got.Token != store.MaxToken {
		t.Fatalf("the refused swaps changed the record: %+v, %v", got, err)
	}
	if _, err := s.Get(ctx(t), "huge"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused new record exists: %v", err)
	}
	if evs, err := s.History(ctx(t), "max", 0, 0); err != nil || len(evs) != 1 {
		t.Fatalf("History after refused swaps = %+v, %v; want the one acquisition", evs, err)
	}
	if _, err := s.GetRun(ctx(t), "max", "2026-01-01T00:00:00Z"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused run exists: %v", err)
	}
}

func testInvalidSwaps(t *testing.T, open func() store.Store) {
	s := open()
	_, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Token: 1}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("empty name: got %v, want ErrInvalid", err)
	}
	_, err = s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "j", State: store.Pending}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("run without a period: got %v, want ErrInvalid", err)
	}
	_, err = s.EnsureJob(ctx(t), store.Job{})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("job without a name: got %v, want ErrInvalid", err)
	}
}

func testHistory(t *testing.T, open func() store.Store) {
	s := open()
	r1 := mustSwap(t, s, store.Swap{Record: acquire("h", "n1", 1), Event: store.Acquired})
	r1 = mustSwap(t, s, store.Swap{Expect: r1.Version, Record: r1}) // renewal: no event
	free := store.Record{Name: "h", Token: 1, Lease: r1.Lease}
	r2 := mustSwap(t, s, store.Swap{Expect: r1.Version, Record: free, Event: store.Released})
	r3 := mustSwap(t, s, store.Swap{Expect: r2.Version, Record: acquire("h", "n2", 2), Event: store.Acquired})
	mustSwap(t, s, store.Swap{Record: acquire("h2", "n9", 1), Event: store.Acquired})

	evs, err := s.History(ctx(t), "h", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind   store.EventKind
		holder string
		token  uint64
	}{{store.Acquired, "n1", 1}, {store.Released, "", 1}, {store.Acquired, "n2", 2}}
	if len(evs) != len(want) {
		t.Fatalf("History = %+v, want %d events", evs, len(want))
	}
	for i, w := range want {
		ev := evs[i]
		if ev.Seq != uint64(i+1) || ev.Name != "h" || ev.Kind != w.kind || ev.Holder != w.holder || ev.Token != w.token || ev.Time.IsZero() {
			t.Errorf("event %d = %+v, want seq %d %+v", i, ev, i+1, w)
		}
	}
	if evs[2].Incarnation != r3.Incarnation {
		t.Errorf("event incarnation %q, record %q", evs[2].Incarnation, r3.Incarnation)
	}
	page, _ := s.History(ctx(t), "h", 1, 1)
	if len(page) != 1 || page[0].Seq != 2 {
		t.Fatalf("History(after 1, limit 1) = %+v", page)
	}
}

// testHistoryPaging logs 17 events of one name, written by two handles in
// turn (each swapping on what the other wrote), by Swap and, where the
// store has it, SwapMany, with renewals in between, and checks that every
// page of History (every after, limits 0 to 6) is the right slice of the
// whole log, on a third handle too.
func testHistoryPaging(t *testing.T, open func() store.Store) {
	const n = 17
	handles := []store.Store{open(), open()}
	var rec store.Record
	for i := range n {
		s := handles[i%2]
		next := acquire("hp", fmt.Sprintf("n%d", i), uint64(i/2+1))
		kind := store.Acquired
		if i%2 == 1 {
			next, kind = store.Record{Name: "hp", Token: rec.Token, Lease: rec.Lease}, store.Released
		}
		sw := store.Swap{Expect: rec.Version, Record: next, Event: kind}
		if i%3 == 0 {
			res, err := s.SwapMany(ctx(t), []store.Swap{sw})
			if err == nil {
				err = res[0].Err
			}
			if err != nil {
				t.Fatalf("SwapMany of event %d: %v", i+1, err)
			}
			rec = res[0].Record
		} else {
			rec = mustSwap(t, s, sw)
		}
		if kind == store.Acquired {
			rec = mustSwap(t, s, store.Swap{Expect: rec.Version, Record: rec}) // a renewal: no event
		}
	}
	full, err := open().History(ctx(t), "hp", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != n {
		t.Fatalf("History has %d events, want %d: %+v", len(full), n, full)
	}
	for i, ev := range full {
		want := store.Acquired
		if i%2 == 1 {
			want = store.Released
		}
		if ev.Seq != uint64(i+1) || ev.Kind != want || ev.Name != "hp" || ev.Token != uint64(i/2+1) {
			t.Fatalf("event %d = %+v, want seq %d, %s, token %d", i, ev, i+1, want, i/2+1)
		}
	}
	for after := 0; after <= n+1; after++ {
		for limit := 0; limit <= 6; limit++ {
			got, err := handles[after%2].History(ctx(t), "hp", uint64(after), limit)
			if err != nil {
				t.Fatal(err)
			}
			want := full[min(after, n):]
			if limit > 0 && len(want) > limit {
				want = want[:limit]
			}
			if len(got) != len(want) || (len(got) > 0 && (got[0].Seq != want[0].Seq || got[len(got)-1].Seq != want[len(want)-1].Seq)) {
				t.Fatalf("History(after %d, limit %d) = %d events %+v, want seqs %d..%d", after, limit, len(got), got, after+1, after+len(want))
			}
		}
	}
}

func testConcurrentAcquire(t *testing.T, open func() store.Store) {
	const n = 8
	handles := make([]store.Store, n)
	for i := range handles {
		handles[i] = open()
	}
	base := mustSwap(t, handles[0], store.Swap{Record: store.Record{Name: "c", Token: 0, Lease: time.Second}})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = handles[i].Swap(context.Background(), store.Swap{
				Expect: base.Version, Record: acquire("c", fmt.Sprintf("n%d", i), 1), Event: store.Acquired})
		}()
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, store.ErrConflict):
		default:
			t.Errorf("handle %d: unexpected error %v", i, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d handles won the same compare-and-swap, want exactly 1", wins)
	}
	evs, _ := handles[0].History(ctx(t), "c", 0, 0)
	if len(evs) != 1 {
		t.Fatalf("History has %d events after one winning swap", len(evs))
	}
}

func testDurable(t *testing.T, open func() store.Store) {
	s1 := open()
	rec := mustSwap(t, s1, store.Swap{Record: acquire("d", "n1", 7), Event: store.Acquired})
	if _, err := s1.EnsureJob(ctx(t), store.Job{Name: "d", Schedule: "every 1h"}); err != nil {
		t.Fatal(err)
	}
	s1.Close()
	s2 := open()
	got, err := s2.Get(ctx(t), "d")
	if err != nil {
		t.Fatal(err)
	}
	if got.Token != 7 || got.Version != rec.Version || got.Holder != "n1" {
		t.Fatalf("after reopen: %+v, want token 7 version %d", got, rec.Version)
	}
	if _, err := s2.Swap(ctx(t), store.Swap{Expect: got.Version, Record: acquire("d", "n2", 6)}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("token went back after reopen: %v", err)
	}
	evs, _ := s2.History(ctx(t), "d", 0, 0)
	if len(evs) != 1 {
		t.Fatalf("History after reopen: %+v", evs)
	}
}

func testCancelledContext(t *testing.T, open func() store.Store) {
	s := open()
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(c, "x"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Get with a cancelled context: got %v, want ErrUnavailable", err)
	}
	if _, err := s.Swap(c, store.Swap{Record: acquire("x", "n1", 1)}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Swap with a cancelled context: got %v, want ErrUnavailable", err)
	}
}

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

func testSwapMany(t *testing.T, open func() store.Store) {
	s := open()
	a := mustSwap(t, s, store.Swap{Record: acquire("m1", "n1", 1), Event: store.Acquired})
	res, err := s.SwapMany(ctx(t), []store.Swap{
		{Expect: a.Version, Record: a},
		{Expect: 12345, Record: acquire("m2", "n1", 1)},
		{Record: acquire("m3", "n1", 1), Event: store.Acquired},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].Err != nil || !errors.Is(res[1].Err, store.ErrConflict) || res[2].Err != nil {
		t.Fatalf("SwapMany results = %+v", res)
	}
	if res[0].Record.Version == a.Version {
		t.Fatal("renewal in a batch kept the old version")
	}
	if _, err := s.Get(ctx(t), "m2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a conflicting swap in a batch was applied: %v", err)
	}
	evs, _ := s.History(ctx(t), "m3", 0, 0)
	if len(evs) != 1 {
		t.Fatalf("batched acquisition wrote %d log events", len(evs))
	}
}

// session returns a session record of node, and a name record held
// through it.
func session(node string) store.Record {
	return store.Record{Name: store.SessionPrefix + node + "/i1/1", Holder: node, Incarnation: "i1", Lease: 3 * time.Second}
}

func heldThrough(name string, sess store.Record, token uint64) store.Record {
	return store.Record{Name: name, Holder: sess.Holder, Incarnation: sess.Incarnation, Session: sess.Name, Token: token, Lease: sess.Lease}
}

func testSessions(t *testing.T, open func() store.Store) {
	s := open()
	sess := mustSwap(t, s, store.Swap{Record: session("n1")})
	held := mustSwap(t, s, store.Swap{Record: heldThrough("tenant-1", sess, 1), Event: store.Acquired})
	got, err := s.Get(ctx(t), "tenant-1")
	if err != nil || got.Session != sess.Name || got.Holder != "n1" || got.Token != 1 {
		t.Fatalf("Get of a record held through a session = %+v, %v", got, err)
	}
	// A renewal of the session leaves the name's record alone.
	renewed := mustSwap(t, s, store.Swap{Expect: sess.Version, Record: sess})
	if got, _ := s.Get(ctx(t), "tenant-1"); got.Version != held.Version {
		t.Fatalf("renewing the session changed the name's record: version %d -> %d", held.Version, got.Version)
	}
	// A contender ends the dead session with a free record; it is never
	// held again, and the name is taken with a higher token.
	dead := mustSwap(t, s, store.Swap{Expect: renewed.Version, Record: store.Record{Name: sess.Name, Lease: sess.Lease}})
	if _, err := s.Swap(ctx(t), store.Swap{Expect: dead.Version, Record: sess}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a dead session was held again: %v", err)
	}
	other := mustSwap(t, s, store.Swap{Record: session("n2")})
	mustSwap(t, s, store.Swap{Expect: held.Version, Record: heldThrough("tenant-1", other, 2), Event: store.TakenOver})
	// A free record naming a session, and a session that is not one, are refused.
	for _, bad := range []store.Record{
		{Name: "tenant-2", Session: other.Name},
		{Name: "tenant-2", Holder: "n2", Incarnation: "i1", Session: "tenant-1"},
	} {
		if _, err := s.Swap(ctx(t), store.Swap{Record: bad}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("Swap(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	names, err := s.Names(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"tenant-1"}) {
		t.Fatalf("Names() = %q, want only the election name (no session records)", names)
	}
}

func testGetMany(t *testing.T, open func() store.Store) {
	s := open()
	a := mustSwap(t, s, store.Swap{Record: acquire("g1", "n1", 1), Event: store.Acquired})
	b := mustSwap(t, s, store.Swap{Record: acquire("g3", "n2", 4), Event: store.Acquired})
	res, err := s.GetMany(ctx(t), []string{"g3", "g2", "g1", "g3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0].Err != nil || res[0].Record.Version != b.Version || res[0].Record.Token != 4 ||
		!errors.Is(res[1].Err, store.ErrNotFound) ||
		res[2].Err != nil || res[2].Record.Version != a.Version || res[2].Record.Holder != "n1" ||
		res[3].Err != nil || res[3].Record.Version != b.Version {
		t.Fatalf("GetMany results = %+v", res)
	}
	if res, err := s.GetMany(ctx(t), nil); err != nil || len(res) != 0 {
		t.Fatalf("GetMany(nil) = %v, %v", res, err)
	}
}

// testManyNames acquires, renews through a session and reads back a
// thousand names in batches: what a process holding many names does every
// renew interval and at a bulk takeover.
func testManyNames(t *testing.T, open func() store.Store) {
	s := open()
	sess := mustSwap(t, s, store.Swap{Record: session("n1")})
	const n = 1000
	names := make([]string, n)
	swaps := make([]store.Swap, n)
	for i := range names {
		names[i] = fmt.Sprintf("shard-%04d", i)
		swaps[i] = store.Swap{Record: heldThrough(names[i], sess, 1), Event: store.Acquired}
	}
	res, err := s.SwapMany(ctx(t), swaps)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("swap %d of %d: %v", i, n, r.Err)
		}
	}
	got, err := s.GetMany(ctx(t), names)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if r.Err != nil || r.Record.Session != sess.Name || r.Record.Version != res[i].Record.Version {
			t.Fatalf("GetMany result %d = %+v, want %+v", i, r, res[i].Record)
		}
	}
	// A takeover batch: every name at its version, token + 1.
	other := mustSwap(t, s, store.Swap{Record: session("n2")})
	for i := range swaps {
		swaps[i] = store.Swap{Expect: got[i].Record.Version, Record: heldThrough(names[i], other, 2), Event: store.TakenOver}
	}
	swaps[7].Expect++ // one stale expectation: only it fails
	res, err = s.SwapMany(ctx(t), swaps)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if (i == 7) != (r.Err != nil) || (i == 7 && !errors.Is(r.Err, store.ErrConflict)) {
			t.Fatalf("takeover swap %d: %v", i, r.Err)
		}
	}
	if evs, _ := s.History(ctx(t), names[n-1], 0, 0); len(evs) != 2 || evs[1].Kind != store.TakenOver || evs[1].Token != 2 {
		t.Fatalf("log of %s after a batched takeover = %+v", names[n-1], evs)
	}
}

func testWatchChanges(t *testing.T, open func() store.Store) {
	s := open()
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	mustSwap(t, s, store.Swap{Record: acquire("quiet", "n1", 1), Event: store.Acquired})
	ch := s.WatchChanges(c)
	// Changes through another handle, one alone and a batch of them: every
	// name comes, with the version the write gave it; the unchanged one
	// need not.
	other := open()
	rec := mustSwap(t, other, store.Swap{Record: acquire("c1", "n2", 1), Event: store.Acquired})
	want := map[string]int64{"c1": rec.Version}
	var swaps []store.Swap
	for i := range 50 {
		swaps = append(swaps, store.Swap{Record: acquire(fmt.Sprintf("c-batch-%02d", i), "n2", 1), Event: store.Acquired})
	}
	res, err := s.SwapMany(ctx(t), swaps)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		want[r.Record.Name] = r.Record.Version
	}
	deadline := time.After(10 * time.Second)
	for len(want) > 0 {
		select {
		case batch, open := <-ch:
			if !open {
				t.Fatalf("change feed closed before ctx ended; still missing %d names", len(want))
			}
			for _, c := range batch {
				if v, ok := want[c.Name]; ok && c.Version == v {
					delete(want, c.Name)
				}
			}
		case <-deadline:
			t.Fatalf("change feed did not name %d changed records at their versions within 10s, e.g. %v", len(want), slices.Collect(maps.Keys(want))[:1])
		}
	}
	cancel()
	for range ch {
	}
}
