package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/store"
)

// Planter writes state into the existing ledger row job/period below the
// Store API (raw SQL, a raw etcd put, the in-memory map), as a damaged
// store, another program or a hand edit would leave it.
type Planter func(t *testing.T, job, period string, state store.RunState)

// DamagedFactory is a Factory whose location can also be written below
// the Store API: it returns the function that opens a handle and the
// Planter that writes into the same location.
type DamagedFactory func(t *testing.T) (open func() store.Store, plant Planter)

// RunDamaged runs the cases about data that no baton writes, planted by
// the backend's Planter, against the backend made by f. A ledger row in
// a state that is none of store.RunStates is refused by every read that
// meets it (GetRun, Runs, RecentRuns) with an error wrapping
// store.ErrCorrupt (store.CheckRunState) that names the row and quotes
// its state, never handed out as a row; a write over it is refused too,
// and SwapRun never writes such a state in the first place (ErrInvalid).
// The other rows of the job stay readable one by one.
func RunDamaged(t *testing.T, f DamagedFactory) {
	t.Run("UnknownRunState", func(t *testing.T) {
		open, plant := f(t)
		handle := func() store.Store {
			s := open()
			t.Cleanup(func() { s.Close() })
			return s
		}
		testUnknownRunState(t, handle, plant)
	})
}

func testUnknownRunState(t *testing.T, open func() store.Store, plant Planter) {
	s := open()
	c := ctx(t)
	mustSwap(t, s, store.Swap{Record: acquire("job", "n1", 1), Event: store.Acquired})
	const p1, p2, p3 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"
	for _, p := range []string{p1, p2, p3} {
		if _, err := s.SwapRun(c, store.RunSwap{Run: store.Run{Job: "job", Period: p, State: store.Pending}}); err != nil {
			t.Fatalf("SwapRun(pending %s): %v", p, err)
		}
	}

	// No baton writes an unknown state.
	_, err := s.SwapRun(c, store.RunSwap{Run: store.Run{Job: "job", Period: "2026-01-04T00:00:00Z", State: "weird", Token: 1, Holder: "n1"}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("SwapRun of state \"weird\": %v, want ErrInvalid", err)
	}
	if _, err := s.GetRun(c, "job", "2026-01-04T00:00:00Z"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the refused write: %v, want ErrNotFound", err)
	}

	// Planted below the API, with a control character, it is refused by
	// every read, on this handle and on another one.
	const bad = "weird\x1b[31m"
	plant(t, "job", p2, bad)
	for i, h := range []store.Store{s, open()} {
		refused := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, store.ErrCorrupt) || !store.Permanent(err) {
				t.Fatalf("handle %d: %s of a row in state %q: %v, want a permanent ErrCorrupt", i, what, bad, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, p2) || !strings.Contains(msg, `"job"`) || !strings.Contains(msg, `weird\x1b[31m`) || !strings.Contains(msg, "damaged") {
				t.Fatalf("handle %d: %s: %q, want the job, the period, the quoted state and \"damaged\"", i, what, msg)
			}
			for _, r := range msg {
				if r < ' ' {
					t.Fatalf("handle %d: %s: raw control character in %q", i, what, msg)
				}
			}
		}
		_, err := h.GetRun(c, "job", p2)
		refused("GetRun", err)
		rows, err := h.Runs(c, "job", "", 0)
		if err == nil {
			t.Fatalf("handle %d: Runs handed out the damaged row: %+v", i, rows)
		}
		refused("Runs", err)
		_, err = h.RecentRuns(c, "job", "", 0)
		refused("RecentRuns", err)
		// A claim over it is refused: nobody runs the period again.
		_, err = h.SwapRun(c, store.RunSwap{Expect: 1, Run: store.Run{Job: "job", Period: p2, State: store.Running, Token: 1, Holder: "n1", Attempt: 2}, Fenced: true})
		refused("SwapRun over it", err)
		// The rows around it are still read one by one, and after it.
		for _, p := range []string{p1, p3} {
			if r, err := h.GetRun(c, "job", p); err != nil || r.State != store.Pending {
				t.Fatalf("handle %d: GetRun(%s) beside the damaged row: %+v, %v", i, p, r, err)
			}
		}
		if rows, err := h.Runs(c, "job", p2, 0); err != nil || len(rows) != 1 || rows[0].Period != p3 {
			t.Fatalf("handle %d: Runs after the damaged row: %+v, %v; want %s", i, rows, err, p3)
		}
	}
}
