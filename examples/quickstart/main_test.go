package main

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/store/sqlite"
)

// docs/library.md shows this program; it must show it unchanged, so that what
// readers copy is what compiles and what this package's test runs.
func TestReadmeShowsThisFile(t *testing.T) {
	readme, err := os.ReadFile("../../docs/library.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(src)+"```\n") {
		t.Error("docs/library.md does not show examples/quickstart/main.go as it is: copy the file into it")
	}
}

// Run twice, the program writes one invoice each time, under tokens 1 and
// 2, in a fresh directory.
func TestRun(t *testing.T) {
	t.Chdir(t.TempDir())
	for range 2 {
		if err := run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", "file:invoices.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, max int
	if err := db.QueryRow(`SELECT count(*), max(token) FROM invoices`).Scan(&n, &max); err != nil || n != 2 || max != 2 {
		t.Fatalf("%d invoices, highest token %d (%v); want 2 and 2", n, max, err)
	}
}

// A deposed leader's bill is refused with fence.ErrStaleToken and leaves
// no row.
func TestStaleLeader(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx := context.Background()
	if err := run(ctx); err != nil { // token 1, and the tables
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, "baton.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	old, _ := baton.New(st, "billing", baton.WithNode("old"))
	oldTerm, err := old.Campaign(ctx) // token 2
	if err != nil {
		t.Fatal(err)
	}
	oldTerm.Resign(ctx)
	if err := run(ctx); err != nil { // token 3 writes
		t.Fatal(err)
	}
	db, _ := sql.Open("sqlite", "file:invoices.db?_txlock=immediate")
	defer db.Close()
	if err := bill(ctx, db, oldTerm); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("the deposed leader's bill: %v, want fence.ErrStaleToken", err)
	}
	var n int
	db.QueryRow(`SELECT count(*) FROM invoices WHERE token = 2`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d rows of the stale token", n)
	}
}
