package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	driver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

var (
	_ store.Store         = (*Store)(nil)
	_ store.Watcher       = (*Store)(nil)
	_ store.BatchSwapper  = (*Store)(nil)
	_ store.BatchGetter   = (*Store)(nil)
	_ store.ChangeWatcher = (*Store)(nil)
	_ store.Identifier    = (*Store)(nil)
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
	// DefaultWatchInterval is how often a watch polls the file for commits.
	DefaultWatchInterval = 50 * time.Millisecond
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
	// schema is the store's schema version: SchemaVersion, or an older
	// one for an older store opened read-only (version 1 has no
	// candidates and no event details, versions 1 and 2 no sessions).
	schema   int64
	readOnly bool
	st       stmts // prepared statements; see prepare

	// writing holds one token per write in progress: a Store runs its
	// writes one at a time, so that its callers queue here, in order and
	// at no cost, instead of as many connections retrying SQLite's write
	// lock in the busy handler's sleeps.
	writing chan struct{}
	// writer is the connection the Store's writes run on, kept apart
	// from the pool (see dedicateWriter); nil: writes take a pooled one.
	writer atomic.Pointer[sql.Conn]

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
			return fmt.Errorf("sqlite: WithMaxConns: %w: %d is below 2 (one connection for the watch poller, one for the rest); use e.g. %d", store.ErrInvalid, n, DefaultMaxConns)
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
		if now == nil {
			return fmt.Errorf("sqlite: WithTime: %w: now is nil; pass a clock function such as time.Now", store.ErrInvalid)
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
			return fmt.Errorf("sqlite: WithBusyTimeout: %w: %v is below 1ms; use e.g. 5s", store.ErrInvalid, d)
		}
		c.busyTimeout = d
		return nil
	}
}

// WithWatchInterval sets how often Watch polls the file for commits made by
// other connections. The default is DefaultWatchInterval. It must be
// positive.
func WithWatchInterval(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("sqlite: WithWatchInterval: %w: %v is not positive; use e.g. 50ms", store.ErrInvalid, d)
		}
		c.watchInterval = d
		return nil
	}
}

// sqliteHeader starts every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

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
	cfg := config{now: time.Now, busyTimeout: DefaultBusyTimeout, watchInterval: DefaultWatchInterval, maxConns: DefaultMaxConns}
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
		return nil, fmt.Errorf("sqlite: open %s: %w: %w", abs, store.ErrUnavailable, err)
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

// Settings of the writer connection (see dedicateWriter).
const (
	// writerCacheKiB bounds the page cache of the connection the Store
	// writes on: 64 MiB, a store of about 100,000 names with their log
	// (SQLite's default is 2 MiB). The cache holds only pages read, so
	// a small store uses little of it.
	writerCacheKiB = 64 << 10
	// walCheckpointPages is how many pages the write-ahead log grows to
	// before a commit copies it into the database file (SQLite's default
	// is 1,000, 4 MiB); the log file is cut back to walLimitBytes after.
	walCheckpointPages = 16384
	walLimitBytes      = 64 << 20
)

// dedicateWriter takes a connection out of the pool for the Store's writes.
//
// A bulk takeover writes names spread over the whole file: each SwapMany
// of 1,000 reads and dirties about as many pages of the record table and
// as many of the log. SQLite throws a connection's page cache away
// whenever another connection has committed since its last transaction,
// so writes that move from one pooled connection to another read the
// file again and again; a writer that is always the same connection, with
// a cache that holds the store, keeps it. Its statement journals (one
// per multi-row statement) stay in memory (temp_store), and its
// checkpoints run every walCheckpointPages pages instead of every 1,000,
// so that a page written by many commits of a burst is copied back once.
//
// It needs a pool of at least 3 connections (the writer, the watch
// poller and one for reads); with 2, writes share the pool as before.
func (s *Store) dedicateWriter(ctx context.Context) error {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return s.fail(ctx, "open", err)
	}
	for _, p := range []string{
		fmt.Sprintf(`PRAGMA cache_size = -%d`, writerCacheKiB),
		`PRAGMA temp_store = MEMORY`,
		fmt.Sprintf(`PRAGMA wal_autocheckpoint = %d`, walCheckpointPages),
		fmt.Sprintf(`PRAGMA journal_size_limit = %d`, walLimitBytes),
	} {
		if _, err := c.ExecContext(ctx, p); err != nil {
			c.Close()
			return s.fail(ctx, "open", err)
		}
	}
	s.writer.Store(c)
	return nil
}

// begin starts a write transaction (BEGIN IMMEDIATE: the DSN sets
// _txlock=immediate) on the writer connection, or on a pooled one if there
// is none. A writer connection that database/sql found broken is given up
// for the pool.
func (s *Store) begin(ctx context.Context) (*sql.Tx, error) {
	c := s.writer.Load()
	if c == nil {
		return s.db.BeginTx(ctx, nil)
	}
	tx, err := c.BeginTx(ctx, nil)
	if (errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)) && !s.closed.Load() && s.writer.CompareAndSwap(c, nil) {
		c.Close()
		return s.db.BeginTx(ctx, nil)
	}
	return tx, err
}

// newStore makes the Store of db, with its connection pool bounded.
func newStore(db *sql.DB, abs string, cfg config, file fileID) *Store {
	db.SetMaxOpenConns(cfg.maxConns)
	db.SetMaxIdleConns(cfg.maxConns) // each new connection runs the DSN's pragmas: keep them
	s := &Store{db: db, path: abs, cfg: cfg, file: file, done: make(chan struct{}), writing: make(chan struct{}, 1)}
	s.hub.init()
	return s
}

// dsn builds the driver's data source name: a file: URI (so that any file
// name works, '?' included) with the connection settings every pooled
// connection applies when it opens.
func dsn(abs string, cfg config) string {
	p := filepath.ToSlash(abs)
	p = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows: file:/C:/dir/baton.db
	}
	ms := cfg.busyTimeout.Milliseconds()
	return "file:" + p +
		"?_busy_timeout=" + strconv.FormatInt(ms, 10) +
		"&_synchronous=FULL" +
		"&_txlock=immediate"
}

// sniff refuses a non-empty file that does not start with the SQLite header,
// before SQLite itself ever opens it.
func sniff(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w: %w", path, store.ErrUnavailable, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(f, head)
	if n == 0 && (err == io.EOF || err == nil) {
		return nil // an empty file is an empty database
	}
	if err != nil && err != io.ErrUnexpectedEOF {
		return fmt.Errorf("sqlite: read %s: %w: %w", path, store.ErrUnavailable, err)
	}
	if !bytes.Equal(head[:n], sqliteHeader) || n < len(sqliteHeader) {
		return fmt.Errorf("sqlite: %w: %s is not an SQLite database; baton left it untouched", store.ErrSchema, path)
	}
	return nil
}

// foreignDatabase is the error for an SQLite database without baton's
// tables, the same for a writer's Open and a reader's.
func foreignDatabase(abs string) error {
	return fmt.Errorf("sqlite: %w: %s is an SQLite database without baton's tables, not a baton store; baton left it untouched", store.ErrSchema, abs)
}

// refuseForeign refuses, before anything writes to it, an existing SQLite
// file that holds a schema (tables, indexes, views, triggers) but no
// baton_meta table: an application's database, which baton must not
// change. It reads the file as openReadOnly does, so that not a byte of
// it changes. An empty file, and a database with no schema at all (a
// baton process switches a new store's file to WAL mode a moment before
// it creates the tables), pass: they become a store.
func refuseForeign(ctx context.Context, abs string, cfg config) error {
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("sqlite: open %s: %w: %w", abs, store.ErrUnavailable, err)
	case fi.IsDir():
		return fmt.Errorf("sqlite: %w: %s is a directory, not a baton store", store.ErrSchema, abs)
	case fi.Size() == 0:
		return nil
	}
	// A file with no -wal beside it is read as immutable (no lock, no
	// write). Another process may be making the store in that instant:
	// an immutable read can then see its tables without their version
	// row. So a file that looks foreign is read once more, with locks,
	// once that process's -wal exists.
	found, objects, err := foreignCheck(ctx, abs, cfg)
	if err == nil && !found && objects > 0 {
		if _, werr := os.Stat(abs + "-wal"); werr == nil {
			found, objects, err = foreignCheck(ctx, abs, cfg)
		}
	}
	switch {
	case err != nil:
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("sqlite: open: %w: %w", store.ErrUnavailable, ctxErr)
		}
		return classify(abs, "open", cfg.busyTimeout, err)
	case !found && objects > 0:
		return foreignDatabase(abs)
	}
	return nil
}

// foreignCheck reads, without writing, whether abs holds baton's schema
// version (found) and how many schema objects it has.
func foreignCheck(ctx context.Context, abs string, cfg config) (found bool, objects int, err error) {
	params := "&mode=ro"
	if _, err := os.Stat(abs + "-wal"); errors.Is(err, fs.ErrNotExist) {
		params += "&immutable=1"
	}
	db, err := sql.Open("sqlite", dsn(abs, cfg)+params)
	if err != nil {
		return false, 0, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	defer db.Close()
	_, found, err = schemaVersion(ctx, db)
	if err == nil && !found {
		err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&objects)
	}
	return found, objects, err
}

// Close closes the store's connections and ends its watches. It does not
// change any record. Calls after Close fail with store.ErrUnavailable.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.hub.mu.Lock() // orders the flag with Watch starting a poller
		s.closed.Store(true)
		s.hub.mu.Unlock()
		close(s.done)
		s.pollers.Wait()
		s.hub.closeAll()
		s.st.close()
		if c := s.writer.Swap(nil); c != nil {
			c.Close()
		}
		err = s.db.Close()
	})
	return err
}

// enter fails a call that cannot start: a closed store, a finished ctx, or
// a path that no longer names the file Open opened.
func (s *Store) enter(ctx context.Context, op string) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlite: %s: %w: the store is closed", op, store.ErrUnavailable)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlite: %s: %w: %w", op, store.ErrUnavailable, err)
	}
	return s.checkFile(op)
}

// fail classifies an error from the database: a finished ctx, a closed
// store, a lock held beyond the busy timeout and any other failure to reach
// a decision wrap store.ErrUnavailable; a file that is not a database or is
// corrupt, and a constraint that refuses a write, wrap store.ErrCorrupt.
// The driver's error stays in the chain.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("sqlite: %s: %w: %w", op, store.ErrUnavailable, ctxErr)
	}
	if s.closed.Load() {
		return fmt.Errorf("sqlite: %s: %w: the store is closed", op, store.ErrUnavailable)
	}
	return classify(s.path, op, s.cfg.busyTimeout, err)
}

func classify(path, op string, busy time.Duration, err error) error {
	var se *driver.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("sqlite: %s: %w: %s is locked by another connection (busy timeout %v): %w", op, store.ErrUnavailable, path, busy, err)
		case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("sqlite: %s: %w: %s is damaged (%w); restore it from a backup (see baton store floor) or move it away", op, store.ErrCorrupt, path, err)
		case sqlite3.SQLITE_CONSTRAINT:
			// baton checks every value it writes: a constraint that
			// fails is one it did not make (a trigger, a changed
			// table) or data it did not write. Retrying cannot help.
			return fmt.Errorf("sqlite: %s: %w: %s refuses the write with a constraint baton did not expect (%w): its baton tables were changed by another program; restore it from a backup (see baton store floor) or move it away", op, store.ErrCorrupt, path, err)
		}
	}
	return fmt.Errorf("sqlite: %s: %w: %s: %w", op, store.ErrUnavailable, path, err)
}

// decided reports whether err is a decision of the contract (conflict,
// invalid request, stale token, not found) rather than a database failure.
func decided(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrInvalid) ||
		errors.Is(err, store.ErrNotFound) || errors.Is(err, fence.ErrStaleToken) ||
		errors.Is(err, store.ErrSchema) || errors.Is(err, store.ErrReplaced)
}

// write runs fn in one BEGIN IMMEDIATE transaction: the write lock on the
// file is taken before fn reads anything, so a read-check-write in fn cannot
// interleave with another connection's, in this process or another. If fn
// returns an error the transaction is rolled back and nothing is written.
// The Store's own writes wait their turn in s.writing first, so that only
// one of its connections at a time asks SQLite for the write lock; the busy
// timeout is left for the writers of other processes.
func (s *Store) write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	if err := s.enter(ctx, op); err != nil {
		return err
	}
	if s.readOnly {
		return fmt.Errorf("sqlite: %s: %w: %s was opened read-only", op, store.ErrInvalid, s.path)
	}
	select {
	case s.writing <- struct{}{}:
	case <-ctx.Done():
		return s.fail(ctx, op, ctx.Err())
	}
	defer func() { <-s.writing }()
	tx, err := s.begin(ctx)
	if err != nil {
		return s.fail(ctx, op, err)
	}
	if s.id != 0 { // 0 while Open creates the store
		if err := s.checkStoreID(ctx, op, tx); err != nil {
			tx.Rollback()
			if decided(err) {
				return err
			}
			return s.fail(ctx, op, err)
		}
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		if decided(err) {
			return err
		}
		return s.fail(ctx, op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.fail(ctx, op, err)
	}
	// A write committed to a file the path no longer names counts for
	// nobody: say so now rather than at the next call.
	return s.checkFile(op)
}

// nextVersion takes the next value of the store-wide version counter. A
// version is never reused, across names and tables.
func nextVersion(ctx context.Context, tx *sql.Tx) (int64, error) {
	var v int64
	err := tx.QueryRowContext(ctx, `UPDATE baton_meta SET value = value + 1 WHERE key = 'last_version' RETURNING value`).Scan(&v)
	return v, err
}

// Time conversion: times are stored as integer Unix nanoseconds, UTC; the
// zero time.Time is stored as NULL.

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

func checkTime(field string, t time.Time) error {
	if !t.IsZero() && (t.Before(minTime) || t.After(maxTime)) {
		return fmt.Errorf("%w: %s %v is outside the years 1678-2262 the sqlite store can hold", store.ErrInvalid, field, t)
	}
	return nil
}

func nsOf(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

func timeOf(ns sql.NullInt64) time.Time {
	if !ns.Valid {
		return time.Time{}
	}
	return time.Unix(0, ns.Int64).UTC()
}

// nsScanner scans a nullable integer of Unix nanoseconds into a time.Time.
type nsScanner struct{ t *time.Time }

func (n nsScanner) Scan(v any) error {
	var ns sql.NullInt64
	if err := ns.Scan(v); err != nil {
		return err
	}
	*n.t = timeOf(ns)
	return nil
}

// now returns the store time, truncated to what a round trip through the
// file preserves, so that a returned record equals the stored one.
func (s *Store) now() time.Time {
	return time.Unix(0, s.cfg.now().UnixNano()).UTC()
}

func checkToken(what string, token uint64) error { return storedriver.CheckToken(what, token) }

// openReadOnly is Open with WithReadOnly.
func openReadOnly(ctx context.Context, path string, cfg config) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, store.NoStore(abs)
	case err != nil:
		return nil, fmt.Errorf("sqlite: open %s: %w: %w", abs, store.ErrUnavailable, err)
	case fi.IsDir():
		return nil, fmt.Errorf("sqlite: %w: %s is a directory, not a baton store", store.ErrSchema, abs)
	case fi.Size() == 0:
		return nil, fmt.Errorf("sqlite: %w: %s is an empty file, not a baton store; baton left it untouched", store.ErrSchema, abs)
	}
	if err := sniff(abs); err != nil {
		return nil, err
	}
	params := "&mode=ro"
	if _, err := os.Stat(abs + "-wal"); errors.Is(err, fs.ErrNotExist) {
		params += "&immutable=1"
	}
	file, err := statID(abs)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w: %w", abs, store.ErrUnavailable, err)
	}
	db, err := sql.Open("sqlite", dsn(abs, cfg)+params)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	s := newStore(db, abs, cfg, file)
	s.readOnly = true
	version, found, err := schemaVersion(ctx, db)
	if err == nil && !found {
		err = foreignDatabase(abs)
	} else if err == nil {
		err = s.checkVersion(version, found)
	} else {
		err = s.fail(ctx, "open", err)
	}
	if err == nil {
		s.id, _, err = readStoreID(ctx, db) // 0: an older store without one
		if err != nil {
			err = s.fail(ctx, "open", err)
		}
	}
	if err == nil {
		s.schema = version
		err = s.prepare(ctx)
	}
	if err != nil {
		s.st.close()
		db.Close()
		return nil, err
	}
	return s, nil
}

// stmts are the statements the election record's hot paths run, prepared
// once per connection (database/sql prepares a *sql.Stmt again on each
// pooled connection it runs on, once): SQLite then parses and plans them
// once, not at every call.
type stmts struct {
	get     *sql.Stmt // the record of one name
	getMany *sql.Stmt // the records of the names in a JSON array
	newest  *sql.Stmt // the newest record version
	// Writes; nil in a read-only Store.
	lastVersion *sql.Stmt // the store-wide version counter
	setVersion  *sql.Stmt
	// current reads the record (if any) and the newest log sequence
	// number of each name in a JSON array
	current *sql.Stmt
	// upsert[k] writes 1<<k records, logEvent[k] appends 1<<k log
	// events: see writeRows.
	upsert   [blockKinds]*sql.Stmt
	logEvent [blockKinds]*sql.Stmt
}

// Multi-row writes. A SwapMany writes its records with multi-row
// INSERT statements of blockRows rows, and the rest of them with one
// statement each of the sizes of the binary digits of the rest (32, 16,
// ..., 1 rows): blockKinds statements per table, prepared once per
// connection, so that a batch of n swaps runs about n/blockRows + log2
// blockRows statements per table instead of n. Each row binds recordArgs
// or eventArgs parameters: blockRows times either stays far below SQLite's
// bound on the parameters of one statement (32,766 in modernc.org/sqlite).
const (
	blockKinds = 7
	blockRows  = 1 << (blockKinds - 1) // 64
	recordArgs = 9
	eventArgs  = 8
)

// rowsSQL is head followed by n rows of k parameters each, then tail.
func rowsSQL(head string, n, k int, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(" VALUES ")
	row := "(" + strings.Repeat("?, ", k-1) + "?)"
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(tail)
	return b.String()
}

const (
	upsertHead = `INSERT INTO baton_election (name, holder, incarnation, token, lease_ns, transfer, version, updated_ns, session)`
	upsertTail = ` ON CONFLICT (name) DO UPDATE SET
		holder = excluded.holder, incarnation = excluded.incarnation, token = excluded.token,
		lease_ns = excluded.lease_ns, transfer = excluded.transfer, version = excluded.version,
		updated_ns = excluded.updated_ns, session = excluded.session`
	logHead = `INSERT INTO baton_election_log (name, seq, kind, holder, incarnation, token, transfer, time_ns)`
)

// prepare prepares s.st for the store's schema version.
func (s *Store) prepare(ctx context.Context) error {
	sel := `SELECT name, ` + recordCols + s.sessionCol() + ` FROM baton_election `
	type text struct {
		st   **sql.Stmt
		text string
	}
	texts := []text{
		{&s.st.get, sel + `WHERE name = ?`},
		{&s.st.getMany, sel + `WHERE name IN (SELECT value FROM json_each(?))`},
		{&s.st.newest, `SELECT coalesce(max(version), 0) FROM baton_election`},
	}
	if !s.readOnly {
		texts = append(texts,
			text{&s.st.lastVersion, `SELECT value FROM baton_meta WHERE key = 'last_version'`},
			text{&s.st.setVersion, `UPDATE baton_meta SET value = ? WHERE key = 'last_version'`},
			text{&s.st.current, `SELECT j.value, coalesce(e.holder, ''), coalesce(e.incarnation, ''), coalesce(e.token, 0), coalesce(e.lease_ns, 0),
				coalesce(e.transfer, ''), coalesce(e.version, 0), e.updated_ns, coalesce(e.session, ''),
				(SELECT coalesce(max(l.seq), 0) FROM baton_election_log l WHERE l.name = j.value)
			 FROM json_each(?) j LEFT JOIN baton_election e ON e.name = j.value`},
		)
		for k := range blockKinds {
			texts = append(texts,
				text{&s.st.upsert[k], rowsSQL(upsertHead, 1<<k, recordArgs, upsertTail)},
				text{&s.st.logEvent[k], rowsSQL(logHead, 1<<k, eventArgs, "")},
			)
		}
	}
	for _, t := range texts {
		st, err := s.db.PrepareContext(ctx, t.text)
		if err != nil {
			return s.fail(ctx, "open", err)
		}
		*t.st = st
	}
	return nil
}

// all is every statement of st, nil ones included.
func (st *stmts) all() []*sql.Stmt {
	out := []*sql.Stmt{st.get, st.getMany, st.newest, st.lastVersion, st.setVersion, st.current}
	out = append(out, st.upsert[:]...)
	return append(out, st.logEvent[:]...)
}

// close closes the statements that were prepared.
func (st *stmts) close() {
	for _, p := range st.all() {
		if p != nil {
			p.Close()
		}
	}
}

// bound is the write statements of s.st bound to one transaction, each
// when first used.
type bound struct {
	ctx context.Context
	tx  *sql.Tx
	st  *stmts
	// tx's statement of each statement of st used so far
	used map[*sql.Stmt]*sql.Stmt
}

// bind binds the write statements to tx, for the length of tx.
func (s *Store) bind(ctx context.Context, tx *sql.Tx) *bound {
	return &bound{ctx: ctx, tx: tx, st: &s.st, used: make(map[*sql.Stmt]*sql.Stmt, 8)}
}

// stmt is p bound to b's transaction.
func (b *bound) stmt(p *sql.Stmt) *sql.Stmt {
	t, ok := b.used[p]
	if !ok {
		t = b.tx.StmtContext(b.ctx, p)
		b.used[p] = t
	}
	return t
}

func (b *bound) close() {
	for _, t := range b.used {
		t.Close()
	}
}
