package memstore

import (
	"context"

	"github.com/batonhq/baton/store"
)

// Watch implements store.Watcher.
func (s *Store) Watch(ctx context.Context, name string) <-chan struct{} {
	return s.Client("").(store.Watcher).Watch(ctx, name)
}
func (c *client) Watch(ctx context.Context, name string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	c.s.mu.Lock()
	c.s.watches[name] = append(c.s.watches[name], ch)
	c.s.mu.Unlock()
	go func() {
		<-ctx.Done()
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		w := c.s.watches[name]
		for i := range w {
			if w[i] == ch {
				c.s.watches[name] = append(w[:i:i], w[i+1:]...)
				break
			}
		}
		close(ch)
	}()
	return ch
}

// notifyLocked wakes the watches of name; s.mu must be held.
func (s *Store) notifyLocked(name string) {
	for _, ch := range s.watches[name] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
