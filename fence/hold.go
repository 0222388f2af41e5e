package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
)

// HoldTx holds the fence of name in the caller's transaction tx until tx
// ends, for work whose effect is not in the database: a request forwarded
// to another service, a file written, a message sent. Use it after a
// CheckTx (or CheckSignedTx) for the same name and token has committed in
// an earlier transaction, so that the raise is durable before the work
// starts, and keep tx open until the work is done:
//
//	CheckTx in tx1, commit tx1    the raise is durable
//	HoldTx in tx2                 no newer token can be accepted from here
//	do the work
//	roll tx2 back                 (it changed nothing)
//
// HoldTx returns nil if the highest token stored for name is at most
// token, and an error wrapping ErrStaleToken if a higher token was
// accepted between the commit of the check and the hold: the work must
// then not be done. While tx is open, every CheckTx of name waits for it
// to end, so work done under the hold is not overtaken by a newer leader's
// work fenced by the same table.
//
// With PostgreSQL the hold is a row lock (SELECT ... FOR UPDATE): other
// names are not held. With SQLite, which has no row locks, it is the
// database's write lock (taken by a no-op UPDATE): every other writer of
// the database waits, whatever its name, until tx ends, or fails with
// SQLITE_BUSY when its busy timeout runs out first.
//
// A name with no stored token (no CheckTx committed it) is an error, as are
// token 0, an empty name and a token above math.MaxInt64 (ErrInvalidToken).
func HoldTx(ctx context.Context, tx *sql.Tx, d Dialect, name string, token uint64) error {
	if err := d.check(); err != nil {
		return err
	}
	if tx == nil {
		return errors.New("fence: HoldTx: nil transaction")
	}
	if err := validate(name, token); err != nil {
		return err
	}
	if token > math.MaxInt64 {
		return fmt.Errorf("%w: token %d for %q is above %d, the largest a SQL BIGINT holds", ErrInvalidToken, token, name, int64(math.MaxInt64))
	}
	var stored int64
	err := tx.QueryRowContext(ctx, d.holdSQL(), name).Scan(&stored)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("fence: hold %q at token %d: no token is stored for the name in %s; commit a CheckTx for it first", name, token, d.table)
	case err != nil:
		return fmt.Errorf("fence: hold %q at token %d: %w", name, token, err)
	case uint64(stored) > token:
		return staleError(name, token, uint64(stored))
	}
	return nil
}

// holdSQL is the statement that locks the fence of a name and returns its
// stored token.
func (d Dialect) holdSQL() string {
	if d.name == "postgres" {
		return "SELECT token FROM " + d.table + " WHERE name = $1 FOR UPDATE"
	}
	return "UPDATE " + d.table + " SET token = token WHERE name = ? RETURNING token"
}
