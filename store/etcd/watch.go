package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watch implements store.Watcher with an etcd watch on the record's key.
// The watch requires a leader: a member that loses its quorum ends it (after
// a few election timeouts), and the channel closes, so a contender on the
// minority side falls back to polling, which fails with ErrUnavailable. The
// channel also closes when ctx ends or the store is closed.
func (s *Store) Watch(ctx context.Context, name string) <-chan struct{} {
	out := make(chan struct{}, 1)
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	wch := s.cli.Watch(wctx, s.keys.record(name))
	go func() {
		defer close(out)
		defer cancel()
		for resp := range wch {
			if resp.Canceled || resp.Err() != nil {
				return
			}
			if len(resp.Events) > 0 {
				select {
				case out <- struct{}{}:
				default: // coalesced with the pending notification
				}
			}
		}
	}()
	return out
}
