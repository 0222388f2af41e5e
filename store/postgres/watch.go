package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/batonhq/baton/store"
)

// listenPing is how long the listening connection may stay silent before
// the listener reads the change feed anyway, so that a dead server or
// network is noticed.
const listenPing = 30 * time.Second

// readTimeout bounds one read of the change feed.
const readTimeout = 10 * time.Second

// How the change feed works.
//
// Every write of an election record sets the row's wxid column to the id
// of its transaction and sends one notification per transaction (swap_many:
// one for the whole batch), with no payload. The listener remembers a
// position: the xmax and the in-progress ids (xip) of the snapshot of its
// last read. A transaction whose writes were not visible in that snapshot
// was either in progress then (its id is in xip) or had no id yet (its id
// is at least xmax), so the next read, `wxid >= xmax OR wxid = ANY(xip)`
// on the wxid index, finds every record written since, whatever order the
// transactions committed in, and the rows of at most the transactions in
// progress at the last read once more. (A sequence number per write would
// not do: numbers are drawn in one order and committed in another, and a
// reader that saw number 10 committed can miss number 9 committing after
// it.) The cost of a read grows with the records written since the last
// one, not with the records stored or the feeds open.
//
// A session's renewal (storedriver.RenewsSession, statements.renewSession)
// leaves wxid as it was, so that it writes no index entry, and the read
// does not find it: its notification names the record and its new
// version instead (sessionPayloadTag), and the listener reports that. A
// swap of one record (swap_one, schema version 8) names the record it
// wrote and its version too (writePayloadTag), so a contender hears of a
// release without a read. A notification is delivered after its
// transaction committed, so the version it names is visible by then.
// Notifications whose payloads all name records need no read; the next
// read finds those writes again (their wxid is past the position), and
// names them once more, which a feed allows.
//
// How far the feed has reported (store.OrderedFeed, Change.Through): the
// largest version the listener's reads have found. A version found by a
// read is visible in that read's snapshot, so every transaction that
// committed before the write (or renewal) of that version drew it, and so
// before any write of a smaller version drew its own, is visible in the
// snapshot too, and the reads up to this one have named its writes. A
// version named by a notification's payload does not count: any session
// of the database may send a notification on the channel, and a forged
// one must not make the feed claim what it has not read (it can only
// make a reader read again). A succession's write notifies without a
// payload, so the read after it finds its version.

// sessionPayloadTag begins the payload of a session renewal's
// notification: the tag, the record's new version in decimal, a space and
// the record's name. swap_one's begins with writePayloadTag; every other
// notification's payload is notifyPayload
// (empty).
const sessionPayloadTag = "session-renewal "

// writePayloadTag begins the payload of swap_one's notification: the
// tag, the record's new version in decimal, a space and the record's
// name.
const writePayloadTag = "write "

// namedPayload parses a notification payload that names a record: a
// session renewal's (sessionPayloadTag, of a session record only) or
// swap_one's (writePayloadTag); ok is false for any other payload.
func namedPayload(p string) (c store.Change, ok bool) {
	rest, ok := strings.CutPrefix(p, sessionPayloadTag)
	session := ok
	if !ok {
		if rest, ok = strings.CutPrefix(p, writePayloadTag); !ok {
			return store.Change{}, false
		}
	}
	v, name, ok := strings.Cut(rest, " ")
	if !ok || name == "" || (session && !store.IsSession(name)) {
		return store.Change{}, false
	}
	version, err := strconv.ParseInt(v, 10, 64)
	if err != nil || version <= 0 {
		return store.Change{}, false
	}
	return store.Change{Name: name, Version: version}, true
}

// listener is the one connection of a Store that LISTENs on the store's
// channel. It runs while at least one change feed is open, reads the
// change feed after each notification, and fans the names it finds out to
// every feed.
//
// When the connection cannot be opened or breaks, the listener closes all
// its feeds and exits: a caller sees its channel closed and falls back to
// polling, and a later WatchChanges starts a new listener. There is
// no silent reconnection, because notifications sent while no connection
// listened are lost, and a caller that was told nothing would not know to
// re-read.
type listener struct {
	s      *Store
	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{} // closed when listening with a position, or on exit

	feeds map[*feed]struct{} // guarded by s.mu
	// through is the largest version the reads found (see "How far the
	// feed has reported"), raised with the feeds' pending names; guarded
	// by s.mu.
	through int64
}

// feed is one WatchChanges call's subscription: the records changed since
// its last batch, each at the newest version read (a map, so that it stays
// as small as the records changed), and a signal that there are some.
type feed struct {
	l       *listener
	out     chan []store.Change
	signal  chan struct{}
	pending map[string]int64 // guarded by s.mu
}

// WatchChanges implements store.Store. It returns once the Store's
// listening connection listens and has read its position in the feed
// (at once when it already runs), so that every record written by a
// transaction that commits after the call returns is named. A batch comes
// soon after each notification: the names of the records written since
// the previous read, each once (a name may come again in a later batch,
// and a batch may name a record written just before the call). Reading
// it costs one indexed query per notification, whose size grows with the
// records written, not with the records stored; a session's renewal,
// whose notification names the record and its version, costs none. The channel is closed
// when ctx ends, when the Store is closed, or when the listening
// connection cannot be opened or breaks (then the caller re-reads what it
// follows and may watch again). On a read-only Store of a schema older
// than version 4 the channel is closed at once (version 4's writes are
// fed as version 5's: the two differ only in swap_many's plan).
func (s *Store) WatchChanges(ctx context.Context) <-chan []store.Change {
	out := make(chan []store.Change)
	s.mu.Lock()
	if s.closed || ctx.Err() != nil || s.version < 4 {
		s.mu.Unlock()
		close(out)
		return out
	}
	l := s.listenerLocked()
	f := &feed{l: l, out: out, signal: make(chan struct{}, 1), pending: map[string]int64{}}
	l.feeds[f] = struct{}{}
	s.mu.Unlock()
	go s.runFeed(ctx, f)
	select {
	case <-l.ready:
	case <-ctx.Done():
	}
	return out
}

// listenerLocked returns the running listener, starting one if there is
// none; s.mu must be held.
func (s *Store) listenerLocked() *listener {
	if s.watcher == nil {
		ctx, cancel := context.WithCancel(context.Background())
		l := &listener{
			s: s, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{}),
			feeds: map[*feed]struct{}{},
		}
		s.watcher = l
		go l.run(ctx)
	}
	return s.watcher
}

// runFeed delivers f's pending names to its channel until ctx ends or the
// listener exits, then closes the channel.
func (s *Store) runFeed(ctx context.Context, f *feed) {
	defer close(f.out)
	defer s.endFeed(f)
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.l.done:
			return
		case <-f.signal:
		}
		s.mu.Lock()
		batch := make([]store.Change, 0, len(f.pending))
		for n, v := range f.pending {
			batch = append(batch, store.Change{Name: n, Version: v})
		}
		clear(f.pending)
		through := f.l.through
		s.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		batch[len(batch)-1].Through = through // see FeedInOrder
		select {
		case f.out <- batch:
		case <-ctx.Done():
			return
		case <-f.l.done:
			return
		}
	}
}

// endFeed removes f, and stops the listener when f was its last
// subscription.
func (s *Store) endFeed(f *feed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := f.l
	delete(l.feeds, f)
	s.stopIfIdleLocked(l)
}

// stopIfIdleLocked stops l when it has no feed left; s.mu must be held.
func (s *Store) stopIfIdleLocked(l *listener) {
	if len(l.feeds) == 0 && s.watcher == l {
		s.watcher = nil
		l.cancel()
	}
}

// stop ends the listener and waits for it to exit.
func (l *listener) stop() {
	l.cancel()
	<-l.done
}

// position is a place in the change feed: the xmax and in-progress
// transaction ids of the snapshot of a read (see "How the change feed
// works").
type position struct {
	xmax int64
	xip  []int64
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	defer l.detach()
	readyOnce := false
	defer func() {
		if !readyOnce {
			close(l.ready)
		}
	}()

	cfg := l.s.pool.Config().ConnConfig
	// On a timeout, set a deadline on the socket instead of sending a
	// cancel request: the periodic wake-up below must leave the
	// connection usable, and a late cancel request could hit a read.
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
	// The position is read after LISTEN: a transaction that commits
	// after this read notifies this connection.
	pos, _, err := l.read(ctx, conn, position{xmax: -1})
	if err != nil {
		return
	}
	readyOnce = true
	close(l.ready)
	drained, cancelDrained := context.WithCancel(ctx)
	cancelDrained()
	readAt := time.Now()
	for {
		wctx, cancel := context.WithTimeout(ctx, listenPing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		// named: the writes the notifications name; mustRead: a
		// notification of another write, which the read below finds.
		var named []store.Change
		mustRead := true
		switch {
		case err == nil:
			mustRead = false
			for err == nil {
				if c, ok := namedPayload(n.Payload); ok {
					named = append(named, c)
				} else {
					mustRead = true
				}
				n, err = conn.WaitForNotification(drained)
			}
		case ctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			// Silence: read anyway, which also tells whether the
			// server is still there.
		default:
			return // the connection broke
		}
		var changes []store.Change
		// Named writes alone need no read, but one comes at least every
		// listenPing, so that the position stays close and the next read
		// small.
		if mustRead || time.Since(readAt) >= listenPing {
			if pos, changes, err = l.read(ctx, conn, pos); err != nil {
				return
			}
			readAt = time.Now()
		}
		l.deliver(changes, named)
	}
}

// read returns the feed's position now and the records written since
// from, with their versions. A from with xmax -1 reads only the position.
func (l *listener) read(ctx context.Context, conn *pgx.Conn, from position) (position, []store.Change, error) {
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var (
		to       position
		names    []string
		versions []int64
	)
	// Both aggregates see the rows in one order.
	err := conn.QueryRow(rctx, `SELECT pg_snapshot_xmax(s)::text::bigint,
			array(SELECT x::text::bigint FROM pg_snapshot_xip(s) x),
			coalesce(c.names, '{}'), coalesce(c.versions, '{}')
		FROM pg_current_snapshot() s,
			LATERAL (SELECT array_agg(e.name) AS names, array_agg(e.version) AS versions FROM `+l.s.q+`.election e
				WHERE $1 >= 0 AND (e.wxid >= $1 OR e.wxid = ANY($2))) c`, from.xmax, from.xip).Scan(&to.xmax, &to.xip, &names, &versions)
	if err != nil {
		return to, nil, err
	}
	if len(names) != len(versions) {
		return to, nil, fmt.Errorf("postgres change feed: %d names and %d versions", len(names), len(versions))
	}
	changes := make([]store.Change, len(names))
	for i, n := range names {
		changes[i] = store.Change{Name: n, Version: versions[i]}
	}
	return to, changes, nil
}

// deliver hands the changes a read found and those notifications named
// to every feed; only the read's raise through (see "How far the feed
// has reported").
func (l *listener) deliver(read, named []store.Change) {
	if len(read) == 0 && len(named) == 0 {
		return
	}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	for _, c := range read {
		l.through = max(l.through, c.Version)
	}
	for f := range l.feeds {
		for _, c := range read {
			f.pending[c.Name] = max(f.pending[c.Name], c.Version)
		}
		for _, c := range named {
			f.pending[c.Name] = max(f.pending[c.Name], c.Version)
		}
		select {
		case f.signal <- struct{}{}:
		default:
		}
	}
}

// detach unhooks the listener, which is exiting, from its Store, so that a
// later WatchChanges starts a new one; its feeds close their channels when
// they see l.done.
func (l *listener) detach() {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watcher == l {
		s.watcher = nil
	}
}

// FeedInOrder implements store.OrderedFeed: every batch's last entry
// carries the largest version the listener's reads have found, 0 before
// they found any (see "How far the feed has reported"). Versions come
// from a sequence and commit in another order, so a write of a smaller
// version may still be reported later; what is promised is every write that committed before a version
// up to Through was drawn, which is what a succession needs: its write
// draws its version after every write of the names it passes on that
// committed before it (succession.go, "Ordering").
func (s *Store) FeedInOrder() bool { return true }
