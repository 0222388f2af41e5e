package pgfence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/fence"
)

// The fence log (see fence.Dialect.WithLog): the fence's own record of
// the tokens it accepted and refused, which `baton verify --fence-db`
// reads. It is fence.DefaultLogTable, the table that package fence's
// Postgres dialect with WithLog(fence.DefaultLogTable) keeps, so either
// helper can write it and fence.ReadLog reads it.
const (
	createLogSQL = `CREATE TABLE IF NOT EXISTS ` + fence.DefaultLogTable + ` (seq BIGSERIAL PRIMARY KEY,` +
		` name TEXT NOT NULL, token BIGINT NOT NULL, period TEXT NOT NULL, outcome TEXT NOT NULL,` +
		` highest BIGINT NOT NULL, at_ns BIGINT NOT NULL)`
	createLogIndexSQL = `CREATE INDEX IF NOT EXISTS ` + fence.DefaultLogTable + `_name ON ` + fence.DefaultLogTable + ` (name, seq)`
	insertLogSQL      = `INSERT INTO ` + fence.DefaultLogTable + ` (name, token, period, outcome, highest, at_ns) VALUES ($1, $2, $3, $4, $5, $6)`
)

// CreateLogTable creates the fence log table and its index if they do
// not exist. Run it with CreateTable, once.
func CreateLogTable(ctx context.Context, db Execer) error {
	for _, q := range []string{createLogSQL, createLogIndexSQL} {
		if _, err := db.Exec(ctx, q); err != nil {
			return fmt.Errorf("pgfence: create table %s: %w", fence.DefaultLogTable, err)
		}
	}
	return nil
}

// CheckLogged is Check (CheckSigned when k is not nil) for w that also
// logs an accepted token, with w's period, in the fence log inside tx: a
// transaction that rolls back leaves no "accepted" row. A stale token
// returns an error wrapping fence.ErrStaleToken and logs nothing in tx;
// the caller rolls back and may pass the error to LogRefusal.
func CheckLogged(ctx context.Context, tx pgx.Tx, k *fence.Key, w fence.Write) error {
	err := check(ctx, tx, k, w.Name, w.Token, w.Sig)
	if errors.Is(err, fence.ErrStaleToken) {
		// The upsert changed nothing, so tx still reads: keep the
		// highest token for the refusal's row.
		var highest int64
		if tx.QueryRow(ctx, highestSQL, w.Name).Scan(&highest) == nil {
			return &refusal{err, uint64(max(highest, 0))}
		}
		return err
	}
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, insertLogSQL, w.Name, int64(w.Token), w.Period, fence.Accepted, int64(w.Token), time.Now().UnixNano()); err != nil {
		return fmt.Errorf("pgfence: log the acceptance of %q at token %d in %s: %w", w.Name, w.Token, fence.DefaultLogTable, err)
	}
	return nil
}

// LogRefusal records in the fence log that w was refused, when refused
// (the error CheckLogged returned) wraps fence.ErrStaleToken; for any
// other error, or nil, it records nothing and returns nil. Call it with
// the pool or connection after rolling back. It is best effort: a process
// that dies before it records nothing of the refusal.
func LogRefusal(ctx context.Context, db Execer, w fence.Write, refused error) error {
	if !errors.Is(refused, fence.ErrStaleToken) {
		return nil
	}
	var highest uint64
	var r *refusal
	if errors.As(refused, &r) {
		highest = r.highest
	}
	if _, err := db.Exec(ctx, insertLogSQL, w.Name, int64(w.Token), w.Period, fence.Refused, int64(highest), time.Now().UnixNano()); err != nil {
		return fmt.Errorf("pgfence: log the refusal of %q at token %d in %s: %w", w.Name, w.Token, fence.DefaultLogTable, err)
	}
	return nil
}

// refusal is CheckLogged's stale-token error, with the highest token.
type refusal struct {
	err     error
	highest uint64
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }
