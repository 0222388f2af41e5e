package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/batonhq/baton/store"
)

// DefaultLogTable is the name of the fence log table that WithLog
// suggests and pgfence uses.
const DefaultLogTable = "baton_fence_log"

// The outcomes a fence log row records.
const (
	// Accepted: the fence accepted the token and its transaction
	// committed (the row is written in that transaction).
	Accepted = "accepted"
	// Refused: the fence refused the token as stale (the row is written
	// after the caller rolled back, by LogRefusal).
	Refused = "refused"
)

// Write is one fenced write as the fence log records it: the election
// name and token it carries, the token's signature (for a Dialect with a
// key; never logged) and the key of the scheduled period it does, empty
// when it belongs to no period. A command started by `baton run` gets all
// four from its environment (WriteFromEnv).
type Write struct {
	Name   string
	Token  uint64
	Sig    string
	Period string
}

// WriteFromEnv reads the Write handed to this process by `baton run`: the
// name and token as FromEnv reads them, the signature from EnvTokenSig and
// the period from EnvPeriod.
func WriteFromEnv() (Write, error) {
	name, token, err := FromEnv()
	if err != nil {
		return Write{}, err
	}
	return Write{Name: name, Token: token, Sig: SigFromEnv(), Period: os.Getenv(EnvPeriod)}, nil
}

// LogEntry is one row of the fence log, as ReadLog returns it.
type LogEntry struct {
	// Seq orders the rows. For one name, the accepted rows' order is the
	// order in which the fence accepted them: the row is written while
	// the fence row of the name is locked.
	Seq int64 `json:"seq"`
	// Name, Token and Period are those of the Write.
	Name   string `json:"name"`
	Token  uint64 `json:"token"`
	Period string `json:"period,omitempty"`
	// Outcome is Accepted or Refused.
	Outcome string `json:"outcome"`
	// Highest is, for a refusal, the highest token the fence held then (0
	// if unknown); for an acceptance, the token.
	Highest uint64 `json:"highest"`
	// At is the writer's wall clock when it wrote the row, for people:
	// clocks of different writers need not agree, so order by Seq.
	At time.Time `json:"at"`
}

// setLog sets d's fence log table and builds its statements.
func (d *Dialect) setLog(table string) {
	d.log = table
	if table == "" {
		d.logInsert, d.logCreate, d.logIndex, d.logRead = "", "", "", ""
		return
	}
	ph := "?, ?, ?, ?, ?, ?"
	seq := "seq INTEGER PRIMARY KEY AUTOINCREMENT"
	if d.name == "postgres" {
		ph = "$1, $2, $3, $4, $5, $6"
		seq = "seq BIGSERIAL PRIMARY KEY"
	}
	d.logInsert = "INSERT INTO " + table + " (name, token, period, outcome, highest, at_ns) VALUES (" + ph + ")"
	d.logCreate = "CREATE TABLE IF NOT EXISTS " + table + " (" + seq +
		", name TEXT NOT NULL, token BIGINT NOT NULL, period TEXT NOT NULL, outcome TEXT NOT NULL," +
		" highest BIGINT NOT NULL, at_ns BIGINT NOT NULL)"
	d.logIndex = "CREATE INDEX IF NOT EXISTS " + table + "_name ON " + table + " (name, seq)"
	p1, p2 := "?", "?"
	if d.name == "postgres" {
		p1, p2 = "$1", "$2"
	}
	d.logRead = "SELECT seq, name, token, period, outcome, highest, at_ns FROM " + table + " WHERE name = " + p1 + " ORDER BY seq"
	d.logPrune = "DELETE FROM " + table + " WHERE name = " + p1 + " AND at_ns < " + p2
	p3 := "?"
	if d.name == "postgres" {
		p3 = "$3"
	}
	d.logPruneBelow = d.logPrune + " AND period < " + p3
}

// WithLog returns d keeping a fence log in table (DefaultLogTable is the
// usual name; the same rules as for WithTable apply): every token
// CheckWriteTx accepts adds an "accepted" row in the caller's transaction,
// so a write that rolls back leaves no row, and LogRefusal adds a
// "refused" row for a stale token. CreateTable then creates the log table
// too. `baton verify --fence-db` reads it to prove every period was
// accepted exactly once; `baton prune --fence-db` deletes old rows.
//
// What is guaranteed: an "accepted" row exists if and only if its
// transaction committed, whatever the caller does. A "refused" row exists
// only if the caller called LogRefusal after rolling back (a process that
// dies first records nothing of the refusal): the refusals are a sample,
// every one of them true, not a complete list.
func (d Dialect) WithLog(table string) (Dialect, error) {
	if err := d.check(); err != nil {
		return Dialect{}, err
	}
	if !identifier().MatchString(table) {
		return Dialect{}, fmt.Errorf("fence: Dialect.WithLog: table %q is not a plain SQL identifier", table)
	}
	if table == d.table {
		return Dialect{}, fmt.Errorf("fence: Dialect.WithLog: table %q is the fence table itself; give the log its own (such as %s)", table, DefaultLogTable)
	}
	d.setLog(table)
	return d, nil
}

// LogTable returns the name of d's fence log table, empty when d keeps
// no log.
func (d Dialect) LogTable() string { return d.log }

// CheckWriteTx is CheckSignedTx for w, which also names the period the
// write does: with a Dialect that keeps a log (WithLog), an accepted
// token adds an "accepted" row (name, token, period, time) to the log in
// tx, after the fence row is raised. A stale token returns the same error
// as CheckSignedTx and logs nothing in tx, which the caller rolls back;
// pass the error to LogRefusal afterwards to record the refusal.
func CheckWriteTx(ctx context.Context, tx *sql.Tx, d Dialect, w Write) error {
	if err := checkSignedTx(ctx, tx, d, w.Name, w.Token, w.Sig); err != nil {
		return err
	}
	if d.log == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, d.logInsert, w.Name, int64(w.Token), w.Period, Accepted, int64(w.Token), nowNano()); err != nil {
		return fmt.Errorf("fence: log the acceptance of %q at token %d in %s: %w", w.Name, w.Token, d.log, err)
	}
	return nil
}

// LogRefusal records in d's fence log that w was refused, when refusal
// (the error CheckWriteTx returned) wraps ErrStaleToken; for any other
// error, or nil, it records nothing and returns nil. Call it with the
// database (not the rolled-back transaction) after rolling back. The row
// holds the highest token the fence answered with. It is best effort: an
// error here does not change that the write was refused.
func LogRefusal(ctx context.Context, db Execer, d Dialect, w Write, refusal error) error {
	if err := d.check(); err != nil {
		return err
	}
	if d.log == "" {
		return errors.New("fence: LogRefusal: the Dialect keeps no log; use Dialect.WithLog")
	}
	if !errors.Is(refusal, ErrStaleToken) {
		return nil
	}
	var highest uint64
	var se *staleErr
	if errors.As(refusal, &se) {
		highest = se.highest
	}
	if _, err := db.ExecContext(ctx, d.logInsert, w.Name, int64(w.Token), w.Period, Refused, int64(highest), nowNano()); err != nil {
		return fmt.Errorf("fence: log the refusal of %q at token %d in %s: %w", w.Name, w.Token, d.log, err)
	}
	return nil
}

// Querier is what ReadLog needs: *sql.DB, *sql.Conn and *sql.Tx implement
// it.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// ReadLog returns the fence log rows of name in d's log table, in Seq
// order. A row no writer makes is a corrupt record, reported as an error
// wrapping store.ErrCorrupt that names the row, never returned: a token
// that is not an integer from 1 to math.MaxInt64, a highest token that is
// not an integer from 0 to math.MaxInt64, an outcome other than Accepted
// and Refused.
func ReadLog(ctx context.Context, db Querier, d Dialect, name string) ([]LogEntry, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.log == "" {
		return nil, errors.New("fence: ReadLog: the Dialect keeps no log; use Dialect.WithLog")
	}
	rows, err := db.QueryContext(ctx, d.logRead, name)
	if err != nil {
		return nil, fmt.Errorf("fence: read %s: %w", d.log, err)
	}
	defer rows.Close()
	var out []LogEntry
	for rows.Next() {
		var e LogEntry
		var token, highest any
		var at int64
		if err := rows.Scan(&e.Seq, &e.Name, &token, &e.Period, &e.Outcome, &highest, &at); err != nil {
			return nil, fmt.Errorf("fence: read %s: %w", d.log, err)
		}
		corrupt := func(format string, a ...any) error {
			return fmt.Errorf("fence: read %s: corrupt record at row seq %d (name %q): %s; the log was damaged or written by something other than baton (%w)",
				d.log, e.Seq, e.Name, fmt.Sprintf(format, a...), store.ErrCorrupt)
		}
		var ok bool
		if e.Token, ok = logToken(token); !ok || e.Token == 0 {
			return nil, corrupt("token %s is not a fencing token (an integer from 1 to %d)", logValue(token), int64(math.MaxInt64))
		}
		if e.Highest, ok = logToken(highest); !ok {
			return nil, corrupt("highest %s is not a token (an integer from 0 to %d)", logValue(highest), int64(math.MaxInt64))
		}
		if e.Outcome != Accepted && e.Outcome != Refused {
			return nil, corrupt("outcome %q is neither %q nor %q", e.Outcome, Accepted, Refused)
		}
		e.At = time.Unix(0, at).UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fence: read %s: %w", d.log, err)
	}
	return out, nil
}

// logToken converts a token column of the fence log, as the driver
// returned it, to a token: an integer from 0 to math.MaxInt64, the range
// of the BIGINT the writers store.
func logToken(v any) (uint64, bool) {
	n, ok := v.(int64)
	if !ok || n < 0 {
		return 0, false
	}
	return uint64(n), true
}

// logValue prints a log column's value for an error: integers as they
// are, anything else quoted with its type.
func logValue(v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case []byte:
		return fmt.Sprintf("%q (bytes)", v)
	case nil:
		return "NULL"
	}
	return fmt.Sprintf("%q (%T)", fmt.Sprint(v), v)
}

// PruneLog deletes the fence log rows of name written before before, and
// returns how many. When keepFrom is not empty, the rows of a period
// that sorts at or after keepFrom are kept whatever their age (`baton
// prune` passes the oldest period the run ledger still has, so that every
// period the ledger keeps keeps its log rows); rows with no period sort
// before every key.
func PruneLog(ctx context.Context, db Execer, d Dialect, name string, before time.Time, keepFrom string) (int64, error) {
	if err := d.check(); err != nil {
		return 0, err
	}
	if d.log == "" {
		return 0, errors.New("fence: PruneLog: the Dialect keeps no log; use Dialect.WithLog")
	}
	q, args := d.logPrune, []any{name, before.UnixNano()}
	if keepFrom != "" {
		q, args = d.logPruneBelow, append(args, keepFrom)
	}
	res, err := db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("fence: prune %s: %w", d.log, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("fence: prune %s: %w", d.log, err)
	}
	return n, nil
}

// nowNano is the time a log row records.
func nowNano() int64 { return time.Now().UnixNano() }

// GuardLog is where a Guard keeps its fence log (Guard.SetLog): a table
// of a database, written as Dialect.WithLog describes, that `baton
// verify --fence-db` reads.
type GuardLog struct {
	// DB is the database; Dialect must keep a log (WithLog).
	DB      Execer
	Dialect Dialect
	// OnError, if not nil, is called with every error writing a row (the
	// work's outcome is unchanged by it). It runs with the name's lock
	// held and must not call the Guard.
	OnError func(error)
}

// SetLog makes g record every token it accepts and every one it refuses
// as stale in l, one row each, written while g's lock for the name is
// held, so that the log's order of one name is g's. Call it before g's
// first use; it must not be called while g is in use.
//
// What is guaranteed: less than for CheckWriteTx. The work of a Guard
// lives in process memory, not in l's database, so no row is atomic with
// it: an "accepted" row is written after fn returned nil, and a process
// that dies in between, or a failed insert (reported to l.OnError; one
// that takes more than 10 seconds is abandoned, since the name's lock is
// held meanwhile), leaves an accepted token unlogged, which `baton verify` reports as a lost
// period rather than hiding. A logged row is always true.
func (g *Guard) SetLog(l GuardLog) error {
	if l.DB == nil {
		return errors.New("fence: Guard.SetLog: nil DB")
	}
	if err := l.Dialect.check(); err != nil {
		return err
	}
	if l.Dialect.log == "" {
		return errors.New("fence: Guard.SetLog: the Dialect keeps no log; use Dialect.WithLog")
	}
	g.log = &l
	return nil
}

// guardLogTimeout bounds the write of one row of a Guard's log, which
// holds the name's lock.
const guardLogTimeout = 10 * time.Second

// record writes one row of g's log, if g keeps one.
func (g *Guard) record(w Write, outcome string, highest uint64) {
	if g.log == nil {
		return
	}
	d := g.log.Dialect
	ctx, cancel := context.WithTimeout(context.Background(), guardLogTimeout)
	defer cancel()
	_, err := g.log.DB.ExecContext(ctx, d.logInsert, w.Name, int64(min(w.Token, math.MaxInt64)), w.Period, outcome, int64(min(highest, math.MaxInt64)), nowNano())
	if err != nil && g.log.OnError != nil {
		g.log.OnError(fmt.Errorf("fence: log the %s token %d of %q in %s: %w", outcome, w.Token, w.Name, d.log, err))
	}
}
