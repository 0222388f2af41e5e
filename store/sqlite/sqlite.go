package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

var (
	_ store.Store      = (*Store)(nil)
	_ store.Identifier = (*Store)(nil)
)

// MaxToken is the largest fencing token the sqlite store can hold: SQLite
// integers are signed 64-bit. It is store.MaxToken, every backend's. A
// swap carrying a larger token fails with store.ErrInvalid and
// store.ErrTokenLimit.
const MaxToken = store.MaxToken

// Defaults of the options.
const (
	// DefaultBusyTimeout is how long a call waits for another connection's
	// write lock before it fails with store.ErrUnavailable.
	DefaultBusyTimeout = 5 * time.Second
	// DefaultWatchInterval is how often a watch polls the file for commits
	// while no notification of the file's writes can be had (see
	// WatchChanges).
	DefaultWatchInterval = 50 * time.Millisecond
	// DefaultNotifiedInterval is how often a watch polls the file for
	// commits while it is woken by the file's writes (inotify, on Linux):
	// the fallback for a notification that came too early for the commit
	// it announced and its retries (see WatchChanges). A contender reads
	// its record this often anyway (baton.DefaultPoll), so a change
	// the feed learns of only at this poll is seen no later than
	// without a feed.
	DefaultNotifiedInterval = time.Second
	// DefaultMaxConns is how many connections to the file a Store keeps
	// open at most: one for its writes (SQLite has one writer per file,
	// and a Store runs its writes one at a time), one for the watch
	// poller while something is watched, and two for reads, which in WAL
	// mode run beside the writer. More readers than that gain nothing on
	// a host of a few cores: the driver runs queries on the caller's CPU.
	DefaultMaxConns = 4
)

// Store is a store.Store on one SQLite file. It is safe for concurrent use;
// several Stores, in one process or in several, may share the same file.
type Store struct {
	db   *sql.DB
	path string
	cfg  config
	file fileID // the file Open opened; see checkFile
	id   int64  // the store id; see checkStoreID
	// fd is the file Open opened, read for its header (checkHeader); nil
	// for a read-only Store. mark is the store's mark (markOf), and
	// markSeen says whether the file has shown it.
	fd       *os.File
	mark     uint32
	markSeen atomic.Bool
	// schema is the store's schema version: SchemaVersion, or an older
	// one for an older store opened read-only (version 1 has no
	// candidates and no event details, versions 1 and 2 no sessions).
	schema   int64
	readOnly bool
	st       stmts // prepared statements; see prepare

	// writing is the write turn: a Store runs its writes one at a time,
	// so that its callers queue here, in order (single swaps first: see
	// turn) and at no cost, instead of as many connections retrying
	// SQLite's write lock in the busy handler's sleeps.
	writing turn
	// local counts the writes to the file under way in this process,
	// of every Store on it (localWriters; see commitUnderway).
	local *atomic.Int64
	// writer is the connection the Store's writes run on, kept apart
	// from the pool (see dedicateWriter); nil: writes take a pooled one.
	writer atomic.Pointer[sql.Conn]
	// writerRenew is renewStmt prepared on the writer connection (see
	// renew); set before writer, closed with it.
	writerRenew *sql.Stmt

	closed    atomic.Bool
	closeOnce sync.Once
	done      chan struct{} // closed by Close: stops the watch poller
	pollers   sync.WaitGroup
	hub       hub
}

type config struct {
	now           func() time.Time
	busyTimeout   time.Duration
	watchInterval time.Duration
	notified      time.Duration // the poll while notified of writes
	maxConns      int
	readOnly      bool
}

// WithMaxConns sets how many connections to the file the Store keeps open
// at most (database/sql's SetMaxOpenConns). The default is
// DefaultMaxConns. It must be at least 2: one for the watch poller, which
// keeps its own while something is watched, and one for everything else.
// Writes use one connection at a time whatever the bound: with a bound of
// 3 or more, one kept for them (see the package doc); a larger bound lets
// more reads run at once.
func WithMaxConns(n int) Option {
	return func(c *config) error {
		if n < 2 {
			return storedriver.InvalidOption("sqlite", "max-conns", n, fmt.Sprintf("at least 2 (one connection for the watch poller, one for the rest), such as %d", DefaultMaxConns))
		}
		c.maxConns = n
		return nil
	}
}

// WithReadOnly opens the baton store in the SQLite file for reading only,
// as the read commands (status, runs, history, next) do. It never creates a
// file, a table or an index, never changes the journal mode and never
// writes a byte of the database file; every write method returns an error
// wrapping store.ErrInvalid. A store of an older schema version (1 or 2)
// is read as it is: it holds no sessions (Record.Session is empty), and
// its change feed reads without the version index.
//
// A missing file is an error wrapping store.ErrNotFound ("no baton store
// at ABSOLUTE PATH"); a file that is not a baton store (not SQLite, or
// SQLite without baton's tables) one wrapping store.ErrSchema, and the
// file is left as it was.
//
// A store that a process has open (its -wal file exists) is read through
// SQLite's read-only mode, which shares that process's -shm index and
// sees every committed write; a read-only -shm is handled by SQLite itself
// (a private in-memory index). A store nobody has open is read as an
// immutable file, so that no -wal or -shm file is created beside it: a
// writer that opens it during such a read may not be seen by that read.
// A read-only file (chmod 0444) works either way.
func WithReadOnly() Option {
	return func(c *config) error {
		c.readOnly = true
		return nil
	}
}

// Option configures Open.
type Option func(*config) error

// WithTime sets the function the store reads its informational store time
// (Record.Updated, Event.Time, Job.Created) from. The default is time.Now.
func WithTime(now func() time.Time) Option {
	return func(c *config) error {
		if err := storedriver.CheckClock("sqlite", now); err != nil {
			return err
		}
		c.now = now
		return nil
	}
}

// WithBusyTimeout sets how long a call waits for another connection's lock
// on the file (SQLite's busy_timeout) before it fails with
// store.ErrUnavailable. The default is DefaultBusyTimeout. It must be at
// least one millisecond.
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return storedriver.InvalidOption("sqlite", "busy-timeout", d, "at least 1ms, such as 5s")
		}
		c.busyTimeout = d
		return nil
	}
}

// WithWatchInterval sets how often WatchChanges polls the file for commits made by
// other connections, whether or not it is notified of the file's writes.
// The default is DefaultWatchInterval without notifications and
// DefaultNotifiedInterval with them. It must be positive.
func WithWatchInterval(d time.Duration) Option {
	return func(c *config) error {
		if err := storedriver.CheckPositive("sqlite", "watch-interval", d, "50ms"); err != nil {
			return err
		}
		c.watchInterval, c.notified = d, d
		return nil
	}
}

// Open opens the store in the SQLite file at path, creating the file and the
// baton tables if they do not exist yet. path is a file system path, not a
// DSN. The file must be on a local file system (see the package doc).
//
// Open refuses, with an error wrapping store.ErrSchema and without writing
// to the file, a file that is not an SQLite database, an SQLite database
// that holds tables, indexes, views or triggers but no baton tables (an
// application's own database), and one whose baton schema version is not
// the one this package supports. A new path, an empty file and an SQLite
// database with no schema at all become a new store.
//
// ctx bounds the time Open takes; it is not retained.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite: %w: empty path; give the store's file name, such as baton.db", store.ErrInvalid)
	}
	cfg := config{now: time.Now, busyTimeout: DefaultBusyTimeout, watchInterval: DefaultWatchInterval, notified: DefaultNotifiedInterval, maxConns: DefaultMaxConns}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w: %w", path, store.ErrUnavailable, err)
	}
	if cfg.readOnly {
		return openReadOnly(ctx, path, cfg)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := sniff(abs); err != nil {
		return nil, err
	}
	if err := refuseForeign(ctx, abs, cfg); err != nil {
		return nil, err
	}
	if err := createFile(abs); err != nil {
		return nil, err
	}
	file, err := statID(abs)
	if err != nil {
		return nil, pathError("open", abs, err)
	}
	db, err := sql.Open("sqlite", dsn(abs, cfg))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	s := newStore(db, abs, cfg, file)
	s.schema = SchemaVersion
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.openFile(); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		s.st.close()
		db.Close()
		return nil, err
	}
	if cfg.maxConns >= 3 {
		if err := s.dedicateWriter(ctx); err != nil {
			s.st.close()
			db.Close()
			return nil, err
		}
	}
	return s, nil
}

// newStore makes the Store of db, with its connection pool bounded.
func newStore(db *sql.DB, abs string, cfg config, file fileID) *Store {
	db.SetMaxOpenConns(cfg.maxConns)
	db.SetMaxIdleConns(cfg.maxConns) // each new connection runs the DSN's pragmas: keep them
	s := &Store{db: db, path: abs, cfg: cfg, file: file, local: localWriters(file), done: make(chan struct{})}
	s.hub.init()
	return s
}

// Capabilities implements store.Store: an identity, an ordered feed and
// successions; no clock of its own (the store is on this host, whose
// clock is the node's).
func (s *Store) Capabilities() store.Capabilities {
	return store.CapIdentity | store.CapOrderedFeed | store.CapSuccession
}

// Close closes the store's connections and ends its change feeds. It does not
// change any record. Calls after Close fail with store.ErrUnavailable.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.hub.mu.Lock() // orders the flag with WatchChanges starting a poller
		s.closed.Store(true)
		s.hub.mu.Unlock()
		close(s.done)
		s.pollers.Wait()
		s.hub.closeAll()
		s.st.close()
		if s.writerRenew != nil {
			s.writerRenew.Close()
		}
		if c := s.writer.Swap(nil); c != nil {
			c.Close()
		}
		err = s.db.Close()
		if s.fd != nil {
			s.fd.Close()
		}
	})
	return err
}

// now returns the store time, truncated to what a round trip through the
// file preserves, so that a returned record equals the stored one.
func (s *Store) now() time.Time {
	return time.Unix(0, s.cfg.now().UnixNano()).UTC()
}
