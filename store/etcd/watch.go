package etcd

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
)

// A Store handle follows its election records with at most one etcd watch,
// on the records' key prefix, however many callers watch: every
// WatchChanges feed rides on it. The watch starts with the first feed and
// ends with the last; per event it costs one entry per feed, whatever the
// number of records stored or watched. An etcd watch per name followed
// would be, for 100,000 names, 100,000 watchers on the members and 100,000
// goroutines here.
//
// The watch requires a leader: a member that loses its quorum ends it
// (after a few election timeouts). When the watch ends for any reason (no
// leader, a compacted revision, a closed client), every channel riding on
// it closes, and the next watcher starts a new one.

// hub is the handle's one watch; its zero value has none running.
type hub struct {
	mu  sync.Mutex
	cur *watch // nil: no watch running
}

// watch is one etcd watch on the records' prefix and its subscribers.
// Its fields are guarded by the hub's mu.
type watch struct {
	cancel context.CancelFunc
	ready  chan struct{} // closed when the member confirmed the watch
	done   chan struct{} // closed when the watch ended
	ended  bool
	users  int
	feeds  map[*feed]struct{}
}

// feed is one WatchChanges subscriber: the records changed since its last
// batch, each at the newest version seen, and a signal that there are
// some.
type feed struct {
	pending map[string]int64
	signal  chan struct{}
}

// join returns the running watch, starting one if there is none, with
// one more user; s.feed.mu must be held.
func (s *Store) join() *watch {
	h := &s.feed
	if w := h.cur; w != nil {
		w.users++
		return w
	}
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	w := &watch{
		cancel: cancel,
		ready:  make(chan struct{}),
		done:   make(chan struct{}),
		users:  1,
		feeds:  map[*feed]struct{}{},
	}
	h.cur = w
	dir := s.keys.prefix + "e/"
	wch := s.cli.Watch(ctx, dir, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	go s.follow(w, dir, wch)
	return w
}

// leave drops one user of w, ending the watch with the last; s.feed.mu
// must be held.
func (s *Store) leave(w *watch) {
	w.users--
	if w.users == 0 && !w.ended {
		w.ended = true
		if s.feed.cur == w {
			s.feed.cur = nil
		}
		w.cancel()
	}
}

// follow dispatches the events of w's etcd watch until it ends, then
// closes w.done, which ends every feed riding on it.
func (s *Store) follow(w *watch, dir string, wch clientv3.WatchChan) {
	h := &s.feed
	created := false
	for resp := range wch {
		if resp.Canceled || resp.Err() != nil {
			break
		}
		if resp.Created && !created {
			created = true
			close(w.ready)
		}
		if len(resp.Events) == 0 {
			continue
		}
		h.mu.Lock()
		for _, ev := range resp.Events {
			name, err := url.PathUnescape(strings.TrimPrefix(string(ev.Kv.Key), dir))
			if err != nil {
				continue // not a record's key; nothing follows it
			}
			v := feedVersion(ev.Kv)
			for f := range w.feeds {
				f.pending[name] = max(f.pending[name], v)
				select {
				case f.signal <- struct{}{}:
				default:
				}
			}
		}
		h.mu.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == w {
		h.cur = nil
	}
	w.ended = true
	w.cancel()
	close(w.done)
}

// WatchChanges implements store.Store on the handle's one watch of
// the election records (see hub): every election record written after
// WatchChanges returns is named in a batch, session records included. It
// returns when the member has confirmed the watch (at most the request
// timeout; a channel that is closed already means it could not). The
// channel closes when ctx ends, the store is closed, or the watch ends:
// no leader, or a revision the watch needed was compacted (a feed far
// behind). The caller then re-reads what it follows and watches again.
func (s *Store) WatchChanges(ctx context.Context) <-chan []store.Change {
	out := make(chan []store.Change)
	f := &feed{pending: map[string]int64{}, signal: make(chan struct{}, 1)}
	s.feed.mu.Lock()
	w := s.join()
	w.feeds[f] = struct{}{}
	s.feed.mu.Unlock()
	quit := func() {
		s.feed.mu.Lock()
		delete(w.feeds, f)
		s.leave(w)
		s.feed.mu.Unlock()
	}
	// A watch the member has confirmed reports every write after its
	// start; events after this point reach f, which is subscribed already.
	t := time.NewTimer(s.cfg.requestTimeout)
	defer t.Stop()
	select {
	case <-w.ready:
	case <-w.done:
	case <-ctx.Done():
	case <-t.C:
	}
	select {
	case <-w.ready:
	default:
		quit()
		close(out)
		return out
	}
	go func() {
		defer close(out)
		defer quit()
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.done:
				return
			case <-f.signal:
			}
			s.feed.mu.Lock()
			batch := make([]store.Change, 0, len(f.pending))
			through := int64(0)
			for n, v := range f.pending {
				batch = append(batch, store.Change{Name: n, Version: v})
				through = max(through, v)
			}
			clear(f.pending)
			s.feed.mu.Unlock()
			if len(batch) == 0 {
				continue // taken with the batch before this signal
			}
			batch[len(batch)-1].Through = through // see FeedInOrder
			select {
			case out <- batch:
			case <-ctx.Done():
				return
			case <-w.done:
				return
			}
		}
	}()
	return out
}

// feedVersion is the Version a record has after the write kv: its
// ModRevision, or the version a settled record stands for (Settle's write
// changes no version a reader sees; see doc.go, "Successions").
func feedVersion(kv *mvccpb.KeyValue) int64 {
	if !bytes.Contains(kv.Value, []byte(`"pin":`)) {
		return kv.ModRevision
	}
	var v struct {
		Pin int64 `json:"pin"`
	}
	if json.Unmarshal(kv.Value, &v) != nil || v.Pin <= 0 || v.Pin >= kv.ModRevision {
		return kv.ModRevision
	}
	return v.Pin
}

// FeedInOrder implements store.OrderedFeed: an etcd watch reports events
// in revision order, follow adds them to every feed in that order under
// the hub's lock, and a batch is what was added until it is handed out,
// so a batch that names revision v comes after every event up to v: its
// largest version is its Through. A version a feed reports is the
// write's revision, or less for a settled record (feedVersion), never
// more.
func (s *Store) FeedInOrder() bool { return true }
