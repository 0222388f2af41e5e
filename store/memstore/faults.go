package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/store"
)

// SetUnreachable makes every call through Client(node) fail with
// store.ErrUnavailable while on is true, as if the node were cut off.
func (s *Store) SetUnreachable(node string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults[node]
	f.unreachable = on
	s.faults[node] = f
	s.touched.Store(true)
}

// SetDelay makes every call through Client(node) wait d before it is
// served (and d again before its reply is returned), honouring the call's
// context.
func (s *Store) SetDelay(node string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults[node]
	f.delay = d
	s.faults[node] = f
	s.touched.Store(true)
}

// SetError makes every call through Client(node) fail with err (nil
// clears it), checked before any other fault: for example an error
// wrapping store.ErrReplaced, as a node sees a store that was deleted or
// replaced under it.
func (s *Store) SetError(node string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults[node]
	f.err = err
	s.faults[node] = f
	s.touched.Store(true)
}

func (s *Store) enter(ctx context.Context, node string) error {
	if !s.touched.Load() { // no fault set, not closed: the context alone
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		return nil
	}
	s.mu.Lock()
	f, closed := s.faults[node], s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("%w: memstore is closed", store.ErrUnavailable)
	}
	if f.err != nil {
		return f.err
	}
	if f.delay > 0 {
		t := time.NewTimer(f.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", store.ErrUnavailable, ctx.Err())
		}
	}
	if f.unreachable {
		return fmt.Errorf("%w: node %s cannot reach the store (fault injected)", store.ErrUnavailable, node)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return nil
}

// serve runs one call of c: enter's faults, fn under the store's lock,
// then leave's faults, whose error wins over fn's result. On any error the
// result is T's zero value.
func serve[T any](ctx context.Context, c *client, fn func() (T, error)) (T, error) {
	var zero T
	if err := c.s.enter(ctx, c.node); err != nil {
		return zero, err
	}
	c.s.mu.Lock()
	v, err := fn()
	c.s.mu.Unlock()
	if lerr := c.s.leave(ctx, c.node); lerr != nil {
		return zero, lerr
	}
	if err != nil {
		return zero, err
	}
	return v, nil
}

// leave applies the reply half of a delay and the unreachable fault to a
// call that was served: a node cut off while its call was in flight never
// hears the answer, though the write may have been applied. With no fault
// ever set and the store open there is nothing to apply: the answer
// stands, as a served call's does in any store (its context was checked
// on entry, and an in-memory call takes no time to be cancelled in).
func (s *Store) leave(ctx context.Context, node string) error {
	if !s.touched.Load() {
		return nil
	}
	return s.enter(ctx, node)
}
