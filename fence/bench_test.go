package fence_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/batonhq/baton/fence"
)

// BenchmarkGuardCheck measures one check-and-raise on one name.
func BenchmarkGuardCheck(b *testing.B) {
	g := fence.NewGuard()
	var tok uint64
	for b.Loop() {
		tok++
		if err := g.Check("billing", tok); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuardCheckParallel measures check-and-raise on one name from
// all Ps at once: every call takes the same per-name lock.
func BenchmarkGuardCheckParallel(b *testing.B) {
	g := fence.NewGuard()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := g.Check("billing", 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchInsert runs one transaction per iteration: an optional CheckTx with
// a rising token, then one invoice insert, then the commit, on the test
// database of openSQLite (a WAL file, synchronous=NORMAL).
func benchInsert(b *testing.B, fenced bool) {
	benchInsertDialect(b, fenced, fence.SQLite)
}

func benchInsertDialect(b *testing.B, fenced bool, d fence.Dialect) {
	ctx := context.Background()
	db := openSQLite(b)
	if err := fence.CreateTable(ctx, db, d); err != nil {
		b.Fatal(err)
	}
	var tok uint64
	for b.Loop() {
		tok++
		if err := insertOnce(ctx, db, fenced, d, tok); err != nil {
			b.Fatal(err)
		}
	}
}

func insertOnce(ctx context.Context, db *sql.DB, fenced bool, d fence.Dialect, tok uint64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if fenced {
		if err := fence.CheckWriteTx(ctx, tx, d, fence.Write{Name: "billing", Token: tok, Period: "2026-01-02T15:04:05Z"}); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO invoice (token, line) VALUES (?, ?)`, int64(tok), "line"); err != nil {
		return err
	}
	return tx.Commit()
}

// BenchmarkCheckTxSQLite is a transaction with CheckTx and one insert.
func BenchmarkCheckTxSQLite(b *testing.B) { benchInsert(b, true) }

// BenchmarkPlainInsertSQLite is the same transaction without CheckTx.
func BenchmarkPlainInsertSQLite(b *testing.B) { benchInsert(b, false) }

// BenchmarkCheckTxLoggedSQLite is BenchmarkCheckTxSQLite with the fence
// log (Dialect.WithLog): one more insert in the transaction.
func BenchmarkCheckTxLoggedSQLite(b *testing.B) {
	d, err := fence.SQLite.WithLog(fence.DefaultLogTable)
	if err != nil {
		b.Fatal(err)
	}
	benchInsertDialect(b, true, d)
}
