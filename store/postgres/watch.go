package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// listenPing is how long the listening connection may stay silent before
// it is pinged, so that a dead server or network is noticed.
const listenPing = 30 * time.Second

// listener is the one connection of a Store that LISTENs on the store's
// channel. It runs while at least one watch is open and fans each
// notification out to the watches of the name it carries.
//
// When the connection cannot be opened or breaks, the listener closes all
// its watches and exits: a caller sees its channel closed and falls back
// to polling, and a later Watch starts a new listener. There is no silent
// reconnection, because notifications sent while no connection listened
// are lost, and a caller that was told nothing would not know to re-read.
type listener struct {
	s      *Store
	cancel context.CancelFunc
	done   chan struct{}
	subs   map[string]map[*watch]struct{} // guarded by s.mu
}

// watch is one Watch call's subscription.
type watch struct {
	name   string
	ch     chan struct{}
	l      *listener
	closed bool        // guarded by s.mu
	stop   func() bool // stops the context.AfterFunc
}

// Watch implements store.Watcher with PostgreSQL's LISTEN/NOTIFY: every
// applied swap notifies on commit. All watches of a Store share one
// dedicated connection, opened by the first Watch and closed when the last
// watch ends. Right after that connection starts listening, each of its
// watches receives one notification, so that a change made between the
// caller's last read and the LISTEN is not missed. The channel is closed
// when ctx ends, when the Store is closed, or when the listening
// connection cannot be opened or breaks; callers keep polling as the
// fallback either way.
func (s *Store) Watch(ctx context.Context, name string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || ctx.Err() != nil {
		close(ch)
		return ch
	}
	l := s.watcher
	if l == nil {
		l = s.startListener()
		s.watcher = l
	}
	w := &watch{name: name, ch: ch, l: l}
	if l.subs[name] == nil {
		l.subs[name] = map[*watch]struct{}{}
	}
	l.subs[name][w] = struct{}{}
	// The function runs in its own goroutine, so holding s.mu here is safe.
	w.stop = context.AfterFunc(ctx, func() { s.endWatch(w) })
	return ch
}

// endWatch closes w when its ctx ends, and stops the listener when w was
// its last watch.
func (s *Store) endWatch(w *watch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	close(w.ch)
	l := w.l
	delete(l.subs[w.name], w)
	if len(l.subs[w.name]) == 0 {
		delete(l.subs, w.name)
	}
	if len(l.subs) == 0 && s.watcher == l {
		s.watcher = nil
		l.cancel()
	}
}

// startListener starts a listener; s.mu must be held.
func (s *Store) startListener() *listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{s: s, cancel: cancel, done: make(chan struct{}), subs: map[string]map[*watch]struct{}{}}
	go l.run(ctx)
	return l
}

// stop ends the listener and waits for it to close its watches.
func (l *listener) stop() {
	l.cancel()
	<-l.done
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	defer l.closeWatches()

	cfg := l.s.pool.Config().ConnConfig
	// On a timeout, set a deadline on the socket instead of sending a
	// cancel request: the periodic wake-up below must leave the
	// connection usable, and a late cancel request could hit the ping.
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.s.channel}.Sanitize()); err != nil {
		return
	}
	l.notify("", true)
	for {
		wctx, cancel := context.WithTimeout(ctx, listenPing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			l.notify(n.Payload, n.Payload == "")
			continue
		case ctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = conn.Ping(pctx)
			cancel()
			if err == nil {
				continue
			}
		}
		return // the connection broke
	}
}

// notify wakes the watches of name, or all of them.
func (l *listener) notify(name string, all bool) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	for n, ws := range l.subs {
		if !all && n != name {
			continue
		}
		for w := range ws {
			select {
			case w.ch <- struct{}{}:
			default: // one pending value is enough
			}
		}
	}
}

// closeWatches closes every watch of the listener, which is exiting.
func (l *listener) closeWatches() {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ws := range l.subs {
		for w := range ws {
			w.closed = true
			close(w.ch)
			w.stop()
		}
	}
	l.subs = map[string]map[*watch]struct{}{}
	if s.watcher == l {
		s.watcher = nil
	}
}
