package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sync"
)

// DefaultTable is the name of the table that CheckTx and CreateTable use
// unless a Dialect says otherwise.
const DefaultTable = "baton_fence"

// Dialect tells CheckTx and CreateTable how to speak to one kind of SQL
// database. Use SQLite or Postgres, optionally with another table name from
// WithTable. The zero Dialect is not usable.
type Dialect struct {
	key     *Key // nil: tokens are not authenticated
	name    string
	table   string
	upsert  string // insert or raise the token; affects 1 row if accepted, 0 if stale
	highest string // read the stored token of a name
	create  string // create the table if it does not exist

	// The fence log (WithLog); all empty when d keeps none.
	log, logInsert, logCreate, logIndex, logRead, logPrune, logPruneBelow string
}

// The supported dialects, using DefaultTable.
var (
	// SQLite uses ? placeholders and an INTEGER token column. It needs
	// SQLite 3.24 or later (upsert).
	SQLite = newDialect("sqlite", DefaultTable)
	// Postgres uses $1 placeholders and a BIGINT token column. It needs
	// PostgreSQL 9.5 or later (ON CONFLICT).
	Postgres = newDialect("postgres", DefaultTable)
)

func newDialect(name, table string) Dialect {
	p1, p2 := "?", "?"
	tokenType, tableOpts := "INTEGER", " WITHOUT ROWID"
	if name == "postgres" {
		p1, p2 = "$1", "$2"
		tokenType, tableOpts = "BIGINT", ""
	}
	return Dialect{
		name:  name,
		table: table,
		upsert: "INSERT INTO " + table + " (name, token) VALUES (" + p1 + ", " + p2 + ")" +
			" ON CONFLICT (name) DO UPDATE SET token = excluded.token" +
			" WHERE " + table + ".token <= excluded.token",
		highest: "SELECT token FROM " + table + " WHERE name = " + p1,
		create: "CREATE TABLE IF NOT EXISTS " + table +
			" (name TEXT PRIMARY KEY, token " + tokenType + " NOT NULL)" + tableOpts,
	}
}

// identifier is what WithTable accepts as a table name: a plain SQL
// identifier that needs no quoting in either dialect.
// Compiled on first use, not at start-up: every process links it, few use it.
var identifier = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`) })

// WithTable returns d using table instead of DefaultTable. The name must be
// a plain identifier (letters, digits and underscores, not starting with a
// digit, at most 63 characters); it is put into statements unquoted, so it
// is folded to lower case by PostgreSQL. To use another schema, set the
// search path of the connection.
func (d Dialect) WithTable(table string) (Dialect, error) {
	if err := d.check(); err != nil {
		return Dialect{}, err
	}
	if !identifier().MatchString(table) {
		return Dialect{}, fmt.Errorf("fence: Dialect.WithTable: table %q is not a plain SQL identifier", table)
	}
	if table == d.log {
		return Dialect{}, fmt.Errorf("fence: Dialect.WithTable: table %q is the fence log's; give the fence its own (such as %s)", table, DefaultTable)
	}
	nd := newDialect(d.name, table)
	nd.key = d.key
	nd.setLog(d.log)
	return nd, nil
}

// WithKey returns d requiring signed tokens: CheckSignedTx accepts only a
// token whose signature k made, and CheckTx, which carries none, is
// refused with ErrBadSignature.
func (d Dialect) WithKey(k *Key) (Dialect, error) {
	if err := d.check(); err != nil {
		return Dialect{}, err
	}
	if k == nil {
		return Dialect{}, errors.New("fence: Dialect.WithKey: nil key")
	}
	d.key = k
	return d, nil
}

// String returns the dialect's name and table, such as "sqlite:baton_fence".
func (d Dialect) String() string {
	if d.name == "" {
		return "<zero Dialect>"
	}
	return d.name + ":" + d.table
}

func (d Dialect) check() error {
	if d.name == "" {
		return errors.New("fence: zero Dialect: use fence.SQLite or fence.Postgres")
	}
	return nil
}

// Execer is what CreateTable needs: *sql.DB, *sql.Conn and *sql.Tx all
// implement it.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// CreateTable creates d's fence table if it does not exist yet: one row per
// name, holding the highest token accepted for it; and, when d keeps a
// log (WithLog), the log table and its index. It never changes an
// existing table.
//
// On SQLite, processes that create the table at the same moment can see
// one of them fail with SQLITE_BUSY, at once when its connection has no
// busy timeout (with modernc.org/sqlite, set one in the DSN:
// "_pragma=busy_timeout(5000)"). Create the table once at install time
// (`baton fence install`), or call CreateTable again on that error: the
// second call finds the table and succeeds.
func CreateTable(ctx context.Context, db Execer, d Dialect) error {
	if err := d.check(); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, d.create); err != nil {
		return fmt.Errorf("fence: create table %s: %w", d.table, err)
	}
	if d.log == "" {
		return nil
	}
	for _, q := range []string{d.logCreate, d.logIndex} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("fence: create table %s: %w", d.log, err)
		}
	}
	return nil
}

// CheckTx fences the caller's transaction tx: it accepts token for name if
// it is at least the highest token stored for name, and raises the stored
// token to it, as a write in tx. The check becomes durable, and the work
// fenced, only when the caller commits tx, together with the rest of the
// work done in tx.
//
// If token is stale, CheckTx returns an error wrapping ErrStaleToken that
// names the name, the token and the highest stored. On that error and on
// every other error the caller must roll tx back and commit nothing of the
// work: that is what keeps a stale leader's work from being applied. Call
// CheckTx before the work in tx, so that a stale leader does no work at all,
// though calling it anywhere before the commit is equally safe.
//
// Tokens are stored as signed 64-bit integers; a token above math.MaxInt64
// returns an error wrapping ErrInvalidToken. Token 0 and an empty name are
// refused too. The table must exist (see CreateTable). If ctx ends while
// CheckTx waits for a lock or runs, the driver abandons the statement and
// CheckTx returns an error (whether it wraps ctx's error depends on the
// driver); the caller rolls tx back as for any other error.
//
// Concurrency. The statement is a single upsert,
//
//	INSERT INTO baton_fence (name, token) VALUES (?, ?)
//	ON CONFLICT (name) DO UPDATE SET token = excluded.token
//	WHERE baton_fence.token <= excluded.token
//
// which affects one row if the token is accepted and none if it is stale.
//
// With PostgreSQL, READ COMMITTED (the default) is enough: the upsert locks
// the name's row and evaluates its WHERE against the latest committed token,
// so a concurrent transaction with another token for the same name waits for
// tx to end and then sees its outcome (the same holds for two transactions
// that insert a name not stored yet: the second waits on the primary key).
// The row lock is held until tx ends, so fenced transactions of one name
// run one at a time from their CheckTx on. At REPEATABLE READ or SERIALIZABLE,
// such a transaction fails with a serialization error instead, and the caller
// retries it.
//
// With SQLite, only one transaction writes at a time, so the check is atomic
// with the work. Open the database with the modernc.org/sqlite DSN parameter
// _txlock=immediate, so that every transaction takes the write lock at BEGIN
// (BEGIN IMMEDIATE), and set a busy timeout (for example
// _pragma=busy_timeout(5000)). With the default deferred transactions, a
// transaction that has read before calling CheckTx can fail with
// SQLITE_BUSY when another connection writes first.
//
// With a Dialect that keeps a log (WithLog), CheckTx logs an accepted
// token with no period; CheckWriteTx names the period.
func CheckTx(ctx context.Context, tx *sql.Tx, d Dialect, name string, token uint64) error {
	return CheckWriteTx(ctx, tx, d, Write{Name: name, Token: token})
}

// CheckSignedTx is CheckTx for a token that carries the signature sig (see
// Key). With a Dialect that holds a key (WithKey) it refuses, before
// touching the database, a token whose signature is missing or invalid,
// with an error wrapping ErrBadSignature; without a key it ignores sig.
func CheckSignedTx(ctx context.Context, tx *sql.Tx, d Dialect, name string, token uint64, sig string) error {
	return CheckWriteTx(ctx, tx, d, Write{Name: name, Token: token, Sig: sig})
}

// checkSignedTx is the check itself, without the log.
func checkSignedTx(ctx context.Context, tx *sql.Tx, d Dialect, name string, token uint64, sig string) error {
	if err := d.check(); err != nil {
		return err
	}
	if tx == nil {
		return errors.New("fence: CheckTx: nil transaction")
	}
	if err := validate(name, token); err != nil {
		return err
	}
	if err := verify(d.key, name, token, sig); err != nil {
		return err
	}
	if token > math.MaxInt64 {
		return fmt.Errorf("%w: token %d for %q is above %d, the largest a SQL BIGINT holds", ErrInvalidToken, token, name, int64(math.MaxInt64))
	}
	res, err := tx.ExecContext(ctx, d.upsert, name, int64(token))
	if err != nil {
		return fmt.Errorf("fence: check %q at token %d: %w", name, token, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fence: check %q at token %d: rows affected: %w", name, token, err)
	}
	switch n {
	case 1:
		return nil
	case 0:
		var highest int64
		if err := tx.QueryRowContext(ctx, d.highest, name).Scan(&highest); err != nil {
			return fmt.Errorf("%w: name %q, token %d (reading the highest: %v)", ErrStaleToken, name, token, err)
		}
		return staleError(name, token, uint64(highest))
	default:
		return fmt.Errorf("fence: check %q at token %d: %d rows affected, want 0 or 1: is name the primary key of %s?", name, token, n, d.table)
	}
}
