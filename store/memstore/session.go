package memstore

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/store"
)

var (
	_ store.SessionDeleter = (*Store)(nil)
	_ store.SessionDeleter = (*client)(nil)
)

// DeleteSession implements store.SessionDeleter.
func (s *Store) DeleteSession(ctx context.Context, name string, expect int64) error {
	return s.Client("").(store.SessionDeleter).DeleteSession(ctx, name, expect)
}

// DeleteSession implements store.SessionDeleter.
func (c *client) DeleteSession(ctx context.Context, name string, expect int64) error {
	if err := c.s.enter(ctx, c.node); err != nil {
		return err
	}
	c.s.mu.Lock()
	err := c.s.deleteSessionLocked(name, expect)
	c.s.mu.Unlock()
	if lerr := c.s.leave(ctx, c.node); lerr != nil {
		return lerr
	}
	return err
}

func (s *Store) deleteSessionLocked(name string, expect int64) error {
	if !store.IsSession(name) {
		return fmt.Errorf("delete %q: %w: not a session record", name, store.ErrInvalid)
	}
	rec, ok := s.records[name]
	switch {
	case !ok:
		return fmt.Errorf("delete %q: %w", name, store.ErrNotFound)
	case rec.Version != expect:
		return fmt.Errorf("delete %q: %w", name, store.ErrConflict)
	case !rec.Free():
		return fmt.Errorf("delete %q: %w: the session is held (only dead sessions are deleted)", name, store.ErrInvalid)
	}
	delete(s.records, name)
	return nil
}
