package vcluster

import (
	"context"
	"database/sql"

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

// CreateResource creates the invoices and fence tables in db, an SQLite
// database.
func CreateResource(ctx context.Context, db *sql.DB) error {
	if err := fence.CreateTable(ctx, db, fence.SQLite); err != nil {
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
	if err := fence.CheckTx(ctx, tx, fence.SQLite, name, token); err != nil {
		return err
	}
	return tx.Commit()
}

// Write implements Resource: WriteBatch in one transaction.
func (r SQLResource) Write(ctx context.Context, b Batch) (bool, error) {
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
func WriteBatch(ctx context.Context, tx *sql.Tx, b Batch) (bool, error) {
	if b.Fence {
		if err := fence.CheckTx(ctx, tx, fence.SQLite, Job, b.Token); err != nil {
			return false, err
		}
	}
	if b.Idempotent {
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
