//go:build !nolab

package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// storeCounts counts the calls that reach a store through countStore.
type storeCounts struct {
	// writeCalls counts calls that write (Swap, SwapMany, SwapRun,
	// EnsureJob, UpdateJob, PruneRuns, Heartbeat, DeleteSession,
	// SuspendJob, Settle); recordsWritten the
	// election records they carried (a SwapMany of 1,000 swaps is one
	// call and 1,000 records).
	writeCalls, recordsWritten atomic.Int64
	// readCalls counts calls that read (Get, GetMany, History, GetJob,
	// GetRun, Runs, RecentRuns, Candidates, Names, NamesPage,
	// CountHolders, StoreTime, HeldThrough);
	// recordsRead the election records they asked for.
	readCalls, recordsRead atomic.Int64
	// watches counts WatchChanges calls (each opens a feed).
	watches atomic.Int64
}

// countSnapshot is storeCounts at one instant.
type countSnapshot struct {
	writeCalls, recordsWritten, readCalls, recordsRead, watches int64
}

func (c *storeCounts) snapshot() countSnapshot {
	return countSnapshot{c.writeCalls.Load(), c.recordsWritten.Load(), c.readCalls.Load(), c.recordsRead.Load(), c.watches.Load()}
}

func (s countSnapshot) sub(o countSnapshot) countSnapshot {
	return countSnapshot{s.writeCalls - o.writeCalls, s.recordsWritten - o.recordsWritten, s.readCalls - o.readCalls,
		s.recordsRead - o.recordsRead, s.watches - o.watches}
}

// countStore returns st wrapped so that every call is counted in n. The
// wrapper declares st's capabilities (Capabilities forwards them) and
// implements every optional interface by forwarding it, so that it keeps
// each capability st has by construction: a wrapper that hid one would
// benchmark another code path than production's (a Group without
// successions or an ordered feed), and one that added one would fake it.
// The library reaches an optional method only through the declaration
// (store.SucceederOf and the others), so the methods of a capability st
// lacks are never called; they answer storedriver.Unsupported (StoreID
// "", FeedInOrder false), as the backend guide says a wrapper does.
func countStore(st store.Store, n *storeCounts) store.Store {
	return &countingStore{st: st, n: n}
}

var (
	_ store.Store       = (*countingStore)(nil)
	_ store.Identifier  = (*countingStore)(nil)
	_ store.TimeSource  = (*countingStore)(nil)
	_ store.OrderedFeed = (*countingStore)(nil)
	_ store.Succeeder   = (*countingStore)(nil)

	_ store.LedgerBounded = (*countingStore)(nil)
)

// LedgerRows forwards st's bound (0: none), so that a job on a counted
// store is refused a retention its store cannot keep, as on st itself.
func (c *countingStore) LedgerRows() int { return store.LedgerRowsOf(c.st) }

// Capabilities forwards st's declaration.
func (c *countingStore) Capabilities() store.Capabilities { return c.st.Capabilities() }

// StoreID forwards st's (not counted: it makes no call).
func (c *countingStore) StoreID() string {
	if id, ok := store.IdentifierOf(c.st); ok {
		return id.StoreID()
	}
	return ""
}

// StoreTime counts and forwards st's.
func (c *countingStore) StoreTime(ctx context.Context) (time.Time, error) {
	ts, ok := store.TimeSourceOf(c.st)
	if !ok {
		return time.Time{}, storedriver.Unsupported(store.CapStoreTime)
	}
	c.read(0)
	return ts.StoreTime(ctx)
}

// FeedInOrder forwards st's (not counted: it makes no call).
func (c *countingStore) FeedInOrder() bool { return store.OrderedFeedOf(c.st) }

// HeldThrough counts and forwards st's.
func (c *countingStore) HeldThrough(ctx context.Context, session, after string, limit int) ([]store.Record, error) {
	h, ok := store.SucceederOf(c.st)
	if !ok {
		return nil, storedriver.Unsupported(store.CapSuccession)
	}
	c.read(0)
	return h.HeldThrough(ctx, session, after, limit)
}

// Settle counts and forwards st's.
func (c *countingStore) Settle(ctx context.Context, session string, limit int) (int, error) {
	h, ok := store.SucceederOf(c.st)
	if !ok {
		return 0, storedriver.Unsupported(store.CapSuccession)
	}
	c.write(0)
	return h.Settle(ctx, session, limit)
}

// countingStore counts and forwards the methods of store.Store.
type countingStore struct {
	st store.Store
	n  *storeCounts
}

func (c *countingStore) read(records int) {
	c.n.readCalls.Add(1)
	c.n.recordsRead.Add(int64(records))
}

func (c *countingStore) write(records int) {
	c.n.writeCalls.Add(1)
	c.n.recordsWritten.Add(int64(records))
}

func (c *countingStore) Get(ctx context.Context, name string) (store.Record, error) {
	c.read(1)
	return c.st.Get(ctx, name)
}

func (c *countingStore) Swap(ctx context.Context, s store.Swap) (store.Record, error) {
	c.write(1)
	return c.st.Swap(ctx, s)
}

func (c *countingStore) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	c.read(0)
	return c.st.History(ctx, name, after, limit)
}

func (c *countingStore) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	c.write(0)
	return c.st.EnsureJob(ctx, j)
}

func (c *countingStore) GetJob(ctx context.Context, name string) (store.Job, error) {
	c.read(0)
	return c.st.GetJob(ctx, name)
}

func (c *countingStore) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	c.read(0)
	return c.st.GetRun(ctx, job, period)
}

func (c *countingStore) SwapRun(ctx context.Context, s store.RunSwap) (store.Run, error) {
	c.write(0)
	return c.st.SwapRun(ctx, s)
}

func (c *countingStore) Runs(ctx context.Context, job string, after string, limit int) ([]store.Run, error) {
	c.read(0)
	return c.st.Runs(ctx, job, after, limit)
}

func (c *countingStore) RecentRuns(ctx context.Context, job string, before string, limit int) ([]store.Run, error) {
	c.read(0)
	return c.st.RecentRuns(ctx, job, before, limit)
}

func (c *countingStore) PruneRuns(ctx context.Context, p store.Prune) (int, error) {
	c.write(0)
	return c.st.PruneRuns(ctx, p)
}

func (c *countingStore) UpdateJob(ctx context.Context, u store.JobUpdate) (store.Job, error) {
	c.write(0)
	return c.st.UpdateJob(ctx, u)
}

func (c *countingStore) Heartbeat(ctx context.Context, cand store.Candidate) error {
	c.write(0)
	return c.st.Heartbeat(ctx, cand)
}

func (c *countingStore) Candidates(ctx context.Context, name string) ([]store.Candidate, error) {
	c.read(0)
	return c.st.Candidates(ctx, name)
}

func (c *countingStore) Close() error { return c.st.Close() }

func (c *countingStore) GetMany(ctx context.Context, names []string) ([]store.GetResult, error) {
	c.read(len(names))
	return c.st.GetMany(ctx, names)
}

func (c *countingStore) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	c.write(len(swaps))
	return c.st.SwapMany(ctx, swaps)
}

func (c *countingStore) WatchChanges(ctx context.Context) <-chan []store.Change {
	c.n.watches.Add(1)
	return c.st.WatchChanges(ctx)
}

func (c *countingStore) Names(ctx context.Context) ([]string, error) {
	c.read(0)
	return c.st.Names(ctx)
}

func (c *countingStore) NamesPage(ctx context.Context, q store.NameQuery) ([]string, error) {
	c.read(0)
	return c.st.NamesPage(ctx, q)
}

func (c *countingStore) CountHolders(ctx context.Context, now time.Time) ([]store.HolderCount, int, error) {
	c.read(0)
	return c.st.CountHolders(ctx, now)
}

func (c *countingStore) DeleteSession(ctx context.Context, name string, expect int64) error {
	c.write(1)
	return c.st.DeleteSession(ctx, name, expect)
}

func (c *countingStore) SuspendJob(ctx context.Context, s store.JobSuspend) (store.Job, error) {
	c.write(0)
	return c.st.SuspendJob(ctx, s)
}

func (c *countingStore) PreferJob(ctx context.Context, p store.JobPrefer) (store.Job, error) {
	c.write(0)
	return c.st.PreferJob(ctx, p)
}
