package memstore

import (
	"context"
	"fmt"
	"sort"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// EnsureJob implements store.Store.
func (s *Store) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	return s.Client("").EnsureJob(ctx, j)
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	return s.Client("").GetRun(ctx, job, period)
}

// SwapRun implements store.Store.
func (s *Store) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	return s.Client("").SwapRun(ctx, sw)
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	return s.Client("").Runs(ctx, job, after, limit)
}
func (c *client) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	if j.Name == "" {
		return store.Job{}, fmt.Errorf("%w: empty job name", store.ErrInvalid)
	}
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Job{}, err
	}
	c.s.mu.Lock()
	got, ok := c.s.jobs[j.Name]
	if !ok {
		j.Created = c.s.now()
		c.s.jobs[j.Name] = j
		got = j
	}
	c.s.mu.Unlock()
	return got, c.s.leave(ctx, c.node)
}

func (c *client) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Run{}, err
	}
	c.s.mu.Lock()
	r, ok := c.s.runs[job][period]
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return store.Run{}, err
	}
	if !ok {
		return store.Run{}, fmt.Errorf("run %s/%s: %w", job, period, store.ErrNotFound)
	}
	return r, nil
}

func (c *client) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Run{}, err
	}
	c.s.mu.Lock()
	r, err := c.s.swapRunLocked(sw)
	c.s.mu.Unlock()
	if lerr := c.s.leave(ctx, c.node); lerr != nil {
		return store.Run{}, lerr
	}
	return r, err
}

func (s *Store) swapRunLocked(sw store.RunSwap) (store.Run, error) {
	cur := s.runs[sw.Run.Job][sw.Run.Period]
	if err := storedriver.CheckRunSwap(cur, sw, s.records[sw.Run.Job].Token); err != nil {
		return store.Run{}, err
	}
	s.version++
	r := sw.Run
	r.Version = s.version
	if s.runs[r.Job] == nil {
		s.runs[r.Job] = map[string]store.Run{}
	}
	s.runs[r.Job][r.Period] = r
	return r, nil
}

func (c *client) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	var out []store.Run
	for p, r := range c.s.runs[job] {
		if p > after {
			out = append(out, r)
		}
	}
	c.s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Period < out[j].Period })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, c.s.leave(ctx, c.node)
}
