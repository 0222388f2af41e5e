package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// hub holds a Store's watches. One poller goroutine serves all of them
// while there is at least one.
type hub struct {
	mu      sync.Mutex
	subs    map[*sub]struct{}
	running bool
}

// sub is one Watch call.
type sub struct {
	name   string
	ch     chan struct{}
	last   int64 // record version last seen; written by Watch before registration, then by the poller only
	closed bool  // guarded by hub.mu
}

// Watch implements store.Watcher with a fast poll, since SQLite has no
// notification between processes: one goroutine per Store reads
// PRAGMA data_version on a dedicated connection every watch interval
// (DefaultWatchInterval unless WithWatchInterval says otherwise). That
// number changes only when another connection, in this process or another,
// commits to the file, so an idle poll is one cheap statement. When it
// changes, the poller reads the versions of the watched records and
// notifies the watches whose record changed.
//
// The channel is closed when ctx ends, when the store is closed, or when
// the poll fails (the watch is broken; callers keep polling anyway).
func (s *Store) Watch(ctx context.Context, name string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	if s.enter(ctx, "watch") != nil {
		close(ch)
		return ch
	}
	rec, _, err := getRecord(ctx, s.db, name)
	if err != nil {
		close(ch)
		return ch
	}
	w := &sub{name: name, ch: ch, last: rec.Version}
	h := &s.hub
	h.mu.Lock()
	if s.closed.Load() {
		h.mu.Unlock()
		close(ch)
		return ch
	}
	h.subs[w] = struct{}{}
	if !h.running {
		h.running = true
		s.pollers.Add(1)
		go s.poll()
	}
	h.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		h.mu.Lock()
		h.drop(w)
		h.mu.Unlock()
	}()
	return ch
}

// drop unregisters w and closes its channel; h.mu must be held.
func (h *hub) drop(w *sub) {
	delete(h.subs, w)
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
}

// closeAll ends every watch.
func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.subs {
		h.drop(w)
	}
}

// poll serves the hub until no watch is left, the store is closed or a
// poll fails.
func (s *Store) poll() {
	defer s.pollers.Done()
	h := &s.hub
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	broken := func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.running = false
		for w := range h.subs {
			h.drop(w)
		}
	}
	// The connection is the poller's own: data_version counts commits by
	// other connections only, so it must never write.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		broken()
		return
	}
	defer conn.Close()
	t := time.NewTicker(s.cfg.watchInterval)
	defer t.Stop()
	seen := int64(-1)
	for {
		h.mu.Lock()
		if len(h.subs) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()

		var dv int64
		if err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&dv); err != nil {
			broken()
			return
		}
		if dv != seen {
			seen = dv
			if err := s.notify(ctx, conn); err != nil {
				broken()
				return
			}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			broken()
			return
		}
	}
}

// notify reads the version of every watched record and signals the watches
// whose record changed since they last saw it.
func (s *Store) notify(ctx context.Context, conn *sql.Conn) error {
	h := &s.hub
	h.mu.Lock()
	subs := make([]*sub, 0, len(h.subs))
	for w := range h.subs {
		subs = append(subs, w)
	}
	h.mu.Unlock()
	versions := map[string]int64{}
	for _, w := range subs {
		if _, ok := versions[w.name]; ok {
			continue
		}
		rec, _, err := getRecord(ctx, conn, w.name)
		if err != nil {
			return err
		}
		versions[w.name] = rec.Version
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range subs {
		if v := versions[w.name]; v != w.last {
			w.last = v
			if !w.closed {
				select {
				case w.ch <- struct{}{}:
				default:
				}
			}
		}
	}
	return nil
}
