package memstore

import (
	"context"
	"time"

	"github.com/batonhq/baton/store"
)

var _ store.TimeSource = (*client)(nil)

// StoreTime implements store.TimeSource: the store's time (WithTime), the
// virtual clock in the drill and the simulator.
func (s *Store) StoreTime(ctx context.Context) (time.Time, error) {
	return s.Client("").(store.TimeSource).StoreTime(ctx)
}

// StoreTime implements store.TimeSource for a node, with its faults.
func (c *client) StoreTime(ctx context.Context) (time.Time, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return time.Time{}, err
	}
	t := c.s.now()
	return t, c.s.leave(ctx, c.node)
}
