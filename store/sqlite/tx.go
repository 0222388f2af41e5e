package sqlite

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"time"

	driver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/batonhq/baton/store"
)

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
	renew, err := c.PrepareContext(ctx, renewStmt)
	if err != nil {
		c.Close()
		return s.fail(ctx, "open", err)
	}
	s.writerRenew = renew
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
	var damaged *store.DamagedRowError
	if errors.As(err, &damaged) { // its message says the fix
		return fmt.Errorf("sqlite: %s: %s: %w", op, path, err)
	}
	if errors.Is(err, store.ErrCorrupt) { // a row baton did not write (checkRow)
		return fmt.Errorf("sqlite: %s: %s: %w; restore it from a backup (see baton store floor) or move it away", op, path, err)
	}
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
		errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrStaleToken) || errors.Is(err, store.ErrSuspended) ||
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
	return s.writeTurn(ctx, op, false, fn)
}

// writeTurn is write, with urgent saying whether the write goes ahead of
// the queued writes that are not urgent (see turn): a single swap's.
func (s *Store) writeTurn(ctx context.Context, op string, urgent bool, fn func(tx *sql.Tx) error) error {
	if err := s.enter(ctx, op); err != nil {
		return err
	}
	if s.readOnly {
		return fmt.Errorf("sqlite: %s: %w: %s was opened read-only", op, store.ErrInvalid, s.path)
	}
	done, err := s.takeTurn(ctx, urgent)
	if err != nil {
		return s.fail(ctx, op, err)
	}
	defer done()
	s.prepareWanted(ctx)
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

// nextVersion raises the store-wide counter to above floor and its own
// value, and returns the new value: the version of a write that is not a
// renewal (a run's, or a record's with floor its current version, which a
// renewal may have taken above the counter: see renewStmt). A version is
// never reused for one record or run.
func nextVersion(ctx context.Context, tx *sql.Tx, floor int64) (int64, error) {
	var v int64
	err := tx.QueryRowContext(ctx, `UPDATE baton_meta SET value = max(value, ?) + 1 WHERE key = '`+counterKey+`' RETURNING value`, floor).Scan(&v)
	return v, err
}
