package electortest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/store"
)

// Cuttable wraps a store handle so that a test can cut the node off from
// the store and heal it again, whatever the backend: while cut, every call
// fails with store.ErrUnavailable without reaching the store, as for a
// node behind a broken network.
type Cuttable interface {
	store.Store
	// Cut makes every later call fail (on) or pass again (off).
	Cut(on bool)
}

// NewCuttable wraps st. Its change feed (WatchChanges) is st's, cut or
// not: a cut stops calls, and a test that wants the feed to break too
// ends the context it watches with.
func NewCuttable(st store.Store) Cuttable { return &cuttable{inner: st} }

type cuttable struct {
	inner store.Store
	cut   atomic.Bool
}

func (c *cuttable) Cut(on bool) { c.cut.Store(on) }

// Capabilities declares none of the optional capabilities: the wrapper
// forwards none of their methods, so a Group on it takes names over one
// at a time, with an unordered feed, whatever the inner store offers.
func (c *cuttable) Capabilities() store.Capabilities { return 0 }

func (c *cuttable) check() error {
	if c.cut.Load() {
		return fmt.Errorf("%w: cut off from the store by the test", store.ErrUnavailable)
	}
	return nil
}

func (c *cuttable) Get(ctx context.Context, name string) (store.Record, error) {
	if err := c.check(); err != nil {
		return store.Record{}, err
	}
	return c.inner.Get(ctx, name)
}

func (c *cuttable) Swap(ctx context.Context, s store.Swap) (store.Record, error) {
	if err := c.check(); err != nil {
		return store.Record{}, err
	}
	return c.inner.Swap(ctx, s)
}

func (c *cuttable) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.inner.History(ctx, name, after, limit)
}

func (c *cuttable) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	if err := c.check(); err != nil {
		return store.Job{}, err
	}
	return c.inner.EnsureJob(ctx, j)
}

func (c *cuttable) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	if err := c.check(); err != nil {
		return store.Run{}, err
	}
	return c.inner.GetRun(ctx, job, period)
}

func (c *cuttable) SwapRun(ctx context.Context, s store.RunSwap) (store.Run, error) {
	if err := c.check(); err != nil {
		return store.Run{}, err
	}
	return c.inner.SwapRun(ctx, s)
}

func (c *cuttable) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.inner.Runs(ctx, job, after, limit)
}

func (c *cuttable) Close() error { return c.inner.Close() }

func (c *cuttable) GetJob(ctx context.Context, name string) (store.Job, error) {
	if err := c.check(); err != nil {
		return store.Job{}, err
	}
	return c.inner.GetJob(ctx, name)
}

func (c *cuttable) RecentRuns(ctx context.Context, job, before string, limit int) ([]store.Run, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.inner.RecentRuns(ctx, job, before, limit)
}

func (c *cuttable) PruneRuns(ctx context.Context, p store.Prune) (int, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	return c.inner.PruneRuns(ctx, p)
}

func (c *cuttable) UpdateJob(ctx context.Context, u store.JobUpdate) (store.Job, error) {
	if err := c.check(); err != nil {
		return store.Job{}, err
	}
	return c.inner.UpdateJob(ctx, u)
}

func (c *cuttable) Heartbeat(ctx context.Context, cand store.Candidate) error {
	if err := c.check(); err != nil {
		return err
	}
	return c.inner.Heartbeat(ctx, cand)
}

func (c *cuttable) Candidates(ctx context.Context, name string) ([]store.Candidate, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.inner.Candidates(ctx, name)
}

func (c *cuttable) GetMany(ctx context.Context, names []string) ([]store.GetResult, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.inner.GetMany(ctx, names)
}

func (c *cuttable) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.inner.SwapMany(ctx, swaps)
}

func (c *cuttable) WatchChanges(ctx context.Context) <-chan []store.Change {
	return c.inner.WatchChanges(ctx)
}

func (c *cuttable) Names(ctx context.Context) ([]string, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.inner.Names(ctx)
}

func (c *cuttable) NamesPage(ctx context.Context, q store.NameQuery) ([]string, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.inner.NamesPage(ctx, q)
}

func (c *cuttable) CountHolders(ctx context.Context, now time.Time) ([]store.HolderCount, int, error) {
	if err := c.check(); err != nil {
		return nil, 0, err
	}
	return c.inner.CountHolders(ctx, now)
}

func (c *cuttable) DeleteSession(ctx context.Context, name string, expect int64) error {
	if err := c.check(); err != nil {
		return err
	}
	return c.inner.DeleteSession(ctx, name, expect)
}

func (c *cuttable) SuspendJob(ctx context.Context, s store.JobSuspend) (store.Job, error) {
	if err := c.check(); err != nil {
		return store.Job{}, err
	}
	return c.inner.SuspendJob(ctx, s)
}

func (c *cuttable) PreferJob(ctx context.Context, p store.JobPrefer) (store.Job, error) {
	if err := c.check(); err != nil {
		return store.Job{}, err
	}
	return c.inner.PreferJob(ctx, p)
}
