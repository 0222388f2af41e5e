package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	driver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/batonhq/baton/store"
)

// SchemaVersion is the version of the baton tables this package reads and
// writes. It is stored in the baton_meta table under the key
// schema_version. Version 2 added the election log's detail column and
// the baton_candidates table; version 3 the election record's session
// column (store.Record.Session) and the index on its version that the
// change feed reads (see Store.WatchChanges); version 4 the job's
// suspension columns (store.Job.Suspension, see suspend.go); version 5 the
// election record's changed column, which the change feed follows instead
// of the version, so that a renewal writes one row and nothing else (see
// renewStmt), and renamed the version counter last_version to
// last_change; version 6 the election record's log_seq column, the
// sequence number of the name's newest log event, which every write of a
// log event reads and raises instead of reading the log's max(seq) (see
// logSeqUpgrade), and renamed the counter last_change to change_counter
// (counterKey); version 7 the session record's successor,
// successor_holder and successor_incarnation columns (store.Succeeder: see
// succession.go) and the index on the session column, and renamed the
// counter change_counter to version_counter. An older store is upgraded in
// place when a writer opens it, and read as it is by a read-only opener. A
// baton that knows an older version refuses a store of this one; one of an
// older version still running when the store is upgraded fails its next
// write (its counter key is gone) instead of writing records the change
// feed would not see (version 5), log events that log_seq does not count
// (version 6), or a name passed on by a succession at its stored token + 1,
// a token already handed out (version 7). Version 8 added the candidates'
// attributes (store.Candidate.Attrs, the attrs column) and the jobs'
// preference policies (store.Job.Prefer), which a baton of version 7
// still running neither reads nor harms.
const SchemaVersion = 8

// counterKey is the baton_meta key of the store-wide counter that every
// write but a renewal raises (see nextVersion). Its name changes with an
// upgrade whose writes an older baton must not make (last_version before
// version 5, last_change before version 6, change_counter before version
// 7): such a baton, still running, finds no counter and fails its next
// write.
const counterKey = "version_counter"

// schema creates the baton tables. Every statement is idempotent, so
// processes racing to create a new file converge.
//
// baton_meta holds schema_version and the store-wide counter (counterKey)
// that every write but a renewal raises (see nextVersion): the newest
// changed value of an election record, and a floor for new versions.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS baton_meta (
		key   TEXT PRIMARY KEY,
		value INTEGER NOT NULL
	) STRICT`,
	`CREATE TABLE IF NOT EXISTS baton_election (
		name        TEXT PRIMARY KEY,
		holder      TEXT NOT NULL,
		incarnation TEXT NOT NULL,
		token       INTEGER NOT NULL CHECK (token >= 0),
		lease_ns    INTEGER NOT NULL,
		transfer    TEXT NOT NULL,
		version     INTEGER NOT NULL,
		updated_ns  INTEGER NOT NULL,
		session     TEXT NOT NULL DEFAULT '',
		changed     INTEGER NOT NULL DEFAULT 0,
		log_seq     INTEGER NOT NULL DEFAULT 0,
		successor             TEXT NOT NULL DEFAULT '',
		successor_holder      TEXT NOT NULL DEFAULT '',
		successor_incarnation TEXT NOT NULL DEFAULT ''
	) STRICT`,
	changedIndex,
	sessionIndex,
	`CREATE TABLE IF NOT EXISTS baton_election_log (
		name        TEXT NOT NULL,
		seq         INTEGER NOT NULL,
		kind        TEXT NOT NULL,
		holder      TEXT NOT NULL,
		incarnation TEXT NOT NULL,
		token       INTEGER NOT NULL,
		transfer    TEXT NOT NULL,
		time_ns     INTEGER NOT NULL,
		detail      TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (name, seq)
	) STRICT, WITHOUT ROWID`,
	candidatesTable,
	`CREATE TABLE IF NOT EXISTS baton_jobs (
		name       TEXT PRIMARY KEY,
		schedule   TEXT NOT NULL,
		created_ns INTEGER NOT NULL,
		suspended_ns   INTEGER NOT NULL DEFAULT 0,
		suspended_by   TEXT NOT NULL DEFAULT '',
		suspend_reason TEXT NOT NULL DEFAULT '',
		prefer               TEXT NOT NULL DEFAULT '',
		prefer_hysteresis_ns INTEGER NOT NULL DEFAULT 0
	) STRICT`,
	`CREATE TABLE IF NOT EXISTS baton_runs (
		job          TEXT NOT NULL,
		period       TEXT NOT NULL,
		scheduled_ns INTEGER,
		state        TEXT NOT NULL,
		token        INTEGER NOT NULL CHECK (token >= 0),
		holder       TEXT NOT NULL,
		attempt      INTEGER NOT NULL,
		manual       INTEGER NOT NULL,
		started_ns   INTEGER,
		finished_ns  INTEGER,
		exit_code    INTEGER NOT NULL,
		output       TEXT NOT NULL,
		version      INTEGER NOT NULL,
		PRIMARY KEY (job, period)
	) STRICT`,
	fmt.Sprintf(`INSERT INTO baton_meta (key, value) VALUES ('schema_version', %d), ('%s', 0)
		ON CONFLICT (key) DO NOTHING`, SchemaVersion, counterKey),
	storeIDStmt,
}

// storeIDStmt gives a store that has none its id: a random non-zero 64-bit
// integer (SQLite's random(), from the operating system's entropy).
const storeIDStmt = `INSERT INTO baton_meta (key, value) VALUES ('` + storeIDKey + `', (SELECT abs(random()) | 1))
	ON CONFLICT (key) DO NOTHING`

// candidatesTable holds the nodes campaigning for a name (Heartbeat),
// with their attributes (attrs, store.Candidate.Attrs: schema 8).
const candidatesTable = `CREATE TABLE IF NOT EXISTS baton_candidates (
		name        TEXT NOT NULL,
		node        TEXT NOT NULL,
		incarnation TEXT NOT NULL,
		every_ns    INTEGER NOT NULL,
		since_ns    INTEGER NOT NULL,
		seen_ns     INTEGER NOT NULL,
		attrs       TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (name, node)
	) STRICT, WITHOUT ROWID`

// candidatesTableV2 is the candidates table as version 2 made it, which
// the upgrade from version 1 makes before attrsUpgrade adds its column.
const candidatesTableV2 = `CREATE TABLE IF NOT EXISTS baton_candidates (
		name        TEXT NOT NULL,
		node        TEXT NOT NULL,
		incarnation TEXT NOT NULL,
		every_ns    INTEGER NOT NULL,
		since_ns    INTEGER NOT NULL,
		seen_ns     INTEGER NOT NULL,
		PRIMARY KEY (name, node)
	) STRICT, WITHOUT ROWID`

// attrsUpgrade turns a version 7 store into a version 8 one: the
// candidates' attributes, empty on every row there is (no attributes),
// and the jobs' preference policies (store.Job.Prefer), none for every
// job. A baton of version 7 still running writes its candidate rows and
// jobs as before (the columns keep their values, or the defaults) and
// reads them without them; nothing it does conflicts, so its counter key
// stays.
var attrsUpgrade = []string{
	`ALTER TABLE baton_candidates ADD COLUMN attrs TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE baton_jobs ADD COLUMN prefer TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE baton_jobs ADD COLUMN prefer_hysteresis_ns INTEGER NOT NULL DEFAULT 0`,
	`UPDATE baton_meta SET value = 8 WHERE key = 'schema_version'`,
}

// versionIndex ordered the election records by version for the change
// feed of a version 3 or 4 store; version 5 drops it for changedIndex.
const versionIndex = `CREATE INDEX IF NOT EXISTS baton_election_version ON baton_election (version)`

// changedIndex orders the election records by changed: the value of the
// store-wide counter at the record's last write other than a renewal, so
// that the records changed since counter value c are the index entries
// above c, and the change feed reads only those. A renewal changes neither
// the column nor the index (one page written, not three).
const changedIndex = `CREATE INDEX IF NOT EXISTS baton_election_changed ON baton_election (changed)`

// upgrades[v] turns a version v store into a version v+1 one; they run in
// order, in one transaction under the write lock, after the version was
// read again.
var upgrades = map[int64][]string{
	1: {
		`ALTER TABLE baton_election_log ADD COLUMN detail TEXT NOT NULL DEFAULT ''`,
		candidatesTableV2,
		`UPDATE baton_meta SET value = 2 WHERE key = 'schema_version'`,
		storeIDStmt,
	},
	2: {
		`ALTER TABLE baton_election ADD COLUMN session TEXT NOT NULL DEFAULT ''`,
		versionIndex,
		`UPDATE baton_meta SET value = 3 WHERE key = 'schema_version'`,
	},
	3: suspendUpgrade,
	4: {
		`ALTER TABLE baton_election ADD COLUMN changed INTEGER NOT NULL DEFAULT 0`,
		`UPDATE baton_election SET changed = version`,
		changedIndex,
		`DROP INDEX IF EXISTS baton_election_version`,
		// A baton of version 4 still running reads and raises
		// last_version at every write: without it, its writes fail
		// rather than leave changed behind.
		`UPDATE baton_meta SET key = 'last_change' WHERE key = 'last_version'`,
		`UPDATE baton_meta SET value = 5 WHERE key = 'schema_version'`,
	},
	5: logSeqUpgrade,
	6: successionUpgrade,
	7: attrsUpgrade,
}

// sessionIndex orders the election records by the session record they
// are held through, then by name: HeldThrough and Settle read a range of
// it, DeleteSession one entry, instead of the table.
const sessionIndex = `CREATE INDEX IF NOT EXISTS baton_election_session ON baton_election (session, name)`

// successionUpgrade turns a version 6 store into a version 7 one: the
// columns of a session record's successor, empty on every record (no
// succession yet), and the session index.
var successionUpgrade = []string{
	`ALTER TABLE baton_election ADD COLUMN successor TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE baton_election ADD COLUMN successor_holder TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE baton_election ADD COLUMN successor_incarnation TEXT NOT NULL DEFAULT ''`,
	sessionIndex,
	// A baton of version 6 still running knows no successions: it would
	// read a name passed on as held by the dead session, and take it at
	// its stored token + 1, a token the succession already handed out.
	// Without its counter key it fails at its next write instead (a
	// renewal reads the counter too: see renewStmt).
	`UPDATE baton_meta SET key = '` + counterKey + `' WHERE key = 'change_counter'`,
	`UPDATE baton_meta SET value = 7 WHERE key = 'schema_version'`,
}

// logSeqUpgrade turns a version 5 store into a version 6 one. The election
// record's log_seq is the sequence number of its name's newest log event
// (0: none): a write of a log event takes log_seq + 1 and stores it back,
// in the same transaction, instead of reading max(seq) from the log (a
// search of the log's primary key per event; a bulk takeover's figures
// are in BENCHMARKS.md). The upgrade sets it from the log.
var logSeqUpgrade = []string{
	`ALTER TABLE baton_election ADD COLUMN log_seq INTEGER NOT NULL DEFAULT 0`,
	`UPDATE baton_election SET log_seq = (SELECT coalesce(max(l.seq), 0) FROM baton_election_log l WHERE l.name = baton_election.name)`,
	// A baton of version 5 still running would append log events at the
	// log's max(seq) + 1 without raising log_seq, and this version's next
	// event of that name would then collide with it (the log's primary
	// key): without its counter key it fails at once instead.
	`UPDATE baton_meta SET key = 'change_counter' WHERE key = 'last_change'`,
	`UPDATE baton_meta SET value = 6 WHERE key = 'schema_version'`,
}

// queryRower is what *sql.DB, *sql.Conn and *sql.Tx have in common.
type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// schemaVersion reads the baton schema version of the file; found is false
// when the file has no baton_meta table (a new or foreign database).
func schemaVersion(ctx context.Context, q queryRower) (version int64, found bool, err error) {
	var n int
	err = q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'baton_meta'`).Scan(&n)
	if err != nil || n == 0 {
		return 0, false, err
	}
	err = q.QueryRowContext(ctx, `SELECT value FROM baton_meta WHERE key = 'schema_version'`).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, true, nil
	}
	return version, true, err
}

// checkVersion refuses a schema version this package does not know.
func (s *Store) checkVersion(version int64, found bool) error {
	switch {
	case !found || (version >= 1 && version <= SchemaVersion):
		return nil
	case version > SchemaVersion:
		return fmt.Errorf("sqlite: %w: %s has baton schema version %d, this baton supports version %d: open it with a newer baton", store.ErrSchema, s.path, version, SchemaVersion)
	default:
		return fmt.Errorf("sqlite: %w: %s has a baton_meta table with unknown schema version %d (this baton supports version %d): it was not written by baton", store.ErrSchema, s.path, version, SchemaVersion)
	}
}

// init checks the file's schema version and, for a file that is not a
// baton store yet, switches it to WAL and creates the baton tables. Nothing is written to a
// file whose version is refused: the version is read before the journal
// mode is changed, and read again under the write lock before the tables
// are created.
func (s *Store) init(ctx context.Context) error {
	const op = "open"
	version, found, err := schemaVersion(ctx, s.db)
	if err != nil {
		return s.fail(ctx, op, err)
	}
	if err := s.checkVersion(version, found); err != nil {
		return err
	}
	var mode string
	if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return s.fail(ctx, op, err)
	}
	if found {
		if err := s.quickCheck(ctx); err != nil {
			return err
		}
	}
	if found && mode == "wal" && version == SchemaVersion {
		// A baton store already: opening it takes no lock, so a process
		// frozen inside a write elsewhere does not stop this one opening
		// (unless it has no store id yet: then it is given one).
		return s.loadStoreID(ctx)
	}
	if mode, err = s.switchToWAL(ctx); err != nil {
		return s.fail(ctx, op, err)
	}
	if mode != "wal" {
		return fmt.Errorf("sqlite: open %s: %w: cannot switch to the WAL journal mode (SQLite kept %q); is the file on a network file system?", s.path, store.ErrUnavailable, mode)
	}
	if err := s.write(ctx, op, func(tx *sql.Tx) error {
		version, found, err := schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		if err := s.checkVersion(version, found); err != nil {
			return err
		}
		if !found {
			// Checked before anything was written (refuseForeign);
			// again here, under the write lock, for a schema made
			// since by another process than baton.
			var objects int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&objects); err != nil {
				return err
			}
			if objects > 0 {
				return foreignDatabase(s.path)
			}
		}
		stmts := schema
		if found {
			stmts = nil
			for v := version; v < SchemaVersion; v++ {
				stmts = append(stmts, upgrades[v]...)
			}
		}
		for _, stmt := range stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return s.loadStoreID(ctx)
}

// switchToWAL sets the WAL journal mode and returns the mode SQLite kept.
// Another process switching the same new file at once can make SQLite
// answer busy at once, without waiting in the busy handler: the switch is
// tried again until the busy timeout has passed.
func (s *Store) switchToWAL(ctx context.Context) (string, error) {
	deadline := time.Now().Add(s.cfg.busyTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		var mode string
		err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode)
		var se *driver.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().Add(wait).After(deadline) {
			return mode, err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// quickCheck runs SQLite's quick_check on an existing store, so that a
// damaged file is refused at Open with store.ErrCorrupt rather than found
// page by page later (a leader elected on it would renew and run nothing).
// It reads every page once: milliseconds for a store of a few megabytes.
func (s *Store) quickCheck(ctx context.Context) error {
	var res string
	if err := s.db.QueryRowContext(ctx, `PRAGMA quick_check(1)`).Scan(&res); err != nil {
		return s.fail(ctx, "open", err)
	}
	if res != "ok" {
		res = strings.Join(strings.Fields(strings.ReplaceAll(res, "***", "")), " ")
		return fmt.Errorf("sqlite: open: %w: %s is damaged (quick_check: %s); restore it from a backup (see baton store floor) or move it away", store.ErrCorrupt, s.path, res)
	}
	return nil
}

// loadStoreID reads the store id, writing one first if the store has none.
func (s *Store) loadStoreID(ctx context.Context) error {
	id, found, err := readStoreID(ctx, s.db)
	if err != nil {
		return s.fail(ctx, "open", err)
	}
	if !found {
		if err := s.write(ctx, "open", func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, storeIDStmt)
			return err
		}); err != nil {
			return err
		}
		if id, _, err = readStoreID(ctx, s.db); err != nil {
			return s.fail(ctx, "open", err)
		}
	}
	s.id = id
	return s.ensureMark(ctx)
}

// Store identity.

// fileID is what names one file on this host: its device and inode. A path
// that names another fileID than the one Open found names another store.
type fileID struct{ dev, ino uint64 }

// statID returns the fileID of path.
func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	return fileIDOf(fi), nil
}

// fileIDOf returns the fileID of the file fi describes.
func fileIDOf(fi fs.FileInfo) fileID {
	dev, ino, ok := inode(fi)
	if !ok {
		return fileID{} // no inode on this platform: the store id check remains
	}
	return fileID{dev: dev, ino: ino}
}

// checkFile returns an error wrapping store.ErrReplaced when the store's
// path no longer names the file Open opened: it was deleted, moved, or
// replaced by another file (a restored backup, a fresh store another
// process created). The open connections would go on reading and writing
// the unlinked file, which nobody else sees: a leader renewing there would
// lead alone on a store that no longer exists. It then checks the file's
// header (checkHeader).
func (s *Store) checkFile(op string) error {
	id, err := statID(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("sqlite: %s: %w: %s no longer exists (deleted or moved while open)", op, store.ErrReplaced, s.path)
	case err != nil:
		return fmt.Errorf("sqlite: %s: %w: %s: %w", op, store.ErrUnavailable, s.path, err)
	case id != s.file:
		return fmt.Errorf("sqlite: %s: %w: %s is now another file than the one opened (replaced or restored while open)", op, store.ErrReplaced, s.path)
	}
	return s.checkHeader(op)
}

// The file's header, as SQLite lays it out: its first 100 bytes, starting
// with the magic string, and the application id at offset 68, where baton
// writes the store's mark (markOf).
const (
	headerSize  = 100
	appIDOffset = 68
	sqliteMagic = "SQLite format 3\x00"
)

// markOf is the mark of the store whose id is id: 32 bits of the id, never
// 0 (0 is a file with no mark yet). Open writes it to the file's
// application id (ensureMark).
func markOf(id int64) uint32 { return uint32(uint64(id)) | 1 }

// checkHeader returns an error wrapping store.ErrReplaced when the file
// Open opened now holds another store than this one: a copy of another
// store written over it in place (cp other.db baton.db keeps the inode,
// so checkFile's device and inode agree). checkStoreID cannot see that:
// SQLite keeps the pages it read while no connection has committed, and
// the -wal file, which the copy leaves alone, overrides the copy's pages
// with this store's; only the file's own bytes tell. So it reads the
// header from the file itself (one pread of 100 bytes) and compares the
// mark there with this store's.
//
// The mark reaches the file when SQLite checkpoints page 1 (at once for
// a new store: see ensureMark). Until the file has shown it once, a file
// with no mark, or one too short for a header, is taken as not yet
// checkpointed; after, it is a replacement too.
func (s *Store) checkHeader(op string) error {
	if s.fd == nil {
		return nil // read-only: no leader renews on it
	}
	var h [headerSize]byte
	n, err := s.fd.ReadAt(h[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("sqlite: %s: %w: %s: %w", op, store.ErrUnavailable, s.path, err)
	}
	seen := s.markSeen.Load()
	if n < headerSize {
		if seen {
			return fmt.Errorf("sqlite: %s: %w: %s is now %d bytes, too short for the store it held (truncated or overwritten while open)", op, store.ErrReplaced, s.path, n)
		}
		return nil
	}
	if string(h[:len(sqliteMagic)]) != sqliteMagic {
		return fmt.Errorf("sqlite: %s: %w: %s is no longer an SQLite database (overwritten while open)", op, store.ErrReplaced, s.path)
	}
	switch mark := binary.BigEndian.Uint32(h[appIDOffset:]); {
	case mark == s.mark:
		if !seen {
			s.markSeen.Store(true)
		}
	case mark != 0:
		return fmt.Errorf("sqlite: %s: %w: %s now holds another store (mark %08x, not this store's %08x): a copy was written over it while open",
			op, store.ErrReplaced, s.path, mark, s.mark)
	case seen:
		return fmt.Errorf("sqlite: %s: %w: %s no longer holds this store's mark %08x: another file was written over it while open", op, store.ErrReplaced, s.path, s.mark)
	}
	return nil
}

// openFile opens the file Open opened for checkHeader, and checks it once.
func (s *Store) openFile() error {
	fd, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w: %w", s.path, store.ErrUnavailable, err)
	}
	fi, err := fd.Stat()
	if err == nil && fileIDOf(fi) != s.file {
		err = fmt.Errorf("sqlite: open: %w: %s is now another file than the one opened (replaced while opening)", store.ErrReplaced, s.path)
	} else if err == nil {
		s.fd = fd
		err = s.checkHeader("open")
	}
	if err != nil {
		fd.Close()
		s.fd = nil
	}
	return err
}

// ensureMark writes the store's mark to the file's application id if it
// has none yet (a new store, or one made by an older baton), and asks
// SQLite to checkpoint, so that the mark is in the file itself, where
// checkHeader reads it, and not only in the -wal file. The checkpoint is
// passive: it waits for nobody, and if it cannot copy page 1 now, a later
// one does. An application id that is neither 0 nor the mark was written
// by another program: the store is refused as corrupt.
func (s *Store) ensureMark(ctx context.Context) error {
	s.mark = markOf(s.id)
	var app int64
	if err := s.db.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&app); err != nil {
		return s.fail(ctx, "open", err)
	}
	switch mark := uint32(app); {
	case mark == s.mark:
	case mark != 0:
		return fmt.Errorf("sqlite: open: %w: %s has the application id %08x, not this store's mark %08x: another program changed it; restore it from a backup (see baton store floor) or move it away",
			store.ErrCorrupt, s.path, mark, s.mark)
	default:
		if err := s.write(ctx, "open", func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA application_id = %d`, int32(s.mark)))
			return err
		}); err != nil {
			return err
		}
	}
	s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`) //nolint:errcheck // best effort: see above
	return nil
}

// storeIDKey is the baton_meta key of the store id: a random 64-bit
// integer written when the store is created, never changed.
const storeIDKey = "store_id"

// readStoreID returns the store id, and found false when the store has
// none yet (created by an older baton).
func readStoreID(ctx context.Context, q queryRower) (id int64, found bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT value FROM baton_meta WHERE key = '`+storeIDKey+`'`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// checkStoreID returns an error wrapping store.ErrReplaced when the file
// holds another store than the one Open found (a copy of another store
// written over it in place). It runs inside every write transaction.
func (s *Store) checkStoreID(ctx context.Context, op string, tx *sql.Tx) error {
	id, found, err := readStoreID(ctx, tx)
	if err != nil {
		return err
	}
	if !found || id != s.id {
		return fmt.Errorf("sqlite: %s: %w: %s now holds store %s, not the store %s this process opened (overwritten while open)",
			op, store.ErrReplaced, s.path, formatID(id), formatID(s.id))
	}
	return nil
}

func formatID(id int64) string { return strconv.FormatUint(uint64(id), 16) }

// StoreID implements store.Identifier: the id made when the store was
// created, in hexadecimal.
func (s *Store) StoreID() string { return formatID(s.id) }

// createFile creates path with mode 0600 if it does not exist, so that the
// store, and the -wal and -shm files SQLite creates with the database's
// mode, are readable by their owner only.
func createFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil
	case err != nil:
		return pathError("create", path, err)
	}
	return f.Close()
}

// detailCol is the election log's detail column, or an empty string for a
// version 1 store (read-only) that has none.
func (s *Store) detailCol() string {
	if s.schema < 2 {
		return "''"
	}
	return "detail"
}

// changedCol is the election record's column the change feed follows:
// changed, or version in a store older than version 5 (read-only).
func (s *Store) changedCol() string {
	if s.schema < 5 {
		return "version"
	}
	return "changed"
}

// successorCols are the session record's successor columns, each NULL
// when empty (nullText scans them: most rows have no successor, and a
// NULL costs the scan less than a text), or NULLs for a store older than
// version 7 (read-only) that has none.
func (s *Store) successorCols() string {
	if s.schema < 7 {
		return "NULL, NULL, NULL"
	}
	return successorCols
}

// successorCols are the successor columns of baton_election, NULL when
// empty (see Store.successorCols).
const successorCols = `nullif(successor, ''), nullif(successor_holder, ''), nullif(successor_incarnation, '')`

// sessionCol is the election record's session column, or an empty string
// for a store older than version 3 (read-only) that has none.
func (s *Store) sessionCol() string {
	if s.schema < 3 {
		return "''"
	}
	return "session"
}
