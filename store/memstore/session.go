package memstore

import (
	"context"

	"github.com/batonhq/baton/store/storedriver"
)

// DeleteSession implements store.Store.
func (s *Store) DeleteSession(ctx context.Context, name string, expect int64) error {
	return s.own().DeleteSession(ctx, name, expect)
}

// DeleteSession implements store.Store.
func (c *client) DeleteSession(ctx context.Context, name string, expect int64) error {
	_, err := serve(ctx, c, func() (struct{}, error) { return struct{}{}, c.s.deleteSessionLocked(name, expect) })
	return err
}

func (s *Store) deleteSessionLocked(name string, expect int64) error {
	cur, _ := s.stored(name)
	if err := storedriver.CheckDeleteSession(name, cur, expect); err != nil {
		return err
	}
	if cur.Successor != "" {
		if err := storedriver.CheckDeleteSucceeded(name, cur, s.referencedLocked(name)); err != nil {
			return err
		}
	}
	delete(s.records, name)
	return nil
}
