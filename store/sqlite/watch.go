package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/batonhq/baton/store"
)

// hub holds a Store's change feeds. One poller goroutine serves all of
// them while there is at least one.
//
// The poller follows the election records by their changed column: every
// write but a renewal sets it to a new value of the store-wide counter
// (counterKey), above every value committed before, under the file's
// write lock, so the records changed since counter value c are those whose
// changed is above c (baton_election_changed indexes them). A renewal
// leaves the column (see renewStmt): a name's renewal is not on the feed
// (store.Store.WatchChanges allows it), and a session's is found by its
// version: at every poll that reads the column the poller also reads the
// held session records' versions (sessionsStmt) and reports those that
// differ from sessions, the versions it read last. In a store older than
// version 5 (read-only) the version column plays the changed column's
// part. cursor is the newest value the poller has dispatched; a feed
// registered under mu is told of every record changed after its
// registration, since those get values above cursor, and of every
// session renewal committed after it, since those give versions that
// sessions, read before, does not hold.
type hub struct {
	mu       sync.Mutex
	feeds    map[*feed]struct{}
	running  bool
	cursor   int64
	sessions map[string]int64 // held session record -> version; the poller's
	polls    int64            // polls so far, for the tests
}

func (h *hub) init() {
	h.feeds = map[*feed]struct{}{}
}

func (h *hub) empty() bool { return len(h.feeds) == 0 }

// feed is one WatchChanges call: the records written since its last
// batch, each once, at the newest version read, and a signal that there
// are some.
type feed struct {
	pending []store.Change
	seen    map[string]int // index in pending
	through int64          // the changed value pending reports every write up to (FeedInOrder)
	signal  chan struct{}
	broken  bool // the poll failed: the feed must close
}

// WatchChanges implements store.Store with a poll woken by the file's
// writes: one goroutine per Store reads PRAGMA data_version on a
// connection of its own whenever the -wal file is written, by any process
// on this host (inotify, on Linux), and, whatever happens, every
// DefaultNotifiedInterval while the notification is set and every
// DefaultWatchInterval while it is not (WithWatchInterval sets both): the
// fallback where the notification is missing or missed. That number
// changes only when another connection, in this process or another,
// commits to the file, so an idle poll is one cheap statement, and an
// idle store wakes the poller only at the interval. When it
// changed, the poller runs one indexed query for the election records
// changed since the last counter value it saw, and one range of the
// primary key for the versions of the held session records, and hands
// the names of the records changed and of the session records whose
// version moved (a session's renewal, which renewStmt leaves off the
// changed column) to every change feed. Its cost per commit grows with
// the number of records the commit wrote and the number of session
// records (one per process running a Group), not with the number of
// names stored or watched, and one poll serves every feed of the Store.
//
// A feed whose reader is slow gets the names written meanwhile in one
// batch, each once. The channel is closed when ctx ends, when the store is
// closed, or when the poll fails.
func (s *Store) WatchChanges(ctx context.Context) <-chan []store.Change {
	out := make(chan []store.Change)
	f := &feed{seen: map[string]int{}, signal: make(chan struct{}, 1)}
	h := &s.hub
	if !s.subscribe(ctx, f) {
		close(out)
		return out
	}
	go func() {
		defer close(out)
		defer func() {
			h.mu.Lock()
			delete(h.feeds, f)
			h.mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-f.signal:
			}
			h.mu.Lock()
			batch, broken, through := f.pending, f.broken, f.through
			f.pending = nil
			clear(f.seen)
			h.mu.Unlock()
			if len(batch) > 0 {
				batch[len(batch)-1].Through = through
			}
			if broken {
				return
			}
			if len(batch) == 0 {
				continue
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

// subscribe registers f under the hub's lock, starting the poller if it
// is not running; it returns false, without registering f, when the store
// is closed or cannot be read, or ctx has ended.
func (s *Store) subscribe(ctx context.Context, f *feed) bool {
	if s.enter(ctx, "watch changes") != nil {
		return false
	}
	h := &s.hub
	start, haveStart := int64(0), false
	var sessions map[string]int64
	for {
		h.mu.Lock()
		if s.closed.Load() || ctx.Err() != nil {
			h.mu.Unlock()
			return false
		}
		if h.running || haveStart {
			h.feeds[f] = struct{}{}
			if !h.running {
				// The poller starts at a version read before the
				// registration: it dispatches every record written after
				// that read, and so every one written after f's
				// registration.
				h.running, h.cursor, h.sessions = true, start, sessions
				s.pollers.Add(1)
				go s.poll()
			}
			h.mu.Unlock()
			return true
		}
		h.mu.Unlock()
		if err := s.st.newest.QueryRowContext(ctx).Scan(&start); err != nil {
			return false
		}
		var err error
		if sessions, err = readSessions(ctx, s.st.sessions); err != nil {
			return false
		}
		haveStart = true
	}
}

// closeAll ends every feed.
func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.breakAll()
}

// breakAll ends every feed; h.mu must be held.
func (h *hub) breakAll() {
	for f := range h.feeds {
		f.broken = true
		select {
		case f.signal <- struct{}{}:
		default:
		}
		delete(h.feeds, f)
	}
}

// poll serves the hub until no feed is left, the store is closed
// or a poll fails.
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
		h.breakAll()
	}
	// The connection is the poller's own: data_version counts commits by
	// other connections only, so it must never write.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		broken()
		return
	}
	defer conn.Close()
	p, err := s.newPoller(ctx, conn)
	if err != nil {
		broken()
		return
	}
	defer p.close()
	// Woken by writes to the -wal file (notify_linux.go), the poller
	// polls at once, then again 1, 2, 4, ... 512ms after the poll
	// before (1023ms in all) while a commit may be under way: a commit's
	// pages are written to the log before it is synced and published in
	// the shared index, which raises no event, so a poll may come before
	// the commit is visible, and one that sees another commit, made just
	// before, cannot tell that this one is still on its way. The retries
	// end at the first poll that starts after no commit was found under
	// way (commitUnderway, asked before the poll): a writer holds the
	// file's write lock from before its log write until after it
	// publishes, so every commit announced before is visible to that
	// poll. An idle store's write (a renewal) so costs one or two polls,
	// not eleven. Polls woken so are at least minWakeGap apart. The
	// periodic poll stays, for what the notifier misses: every
	// cfg.notified while the watch is set (a commit published more than
	// a second after its log write), every cfg.watchInterval while it is not
	// (no inotify, a -wal file not there yet or replaced), which also
	// sets the watch again. An idle store so wakes the poller about once
	// a second, not twenty times.
	var (
		wake <-chan struct{}
		n    *walNotifier
	)
	if !virtualClock() {
		n = newWALNotifier(s.path + "-wal")
	}
	if n != nil {
		defer n.Close()
		wake = n.C
	}
	probe := newSHMProbe(s.path + "-shm")
	interval := func() time.Duration {
		if n != nil && n.watched() {
			return s.cfg.notified
		}
		return s.cfg.watchInterval
	}
	t := time.NewTimer(interval())
	defer t.Stop()
	soon := time.NewTimer(time.Hour)
	soon.Stop()
	defer soon.Stop()
	var (
		last  time.Time     // the last poll
		retry time.Duration // the next poll's delay after a wake; 0: none due
	)
	for {
		h.mu.Lock()
		if h.empty() {
			h.running = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		underway := retry > 0 && s.commitUnderway(probe)
		last = time.Now()
		if _, err := s.pollOnce(ctx, p); err != nil {
			broken()
			return
		}
		// The periodic poll is due an interval after the last poll; set
		// after each, it follows a watch that was lost (the notifier
		// wakes the poller then) at once.
		t.Reset(interval())
		if underway && retry <= maxWakeRetry {
			soon.Reset(retry)
			retry *= 2
		} else {
			retry = 0
		}
		for waiting := true; waiting; {
			select {
			case <-t.C:
				if n != nil {
					n.rearm()
				}
				waiting = false
			case <-wake:
				if gap := time.Since(last); gap < minWakeGap {
					soon.Reset(minWakeGap - gap)
				} else {
					waiting = false
				}
				retry = time.Millisecond
			case <-soon.C:
				waiting = false
			case <-ctx.Done():
				broken()
				return
			}
		}
	}
}

// virtualClock reports a clock before 2001: testing/synctest's virtual
// time, which starts at midnight UTC on 2000-01-01 (no host keeps such a
// clock for real). In a synctest bubble the notifier's goroutine, waiting
// on a file descriptor, would keep the bubble from ever being idle, and
// so its virtual time from moving: the poll alone serves there.
func virtualClock() bool { return time.Now().Before(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)) }

// Wake-ups of the poller by the notifier: a wake polls at once if the
// last poll is minWakeGap old (a handover after a quiet while is seen at
// once; a stream of commits, a bulk takeover's, is polled at most every
// minWakeGap, 200 times a second), and again at delays doubling up to
// maxWakeRetry while a commit is under way (at most eleven polls
// for a write to the log, over 1023ms, about the periodic poll's
// DefaultNotifiedInterval): a commit published d after its log write (the
// log's fsync, slow under load) is seen at most about 2d after it, where
// the periodic poll alone would take up to a second.
const (
	minWakeGap   = 5 * time.Millisecond
	maxWakeRetry = 512 * time.Millisecond
)

// poller is the poller's statements, prepared on its own connection, and
// the data_version it saw last.
type poller struct {
	dataVersion, written, sessions *sql.Stmt
	seen                           int64
}

func (s *Store) newPoller(ctx context.Context, conn *sql.Conn) (*poller, error) {
	dv, err := conn.PrepareContext(ctx, `PRAGMA data_version`)
	if err != nil {
		return nil, err
	}
	written, err := conn.PrepareContext(ctx, s.writtenSince())
	if err != nil {
		dv.Close()
		return nil, err
	}
	sessions, err := conn.PrepareContext(ctx, sessionsStmt)
	if err != nil {
		dv.Close()
		written.Close()
		return nil, err
	}
	return &poller{dataVersion: dv, written: written, sessions: sessions, seen: -1}, nil
}

func (p *poller) close() {
	p.dataVersion.Close()
	p.written.Close()
	p.sessions.Close()
}

// pollOnce is one poll: it reads data_version and, when it changed,
// dispatches the records written since the hub's cursor, and says so.
func (s *Store) pollOnce(ctx context.Context, p *poller) (changed bool, err error) {
	h := &s.hub
	h.mu.Lock()
	cursor := h.cursor
	h.polls++
	h.mu.Unlock()
	var dv int64
	if err := p.dataVersion.QueryRowContext(ctx).Scan(&dv); err != nil {
		return false, err
	}
	if dv == p.seen {
		return false, nil
	}
	p.seen = dv
	return true, s.dispatch(ctx, p, cursor)
}

// writtenSince selects the election records changed after a counter value,
// with their versions and changed values: a range of the index
// baton_election_changed (or, before version 5, baton_election_version).
func (s *Store) writtenSince() string {
	c := s.changedCol()
	return `SELECT name, version, ` + c + ` FROM baton_election WHERE ` + c + ` > ?`
}

// readSessions runs sessionsStmt: the held session records' versions.
func readSessions(ctx context.Context, st *sql.Stmt) (map[string]int64, error) {
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var (
			name string
			v    int64
		)
		if err := rows.Scan(&name, &v); err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, rows.Err()
}

// dispatch reads the election records changed after counter value cursor,
// with their versions, and the held session records whose version moved
// since the last poll (a session's renewal, which leaves the changed
// column), and hands them to the feeds.
func (s *Store) dispatch(ctx context.Context, p *poller, cursor int64) error {
	rows, err := p.written.QueryContext(ctx, cursor)
	if err != nil {
		return err
	}
	var changes []store.Change
	newest := cursor
	for rows.Next() {
		var c store.Change
		var changed int64
		if err := rows.Scan(&c.Name, &c.Version, &changed); err != nil {
			rows.Close()
			return err
		}
		changes = append(changes, c)
		newest = max(newest, changed)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	sessions, err := readSessions(ctx, p.sessions)
	if err != nil {
		return err
	}
	h := &s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, v := range sessions {
		if h.sessions[name] != v {
			changes = append(changes, store.Change{Name: name, Version: v})
		}
	}
	h.sessions = sessions
	if len(changes) == 0 {
		return nil
	}
	h.cursor = newest
	for f := range h.feeds {
		f.through = max(f.through, newest)
		for _, c := range changes {
			if i, dup := f.seen[c.Name]; dup {
				f.pending[i].Version = max(f.pending[i].Version, c.Version)
				continue
			}
			f.seen[c.Name] = len(f.pending)
			f.pending = append(f.pending, c)
		}
		select {
		case f.signal <- struct{}{}:
		default:
		}
	}
	return nil
}

// FeedInOrder implements store.OrderedFeed. Every write but a renewal
// draws its version from the store-wide counter (nextVersion), which it
// raises under the file's write lock, so those versions rise in commit
// order, and it sets the changed column to it; the poller reads, in one
// statement, every record whose changed value is above its cursor, so a
// dispatch reports every such write up to the newest value it read
// (Change.Through). A renewal draws a version above the counter without
// raising it: a session's is reported by its version (dispatch), a
// name's is not on the feed at all (store.Store.WatchChanges allows
// both); neither is a write whose order the capability promises, and a
// renewal's version is above the counter when it commits, so above every
// Through handed out before.
func (s *Store) FeedInOrder() bool { return true }
