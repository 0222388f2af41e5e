package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/batonhq/baton/fence"
	_ "modernc.org/sqlite"
)

// A leader of term 1 pauses after checking its lease; the leader of term 2
// writes; then the first wakes up and tries to write. The Guard refuses it.
func ExampleGuard() {
	g := fence.NewGuard()
	var ledger []string
	write := func(token uint64, line string) error {
		return g.Do("billing", token, func() error {
			ledger = append(ledger, line)
			return nil
		})
	}

	fmt.Println(write(2, "invoice by the leader of term 2"))
	err := write(1, "invoice by the paused leader of term 1")
	fmt.Println(errors.Is(err, fence.ErrStaleToken))
	fmt.Println(err)
	fmt.Println(ledger, g.Highest("billing"))
	// Output:
	// <nil>
	// true
	// stale fencing token: a newer leader has already written: name "billing", token 1, highest 2
	// [invoice by the leader of term 2] 2
}

// The fence check goes into the same transaction as the work, so a stale
// leader's invoice line is rolled back with the check.
func ExampleCheckTx() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "fence-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// _txlock=immediate: every transaction takes SQLite's write lock at BEGIN.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "billing.db")+"?_txlock=immediate&_pragma=busy_timeout(5000)")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := fence.CreateTable(ctx, db, fence.SQLite); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE invoice (token INTEGER, line TEXT)`); err != nil {
		log.Fatal(err)
	}

	writeInvoice := func(token uint64, line string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // a no-op after Commit
		if err := fence.CheckTx(ctx, tx, fence.SQLite, "billing", token); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO invoice VALUES (?, ?)`, token, line); err != nil {
			return err
		}
		return tx.Commit()
	}

	fmt.Println(writeInvoice(2, "line of term 2"))
	fmt.Println(writeInvoice(1, "line of term 1"))
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM invoice`).Scan(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "invoice line")
	// Output:
	// <nil>
	// stale fencing token: a newer leader has already written: name "billing", token 1, highest 2
	// 1 invoice line
}

// A command started by baton run finds its fence in the environment and
// passes it on with every request to a fenced HTTP service.
func ExampleFromEnv() {
	os.Setenv(fence.EnvName, "billing")
	os.Setenv(fence.EnvToken, "7")
	defer os.Unsetenv(fence.EnvName)
	defer os.Unsetenv(fence.EnvToken)

	name, token, err := fence.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(name, token)
	// Output:
	// billing 7
}
