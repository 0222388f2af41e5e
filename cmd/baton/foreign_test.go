package main

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/pgtest"
)

// writers are the commands that write to a store, with the arguments they
// need after --store URL.
var writers = [][]string{
	{"run", "j", "--", "true"},
	{"run", "--once", "j", "--", "true"},
	{"run", "--every", "1m", "j", "--", "true"},
	{"store", "floor", "j", "5"},
	{"trigger", "j"},
	{"resign", "j"},
	{"transfer", "--to", "n2", "j"},
	{"prune", "j"},
	{"serve", "--listen", "127.0.0.1:0", "--admin-token", "secret-token", "j"},
}

// withStore puts --store u right after the command's name (and the
// operation of 'store').
func withStore(args []string, u string) []string {
	n := 1
	if args[0] == "store" {
		n = 2
	}
	return append(append(append([]string{}, args[:n]...), "--store", u), args[n:]...)
}

// Every writer refuses an application's SQLite database before writing a
// byte of it, with the read commands' message, in one line; an empty file
// still becomes a store.
func TestWritersRefuseForeignDatabase(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount INTEGER); INSERT INTO invoices (amount) VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := testenv.Files(t, dir)
	for _, w := range writers {
		args := withStore(w, "sqlite:app.db")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out, errb syncBuffer
		code := run(ctx, args, &out, &errb)
		cancel()
		errOut := errb.String()
		if code == exitOK || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "not a baton store; baton left it untouched") {
			t.Errorf("%v on a foreign database: exit %d, stderr %q", args, code, errOut)
		}
	}
	testenv.SameFiles(t, "foreign database after the writers", before, testenv.Files(t, dir))

	if err := os.WriteFile(filepath.Join(dir, "empty.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runBaton(t, "store", "floor", "--store", "sqlite:empty.db", "j", "5"); code != exitOK {
		t.Fatalf("store floor on an empty file: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runBaton(t, "status", "--store", "sqlite:empty.db", "j"); code != exitOK || !strings.Contains(out, "5") {
		t.Fatalf("status of the store made in an empty file: exit %d\n%s%s", code, out, errOut)
	}
}

// Every writer refuses a PostgreSQL schema that holds an application's
// tables, with the read commands' message, and leaves it as it was.
func TestWritersRefuseForeignSchema(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	raw := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `CREATE SCHEMA app; CREATE TABLE app.invoices (id bigint PRIMARY KEY, amount bigint); INSERT INTO app.invoices VALUES (1, 42)`); err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var s string
		err := conn.QueryRow(ctx, `SELECT string_agg(c.relname || ':' || c.relkind::text, ',' ORDER BY c.relname) || ' ' ||
			(SELECT string_agg(id || '=' || amount, ',') FROM app.invoices) || ' ' ||
			(SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'app')
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'app'`).Scan(&s)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := snapshot()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", "app")
	u.RawQuery = q.Encode()
	for _, w := range append(writers, []string{"status", "j"}) {
		args := withStore(w, u.String())
		rctx, stop := context.WithTimeout(ctx, 20*time.Second)
		var out, errb syncBuffer
		code := run(rctx, args, &out, &errb)
		stop()
		errOut := errb.String()
		if code == exitOK || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "not a baton store; baton left it untouched") {
			t.Errorf("%v on a foreign schema: exit %d, stderr %q", args, code, errOut)
		}
	}
	if after := snapshot(); after != before {
		t.Fatalf("the foreign schema changed: %s before, %s after", before, after)
	}
}
