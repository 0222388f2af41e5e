package memstore

import (
	"context"
	"slices"

	"github.com/batonhq/baton/store"
)

var (
	_ store.Lister = (*Store)(nil)
	_ store.Lister = (*client)(nil)
)

// Names implements store.Lister.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	return s.Client("").(store.Lister).Names(ctx)
}

// Names implements store.Lister; session records are not names.
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
