package memstore

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, name string) (store.Record, error) {
	return s.Client("").Get(ctx, name)
}

// Swap implements store.Store.
func (s *Store) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	return s.Client("").Swap(ctx, sw)
}

// SwapMany implements store.BatchSwapper.
func (s *Store) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	return s.Client("").(store.BatchSwapper).SwapMany(ctx, swaps)
}

// History implements store.Store.
func (s *Store) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	return s.Client("").History(ctx, name, after, limit)
}

// swapLocked applies one swap; s.mu must be held.
func (s *Store) swapLocked(sw store.Swap) (store.Record, error) {
	cur := s.records[sw.Record.Name]
	if err := storedriver.CheckSwap(cur, sw); err != nil {
		return store.Record{}, err
	}
	s.version++
	rec := sw.Record
	rec.Version = s.version
	rec.Updated = s.now()
	s.records[rec.Name] = rec
	if sw.Event != "" {
		log := s.logs[rec.Name]
		s.logs[rec.Name] = append(log, storedriver.NextEvent(uint64(len(log))+1, rec, sw.Event))
	}
	for _, ch := range s.watches[rec.Name] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return rec, nil
}
func (c *client) Get(ctx context.Context, name string) (store.Record, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Record{}, err
	}
	c.s.mu.Lock()
	rec, ok := c.s.records[name]
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return store.Record{}, err
	}
	if !ok {
		return store.Record{}, fmt.Errorf("election %q: %w", name, store.ErrNotFound)
	}
	return rec, nil
}

func (c *client) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Record{}, err
	}
	c.s.mu.Lock()
	rec, err := c.s.swapLocked(sw)
	c.s.mu.Unlock()
	if lerr := c.s.leave(ctx, c.node); lerr != nil {
		return store.Record{}, lerr
	}
	return rec, err
}

func (c *client) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	res := make([]store.SwapResult, len(swaps))
	for i, sw := range swaps {
		res[i].Record, res[i].Err = c.s.swapLocked(sw)
	}
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return nil, err
	}
	return res, nil
}

func (c *client) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	var out []store.Event
	for _, ev := range c.s.logs[name] {
		if ev.Seq > after && (limit <= 0 || len(out) < limit) {
			out = append(out, ev)
		}
	}
	c.s.mu.Unlock()
	return out, c.s.leave(ctx, c.node)
}
