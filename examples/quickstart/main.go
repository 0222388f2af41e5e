// Command quickstart is the README's library example, as it is shown
// there: lead "billing", write one invoice fenced by the term's token, and
// hand over. A test checks that the README shows this file unchanged.
package main

import (
	"context"
	"database/sql"
	"errors"
	"log"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/store/sqlite" // also registers the "sqlite" database/sql driver
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	st, err := sqlite.Open(ctx, "baton.db") // 1. the shared store
	if err != nil {
		return err
	}
	defer st.Close()
	e, err := baton.New(st, "billing", baton.WithNode("node-a")) // 2. one elector per name
	if err != nil {
		return err
	}
	term, err := e.Campaign(ctx) // 3. blocks until this node leads
	if err != nil {
		return err
	}
	defer term.Resign(context.Background()) // 5. hand over at once

	// The resource the work changes keeps the highest token it has seen.
	db, err := sql.Open("sqlite", "file:invoices.db?_txlock=immediate&_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	defer db.Close()
	if err := fence.CreateTable(ctx, db, fence.SQLite); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS invoices (seller TEXT, day TEXT, token INTEGER)`); err != nil {
		return err
	}
	err = bill(term.Context(), db, term) // 4. the work, fenced by the token
	if errors.Is(err, fence.ErrStaleToken) {
		log.Print("a newer leader has written; nothing of this run was committed")
	}
	return err
}

// bill writes the invoice in one transaction that first checks the term's
// token: a deposed leader's transaction is rolled back, never committed.
func bill(ctx context.Context, db *sql.DB, term *baton.Term) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // a no-op once committed
	if err := fence.CheckTx(ctx, tx, fence.SQLite, "billing", term.Token()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO invoices VALUES ('seller-1', '2026-11-29', ?)`, term.Token()); err != nil {
		return err
	}
	return tx.Commit()
}
