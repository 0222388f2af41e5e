package baton_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/store/sqlite"
)

// The whole use in five steps: open the shared store, campaign, do the work
// fenced by the term's token, resign.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "baton-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	st, err := sqlite.Open(ctx, filepath.Join(dir, "baton.db")) // 1. the shared store
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	e, err := baton.New(st, "billing", baton.WithNode("node-a"))
	if err != nil {
		log.Fatal(err)
	}
	term, err := e.Campaign(ctx) // 2. blocks until this node leads
	if err != nil {
		log.Fatal(err)
	}

	// 3. the protected resource checks the token in the same transaction
	// as the work, so a deposed leader's rows never land.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "invoices.db")+"?_txlock=immediate")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := fence.CreateTable(ctx, db, fence.SQLite); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE invoices (seller TEXT, day TEXT, token INTEGER)`); err != nil {
		log.Fatal(err)
	}
	tx, err := db.BeginTx(term.Context(), nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := fence.CheckTx(term.Context(), tx, fence.SQLite, "billing", term.Token()); err != nil {
		tx.Rollback()
		log.Fatal(err) // fence.ErrStaleToken: a newer leader exists; nothing lands
	}
	if _, err := tx.ExecContext(term.Context(), `INSERT INTO invoices VALUES ('seller-1', '2026-11-29', ?)`, term.Token()); err != nil {
		tx.Rollback()
		log.Fatal(err)
	}
	// Only a successful Commit means the work landed under this token.
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}

	// 4. hand over at once instead of letting the lease run out.
	if err := term.Resign(ctx); err != nil {
		log.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM invoices`).Scan(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println("token", term.Token(), "rows", n, "valid after resign", term.Valid())
	// Output: token 1 rows 1 valid after resign false
}
