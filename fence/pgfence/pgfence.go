// Package pgfence is the fencing check for work written to PostgreSQL with
// pgx: it accepts the work of a term only while no newer term has written,
// atomically with the work, inside the caller's own transaction.
//
// The resource keeps the highest token it has accepted per name in a table
// (DefaultTable, created by CreateTable). Check raises that token to the
// caller's, or refuses with an error wrapping fence.ErrStaleToken when a
// higher one was accepted before; the caller then rolls back, so nothing
// of the stale work lands. Because Check's upsert locks the name's row
// until the transaction ends, a concurrent transaction with a lower token
// waits and is refused once the higher one commits (or accepted if it
// rolls back).
//
//	tx, err := pool.Begin(ctx)
//	...
//	defer tx.Rollback(ctx)
//	if err := pgfence.Check(ctx, tx, "billing", term.Token()); err != nil {
//		return err // errors.Is(err, fence.ErrStaleToken): a newer leader wrote
//	}
//	_, err = tx.Exec(ctx, `INSERT INTO invoice ...`)
//	...
//	return tx.Commit(ctx)
//
// The table is not created by Check: schema changes belong to the
// application's migrations (CreateTable is one idempotent statement), and
// creating it inside the caller's transaction would take catalog locks and
// need the CREATE privilege on every hot path. Check on a missing table
// fails with an error naming CreateTable. Names are resolved through the
// connection's search_path; to keep the table in another schema, set it.
// It is the table that package fence's Postgres dialect uses, so both
// helpers can guard the same resource.
//
// Under REPEATABLE READ or SERIALIZABLE, a concurrent raise of the same
// name makes Check fail with a serialization failure (SQLSTATE 40001)
// instead: roll back and retry the whole transaction as usual.
//
// # The SQL function, for jobs in other languages
//
// Install (or `baton fence install`) puts the same check into the
// database as the function baton_fence(name text, token bigint, sig text
// DEFAULT NULL), on the same table, so that a job in Python, Java or
// shell+psql calls SELECT baton_fence($BATON_NAME, $BATON_TOKEN) first in
// its transaction, and Go writers and such jobs fence each other. A stale
// token raises SQLStateStale (BF001) and aborts the transaction; with a
// key installed, a token without its valid signature raises
// SQLStateBadSignature (BF002). InstallSQL is its DDL, for migrations;
// Classify maps the SQLSTATEs to package fence's errors.
//
// Installed with WithLog (`baton fence install --log`; LogSQL),
// the function also keeps the fence log that `baton verify --fence-db`
// reads (fence.DefaultLogTable, the table CheckLogged writes): one
// "accepted" row per accepted call, with the period of its optional
// fourth argument ($BATON_PERIOD), in the caller's transaction, so that a
// rolled-back write logs nothing. It cannot log a refusal: the refused
// transaction rolls back, row and all. A fence of an older Version is
// upgraded in place by Install.
//
// The function is SECURITY DEFINER: it runs as the role that installed
// it, which alone writes the log table. Only that role, superusers and the roles of WithGrant may
// call it (PUBLIC's EXECUTE is revoked), and its search_path is pinned, so
// that a caller's own schemas change nothing it does. What it does not
// guarantee: a granted role can raise the fence to any token unless a key
// is installed, and a role with rights on the table itself moves the
// fence without any check. docs/SECURITY.md has the whole model.
package pgfence

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/fence"
)

// DefaultTable is the name of the table that holds the highest accepted
// token per name.
const DefaultTable = "baton_fence"

const (
	createSQL = `CREATE TABLE IF NOT EXISTS ` + DefaultTable + ` (name TEXT PRIMARY KEY, token BIGINT NOT NULL)`
	upsertSQL = `INSERT INTO ` + DefaultTable + ` (name, token) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET token = excluded.token
		WHERE ` + DefaultTable + `.token <= excluded.token`
	highestSQL = `SELECT token FROM ` + DefaultTable + ` WHERE name = $1`
)

// Execer runs a statement: *pgx.Conn, *pgxpool.Pool and pgx.Tx are
// Execers.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// CreateTable creates DefaultTable if it does not exist. Run it once, with
// the application's migrations or at start-up.
func CreateTable(ctx context.Context, db Execer) error {
	if _, err := db.Exec(ctx, createSQL); err != nil {
		return fmt.Errorf("pgfence: create table %s: %w", DefaultTable, err)
	}
	return nil
}

// Check accepts the work of tx under token for name iff token is at least
// the highest token accepted for name, and raises the stored token to it;
// the raise commits or rolls back with tx. When a higher token was
// accepted before, Check returns an error wrapping fence.ErrStaleToken and
// the caller must roll tx back. Any other error (a missing table, a lost
// connection, a serialization failure) also leaves tx unusable: roll back.
// An empty name, token 0 and a token above math.MaxInt64 are refused
// without touching the database.
func Check(ctx context.Context, tx pgx.Tx, name string, token uint64) error {
	return check(ctx, tx, nil, name, token, "")
}

// CheckSigned is Check for a resource that holds a key: it refuses, before
// touching the database, a token whose signature sig is missing or not
// made by k, with an error wrapping fence.ErrBadSignature, so that a forged
// token never raises the stored one.
func CheckSigned(ctx context.Context, tx pgx.Tx, k *fence.Key, name string, token uint64, sig string) error {
	if k == nil {
		return errors.New("pgfence: CheckSigned: nil key")
	}
	return check(ctx, tx, k, name, token, sig)
}

func check(ctx context.Context, tx pgx.Tx, k *fence.Key, name string, token uint64, sig string) error {
	if name == "" {
		return fmt.Errorf("pgfence: Check: %w: empty name", fence.ErrNoFence)
	}
	if token == 0 {
		return fmt.Errorf("pgfence: Check: %w: token 0 for %q (election tokens start at 1)", fence.ErrInvalidToken, name)
	}
	if k != nil {
		if err := k.Verify(name, token, sig); err != nil {
			return fmt.Errorf("pgfence: Check: %w", err)
		}
	}
	if token > math.MaxInt64 {
		return fmt.Errorf("pgfence: Check: %w: token %d of %q does not fit in a BIGINT", fence.ErrInvalidToken, token, name)
	}
	tag, err := tx.Exec(ctx, upsertSQL, name, int64(token))
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
			return fmt.Errorf("pgfence: Check: table %s is missing; create it with pgfence.CreateTable: %w", DefaultTable, err)
		}
		return fmt.Errorf("pgfence: Check %q at token %d: %w", name, token, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var highest int64
	if err := tx.QueryRow(ctx, highestSQL, name).Scan(&highest); err != nil {
		return fmt.Errorf("%w: %q refused token %d (reading the highest token: %v)", fence.ErrStaleToken, name, token, err)
	}
	return fmt.Errorf("%w: %q has accepted token %d, work carries token %d", fence.ErrStaleToken, name, highest, token)
}
