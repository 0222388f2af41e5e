package kube

import (
	"context"
	"encoding/json"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/batonhq/baton/store"
)

// WatchChanges implements store.Store with a watch of the namespace's
// baton Leases, started at the resourceVersion of a list made in the call,
// so that every write after the call is delivered. Each event names the
// record and its version as the object then held it. The channel closes
// when the watch ends for any reason (410 Gone after a compaction, a
// restarted API server, a dropped connection, ctx): the caller reads
// again what it follows and may watch again.
func (s *Store) WatchChanges(ctx context.Context) <-chan []store.Change {
	out := make(chan []store.Change, 16)
	list, err := s.leases.List(ctx, metav1.ListOptions{LabelSelector: labelSelector, Limit: 1})
	if err != nil {
		close(out)
		return out
	}
	w, err := s.leases.Watch(ctx, metav1.ListOptions{LabelSelector: labelSelector, ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: false})
	if err != nil {
		close(out)
		return out
	}
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				l, isLease := ev.Object.(*coordinationv1.Lease)
				if ev.Type == watch.Error || !isLease {
					return // 410 Gone and the like: the feed can no longer tell
				}
				c, ok := change(l)
				if !ok {
					continue
				}
				select {
				case out <- []store.Change{c}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// change is the feed's entry of a written Lease, ok false if it holds no
// name.
func change(l *coordinationv1.Lease) (store.Change, bool) {
	var head struct {
		Name string `json:"name"`
	}
	if json.Unmarshal([]byte(l.Annotations[annotState]), &head) != nil || head.Name == "" {
		return store.Change{}, false
	}
	o, err := decode(head.Name, l)
	if err != nil {
		return store.Change{Name: head.Name}, true
	}
	return store.Change{Name: head.Name, Version: max(o.recVersion(), 0)}, true
}
