package memstore

import (
	"context"

	"github.com/batonhq/baton/store"
)

// WatchChanges implements store.Store.
func (s *Store) WatchChanges(ctx context.Context) <-chan []store.Change {
	return s.own().WatchChanges(ctx)
}

// feed is one WatchChanges subscriber: the changes since its last batch,
// and a signal that there are some.
type feed struct {
	pending []store.Change
	signal  chan struct{}
}

func (c *client) WatchChanges(ctx context.Context) <-chan []store.Change {
	out := make(chan []store.Change)
	f := &feed{signal: make(chan struct{}, 1)}
	c.s.mu.Lock()
	c.s.feeds[f] = struct{}{}
	c.s.mu.Unlock()
	go func() {
		defer close(out)
		defer func() {
			c.s.mu.Lock()
			delete(c.s.feeds, f)
			c.s.mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-f.signal:
			}
			c.s.mu.Lock()
			batch := f.pending
			f.pending = nil
			c.s.mu.Unlock()
			if n := len(batch); n > 0 {
				through := int64(0)
				for _, ch := range batch {
					through = max(through, ch.Version)
				}
				batch[n-1].Through = through // see FeedInOrder
			}
			select {
			case out <- batch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// notifyLocked tells the change feeds of name, written at version v; s.mu
// must be held.
func (s *Store) notifyLocked(name string, v int64) {
	if len(s.feeds) == 0 {
		return // most stores have no feed (a simulator's): no range over the map
	}
	for f := range s.feeds {
		f.pending = append(f.pending, store.Change{Name: name, Version: v})
		select {
		case f.signal <- struct{}{}:
		default:
		}
	}
}

// FeedInOrder implements store.OrderedFeed: versions come from one
// counter, and a write is appended to every feed under the lock that
// draws its version.
func (s *Store) FeedInOrder() bool { return true }

// FeedInOrder implements store.OrderedFeed, as Store's.
func (c *client) FeedInOrder() bool { return true }
