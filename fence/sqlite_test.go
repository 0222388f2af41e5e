package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/fence"
)

// portableWrite runs the documented SQLite check, SQLiteCheck exactly, in
// a transaction that first writes an invoice line: a refusal must take
// the line with it.
func portableWrite(ctx context.Context, db *sql.DB, name string, token any) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO invoice (token, line) VALUES (?, 'sql')`, token); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, fence.SQLiteCheck, sql.Named("name", name), sql.Named("token", token)); err != nil {
		if cerr := tx.Commit(); cerr == nil {
			return fmt.Errorf("%v; and the transaction still committed", err)
		}
		return err
	}
	return tx.Commit()
}

func TestSQLitePortable(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t) // CreateTable's table: SQLiteDDL must keep it
	for range 2 {       // idempotent
		if _, err := db.ExecContext(ctx, fence.SQLiteDDL); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		token any
		err   string
	}{
		{int64(2), ""}, {int64(2), ""}, {"3", ""}, // a decimal string gets the column's integer affinity
		{int64(1), fence.SQLiteStaleMessage},
		{int64(0), fence.SQLiteInvalidMessage}, {int64(-1), fence.SQLiteInvalidMessage},
		{"3x", fence.SQLiteInvalidMessage}, {3.5, fence.SQLiteInvalidMessage},
		{int64(4), ""},
	}
	var want []string
	for i, st := range steps {
		err := portableWrite(ctx, db, "billing", st.token)
		if st.err == "" && err != nil || st.err != "" && (err == nil || !strings.Contains(err.Error(), st.err)) {
			t.Fatalf("step %d (token %v): %v, want %q", i, st.token, err, st.err)
		}
		if st.err == "" {
			want = append(want, fmt.Sprint(st.token))
		}
	}
	if err := portableWrite(ctx, db, "", int64(9)); err == nil || !strings.Contains(err.Error(), fence.SQLiteInvalidMessage) {
		t.Fatalf("empty name: %v", err)
	}
	var got []string
	rows, err := db.QueryContext(ctx, `SELECT token FROM invoice ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tok string
		rows.Scan(&tok)
		got = append(got, tok)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("invoice tokens %v, want %v: refused work landed", got, want)
	}

	// CheckTx and the portable check share the table.
	if err := writeInvoice(ctx, db, "billing", 3, "go"); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("CheckTx with 3 after the portable check's 4: %v", err)
	}
	if err := writeInvoice(ctx, db, "billing", 6, "go"); err != nil {
		t.Fatal(err)
	}
	if err := portableWrite(ctx, db, "billing", int64(5)); err == nil || !strings.Contains(err.Error(), fence.SQLiteStaleMessage) {
		t.Fatalf("the portable check with 5 after CheckTx's 6: %v", err)
	}
	// A hand-written UPDATE cannot lower a token either.
	if _, err := db.ExecContext(ctx, `UPDATE baton_fence SET token = 1 WHERE name = 'billing'`); err == nil {
		t.Fatal("an UPDATE lowered the token")
	}
}

// The sqlite3 shell with -bail, as SQLiteCheck's doc says: a stale token
// stops the script, and nothing of its transaction commits.
func TestSQLitePortableShell(t *testing.T) {
	shell, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("the sqlite3 shell is not installed")
	}
	path := filepath.Join(t.TempDir(), "f.db")
	run := func(script string) (string, error) {
		cmd := exec.Command(shell, "-bail", path)
		cmd.Stdin = strings.NewReader(script)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(fence.SQLiteDDL + "CREATE TABLE invoice (token INTEGER NOT NULL);\n"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	write := func(token int) (string, error) {
		return run(fmt.Sprintf(".parameter set :name 'billing'\n.parameter set :token %d\nBEGIN IMMEDIATE;\nINSERT INTO invoice VALUES (%d);\n%sINSERT INTO invoice VALUES (%d);\nCOMMIT;\n",
			token, token, fence.SQLiteCheck, token))
	}
	if out, err := write(5); err != nil {
		t.Fatalf("token 5: %v: %s", err, out)
	}
	out, err := write(4)
	if err == nil || !strings.Contains(out, fence.SQLiteStaleMessage) {
		t.Fatalf("token 4 after 5: %v, %q; want the shell to stop on the stale token", err, out)
	}
	if out, _ := run("SELECT group_concat(token) FROM invoice;\n"); strings.TrimSpace(out) != "5,5" {
		t.Fatalf("invoice tokens %q, want 5,5: the stale script's work landed", out)
	}
}
