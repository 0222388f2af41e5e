package vcluster

import (
	"context"
	"database/sql"
	"errors"

	"github.com/batonhq/baton/fence"
)

// Resource is what the batches write to: the invoice lines and the fence
// that guards them. SQLResource is the drill's (an SQLite database, the
// fence kept in the same transaction as the lines); MemResource is the
// simulator's (fence.Guard in front of lines kept in memory).
type Resource interface {
	// Raise raises the fence of name to token: a new leader shuts out the
	// old one before it acts. A stale token is an error wrapping
	// fence.ErrStaleToken.
	Raise(ctx context.Context, name string, token uint64) error
	// Write writes b's lines atomically, through the fence when b.Fence.
	// It reports false when b is idempotent and its period had already
	// landed, so nothing was added.
	Write(ctx context.Context, b Batch) (landed bool, err error)
}

// Batch is one batch of invoice lines.
type Batch struct {
	Period string
	Node   string
	Token  uint64
	Lines  int
	// Fence checks Token with the fence first.
	Fence bool
	// Idempotent records the period first and adds nothing if it was
	// already there.
	Idempotent bool
}

// Fence is the SQLite fence of the drill's resource, with the fence log
// (fence.DefaultLogTable), so that `baton verify` can judge a drill's
// files as it judges a deployment's.
var Fence = func() fence.Dialect {
	d, err := fence.SQLite.WithLog(fence.DefaultLogTable)
	if err != nil {
		panic(err) // a constant, valid table name
	}
	return d
}()

// CreateResource creates the invoices and fence tables, and the fence log,
// in db, an SQLite database.
func CreateResource(ctx context.Context, db *sql.DB) error {
	if err := fence.CreateTable(ctx, db, Fence); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `
		CREATE TABLE IF NOT EXISTS invoices (period TEXT NOT NULL, line INTEGER NOT NULL, token INTEGER NOT NULL, node TEXT NOT NULL);
		CREATE TABLE IF NOT EXISTS batches (period TEXT PRIMARY KEY, token INTEGER NOT NULL)`)
	return err
}

// SQLResource is a Resource in an SQLite database made by CreateResource.
type SQLResource struct{ DB *sql.DB }

// Raise implements Resource with fence.CheckTx in its own transaction.
func (r SQLResource) Raise(ctx context.Context, name string, token uint64) error {
	tx, err := r.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fence.CheckTx(ctx, tx, Fence, name, token); err != nil {
		return err
	}
	return tx.Commit()
}

// Write implements Resource: WriteBatch in one transaction. A stale
// token's refusal is logged after the rollback.
func (r SQLResource) Write(ctx context.Context, b Batch) (bool, error) {
	landed, err := r.write(ctx, b)
	if b.Fence && errors.Is(err, fence.ErrStaleToken) {
		err = errors.Join(err, fence.LogRefusal(ctx, r.DB, Fence, fence.Write{Name: Job, Token: b.Token, Period: b.Period}, err))
	}
	return landed, err
}

func (r SQLResource) write(ctx context.Context, b Batch) (bool, error) {
	tx, err := r.DB.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	landed, err := WriteBatch(ctx, tx, b)
	if err != nil {
		return false, err
	}
	return landed, tx.Commit()
}

// WriteBatch writes b's invoice lines in tx, a transaction on a database
// made by CreateResource, without committing it. It reports false when the
// period's batch had already landed (Idempotent) and nothing was added; a
// stale token is an error wrapping fence.ErrStaleToken.
//
// The fence log (Fence) gets an accepted row with b's period only for a
// batch that lands: an idempotent batch looks for its period first (a
// read: nothing is written before the fence check), and one whose period
// had landed is checked, raising the fence, without a period, as the
// raise on taking office is.
func WriteBatch(ctx context.Context, tx *sql.Tx, b Batch) (bool, error) {
	already := false // the period's batch had landed
	if b.Idempotent {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM batches WHERE period = ?`, b.Period).Scan(&n); err != nil {
			return false, err
		}
		already = n > 0
	}
	if b.Fence {
		w := fence.Write{Name: Job, Token: b.Token}
		if !already {
			w.Period = b.Period
		}
		if err := fence.CheckWriteTx(ctx, tx, Fence, w); err != nil {
			return false, err
		}
	}
	if b.Idempotent {
		if already {
			return false, nil
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO batches (period, token) VALUES (?, ?) ON CONFLICT (period) DO NOTHING`, b.Period, int64(b.Token))
		if err != nil {
			return false, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return false, nil
		}
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO invoices (period, line, token, node) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return false, err
	}
	defer stmt.Close()
	for line := 1; line <= b.Lines; line++ {
		if _, err := stmt.ExecContext(ctx, b.Period, line, int64(b.Token), b.Node); err != nil {
			return false, err
		}
	}
	return true, nil
}

// MemResource is a Resource in memory, fenced by fence.Guard: the
// simulator's, where an SQLite transaction per batch would cost more than
// the rest of a seed.
type MemResource struct {
	guard   fence.Guard
	batches map[string]bool
	// Lines counts the lines written per period.
	Lines map[string]int
}

// NewMemResource returns an empty MemResource.
func NewMemResource() *MemResource {
	return &MemResource{batches: map[string]bool{}, Lines: map[string]int{}}
}

// Raise implements Resource.
func (r *MemResource) Raise(ctx context.Context, name string, token uint64) error {
	return r.guard.Do(name, token, func() error { return nil })
}

// Write implements Resource.
func (r *MemResource) Write(ctx context.Context, b Batch) (bool, error) {
	landed := false
	write := func() error {
		if b.Idempotent && r.batches[b.Period] {
			return nil
		}
		r.batches[b.Period], r.Lines[b.Period], landed = true, r.Lines[b.Period]+b.Lines, true
		return nil
	}
	var err error
	if b.Fence {
		err = r.guard.Do(Job, b.Token, write)
	} else {
		err = write()
	}
	return landed, err
}
