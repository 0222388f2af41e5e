package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// Names implements store.Store.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	return s.own().Names(ctx)
}

// Names implements store.Store; session records are not names.
func (c *client) Names(ctx context.Context) ([]string, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	var names []string
	for n := range c.s.records {
		if !store.IsSession(n) {
			names = append(names, n)
		}
	}
	for n := range c.s.jobs {
		names = append(names, n)
	}
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return nil, err
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// NamesPage implements store.Store, in byte order of the names. The
// reference backend sorts every name: its cost is not bounded.
func (s *Store) NamesPage(ctx context.Context, q store.NameQuery) ([]string, error) {
	return s.own().NamesPage(ctx, q)
}

// NamesPage implements store.Store.
func (c *client) NamesPage(ctx context.Context, q store.NameQuery) ([]string, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	all, err := c.Names(ctx)
	if err != nil {
		return nil, err
	}
	if store.IsSession(q.Prefix) {
		c.s.mu.Lock()
		all = all[:0]
		for n := range c.s.records {
			if store.IsSession(n) {
				all = append(all, n)
			}
		}
		c.s.mu.Unlock()
		slices.Sort(all)
	}
	return storedriver.Page(all, q)
}

// CountHolders implements store.Store.
func (s *Store) CountHolders(ctx context.Context, now time.Time) ([]store.HolderCount, int, error) {
	return s.own().CountHolders(ctx, now)
}

// CountHolders implements store.Store.
func (c *client) CountHolders(ctx context.Context, now time.Time) ([]store.HolderCount, int, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, 0, err
	}
	var h storedriver.Holders
	c.s.mu.Lock()
	for n := range c.s.records {
		if !store.IsSession(n) {
			r, _, err := c.s.resolveLocked(n)
			if err != nil {
				c.s.mu.Unlock()
				return nil, 0, err
			}
			h.Add(r, now)
		}
	}
	jobs := 0
	for n := range c.s.jobs {
		if c.s.records[n] == nil {
			jobs++
		}
	}
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return nil, 0, err
	}
	return h.Counts(), jobs, nil
}
