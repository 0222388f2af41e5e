// Package storetest is the conformance suite every store backend passes.
//
// A backend's test calls Run with a Factory. The suite checks the contract
// documented in package store: compare-and-swap semantics, the election log
// written atomically with the record, tokens that never go back, fenced run
// ledger writes, concurrency between handles, durability across reopening,
// batched reads and swaps, the change feed, listing, session deletion and
// suspension: the whole of store.Store, on every backend, with no part of
// it skipped. It checks that the store's declaration of its optional
// capabilities (Store.Capabilities) is true, and runs the cases of those
// it declares: an ordered feed (FeedInOrder) and successions
// (RunSuccession). It does not test what store.Identifier and
// store.TimeSource return (each backend's own tests do). RunDamaged checks what a
// backend does with data no baton writes, planted below the Store API by
// the backend's own test.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// Factory makes a fresh, empty store location for one test and returns a
// function that opens a new handle on it. Handles opened from the same
// location see the same data, like separate processes on one database; the
// suite closes every handle it opens.
type Factory func(t *testing.T) (open func() store.Store)

// Run runs the conformance suite against the backend made by f: every
// method of store.Store, none of them optional, the truth of the store's
// declared capabilities (Capabilities: what it declares it implements,
// and what it implements it declares), and the cases of the capabilities
// it declares, successions' (RunSuccession, as the subtest Succession)
// included; for a store that reports a bound on a job's ledger
// (store.LedgerBounded), that it keeps that many rows (LedgerBound).
func Run(t *testing.T, f Factory) {
	var declared store.Capabilities
	var ledgerRows int
	tests := []struct {
		name string
		fn   func(t *testing.T, open func() store.Store)
	}{
		{"Capabilities", func(t *testing.T, open func() store.Store) {
			s := open()
			declared, ledgerRows = s.Capabilities(), store.LedgerRowsOf(s)
			if err := storedriver.CheckCapabilities(ctx(t), s); err != nil {
				t.Fatal(err)
			}
		}},
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
		{"SwapManyTakes", testSwapManyTakes},
		{"ConcurrentTakesOneWinner", testConcurrentTakes},
		{"RecentRuns", testRecentRuns},
		{"PruneRuns", testPruneRuns},
		{"UpdateJob", testUpdateJob},
		{"Suspend", testSuspend},
		{"SuspendedClaimRefused", testSuspendedClaim},
		{"SuspendRacingClaims", testSuspendRacingClaims},
		{"Candidates", testCandidates},
		{"CandidateAttrs", testCandidateAttrs},
		{"PreferJob", testPreferJob},
		{"Sessions", testSessions},
		{"DeleteSession", testDeleteSession},
		{"GetMany", testGetMany},
		{"ManyNames", testManyNames},
		{"WatchChanges", testWatchChanges},
		{"WatchSessionRenewals", testWatchSessionRenewals},
		{"FeedInOrder", testFeedInOrder},
		{"Names", testNames},
		{"NamesPage", testNamesPage},
		{"CountHolders", testCountHolders},
		{"SuccessorRefused", testSuccessorRefused},
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
	if declared.Has(store.CapSuccession) {
		t.Run("Succession", func(t *testing.T) { RunSuccession(t, f) })
	}
	if ledgerRows > 0 {
		t.Run("LedgerBound", func(t *testing.T) {
			s := f(t)()
			defer s.Close()
			testLedgerBound(t, s, ledgerRows)
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
