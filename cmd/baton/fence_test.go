package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
)

// withPassword returns the pgtest URL u with a password in it (the test
// server trusts local connections, so any password is accepted): no
// output may show it.
func withPassword(t *testing.T, u string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	pu.User = url.UserPassword(pu.User.Username(), "hunter2-secret")
	return pu.String()
}

func TestFenceInstall(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own store and files
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := withPassword(t, pgtest.Start(t))
	noSecret := func(out ...string) {
		t.Helper()
		for _, o := range out {
			if strings.Contains(o, "hunter2") {
				t.Fatalf("output shows the password: %q", o)
			}
		}
	}
	code, out, errb := runBaton(t, "fence", "install", "--db", db)
	noSecret(out, errb)
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("installed the SQL fence version %d", pgfence.Version)) {
		t.Fatalf("first install: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb = runBaton(t, "fence", "install", "--db", db)
	noSecret(out, errb)
	if code != exitOK || !strings.HasSuffix(out, fmt.Sprintf("has the SQL fence version %d already: nothing changed\n", pgfence.Version)) {
		t.Fatalf("second install: exit %d\n%s%s", code, out, errb)
	}
	// A key: needs pgcrypto, which Debian's server has.
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errb = runBaton(t, "fence", "install", "--db", db, "--key-file", keyFile)
	if code != exitOK || !strings.Contains(out, "key installed") {
		t.Fatalf("install with a key: exit %d\n%s%s", code, out, errb)
	}
	code, out, _ = runBaton(t, "fence", "install", "--db", db, "--key-file", keyFile)
	if code != exitOK || !strings.Contains(out, "nothing changed") || strings.Contains(out, "key installed") {
		t.Fatalf("install with the same key again: exit %d\n%s", code, out)
	}
	k, err := fence.ReadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT baton_fence('n', 3, $1)`, k.Sign("n", 3)); err != nil {
		t.Fatalf("a signed token after install --key-file: %v", err)
	}
	if _, err := conn.Exec(ctx, `SELECT baton_fence('n', 4)`); sqlStateOf(err) != pgfence.SQLStateBadSignature {
		t.Fatalf("an unsigned token after install --key-file: %v", err)
	}

	for _, bad := range [][]string{
		{"fence", "install"},
		{"fence", "install", "--db", db, "--key-file", filepath.Join(t.TempDir(), "none")},
		{"fence", "install", "--db", db, "--schema", ""},
		{"fence", "install", "--db", "postgres://u:hunter2-secret@[::1"},
		{"fence", "install", "--db", db, "extra"},
		{"fence", "install", "--db", db + "&schema=baton"},
		{"fence", "nope"},
		{"fence"},
	} {
		code, out, errb := runBaton(t, bad...)
		noSecret(out, errb)
		if code != exitUsage || strings.Count(errb, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line", bad, code, errb)
		}
	}
}

// sqlStateOf returns the SQLSTATE of a PostgreSQL error, "" for others.
func sqlStateOf(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// A database with a foreign baton_fence table: refused in one line,
// exit 2, nothing changed.
func TestFenceInstallForeign(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.Start(t)
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE baton_fence (id serial PRIMARY KEY, name text, token text)`); err != nil {
		t.Fatal(err)
	}
	code, out, errb := runBaton(t, "fence", "install", "--db", db)
	if code != exitUsage || out != "" || strings.Count(errb, "\n") != 1 || !strings.Contains(errb, "not this baton's fence") {
		t.Fatalf("install over a foreign table: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	t.Log(strings.TrimSpace(errb))
	var objects int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relname LIKE 'baton_fence%' AND c.relkind = 'r'`).Scan(&objects); err != nil || objects != 1 {
		t.Fatalf("%d baton_fence tables after the refusal (%v), want the foreign one only", objects, err)
	}
}

// 'baton fence sql --dialect postgres', run as printed, makes what install
// makes: install afterwards finds it and changes nothing.
func TestFenceSQLPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.Start(t)
	code, ddl, errb := runBaton(t, "fence", "sql", "--dialect", "postgres", "--schema", "billing")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, ddl); err != nil {
		t.Fatalf("the printed DDL: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var public bool
	if err := conn.QueryRow(ctx, `SELECT has_function_privilege('public', 'billing.baton_fence(text, bigint, text, text)', 'EXECUTE')`).Scan(&public); err != nil || public {
		t.Fatalf("PUBLIC may execute the function of the printed DDL (%v)", err)
	}
	code, out, errb := runBaton(t, "fence", "install", "--db", db, "--schema", "billing")
	if code != exitOK || !strings.Contains(out, "nothing changed") {
		t.Fatalf("install after the printed DDL: exit %d\n%s%s", code, out, errb)
	}
	if _, err := conn.Exec(ctx, `SELECT billing.baton_fence('n', 2)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT billing.baton_fence('n', 1)`); sqlStateOf(err) != pgfence.SQLStateStale {
		t.Fatalf("stale token: %v", err)
	}
}

// 'baton fence sql --dialect sqlite' prints fence.SQLiteDDL and, as a
// comment, fence.SQLiteCheck; the output runs as a script.
func TestFenceSQLSQLite(t *testing.T) {
	code, out, errb := runBaton(t, "fence", "sql", "--dialect", "sqlite")
	if code != exitOK || !strings.Contains(out, fence.SQLiteDDL) || !strings.Contains(out, commentLines(fence.SQLiteCheck)) {
		t.Fatalf("exit %d, stderr %q, output:\n%s", code, errb, out)
	}
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(out); err != nil {
		t.Fatalf("the printed script: %v", err)
	}
	if _, err := db.Exec(fence.SQLiteCheck, sql.Named("name", "n"), sql.Named("token", 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fence.SQLiteCheck, sql.Named("name", "n"), sql.Named("token", 1)); err == nil || !strings.Contains(err.Error(), fence.SQLiteStaleMessage) {
		t.Fatalf("stale token: %v", err)
	}
	if code, _, errb := runBaton(t, "fence", "sql", "--dialect", "sqlite", "--schema", "x"); code != exitUsage || strings.Count(errb, "\n") != 1 {
		t.Fatalf("--schema with sqlite: exit %d, %q", code, errb)
	}
	if code, _, errb := runBaton(t, "fence", "sql"); code != exitUsage || !strings.Contains(errb, "missing --dialect") {
		t.Fatalf("no --dialect: exit %d, %q", code, errb)
	}
}

// docs/SECURITY.md, "fenced database": a role that was not granted
// baton_fence cannot lock the leader out (the reproduction of issue 42),
// --grant lets the job's role call it, and install over an older fence
// that PUBLIC could call revokes that and says so.
func TestFenceInstallGrant(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.Start(t)
	job, jobURL := pgtest.NewRole(t, db)
	_, strangerURL := pgtest.NewRole(t, db)
	code, out, errb := runBaton(t, "fence", "install", "--db", db)
	if code != exitOK || !strings.Contains(out, "only the owner") || !strings.Contains(out, "--grant ROLE") {
		t.Fatalf("install without --grant: exit %d, want a note naming --grant\n%s%s", code, out, errb)
	}
	call := func(url string, token int64) error {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, `SELECT baton_fence('billing', $1)`, token)
		return err
	}
	if err := call(strangerURL, 9223372036854775807); sqlStateOf(err) != "42501" {
		t.Fatalf("an ungranted role's lock-out: %v; want permission denied", err)
	}
	if err := call(jobURL, 2); sqlStateOf(err) != "42501" {
		t.Fatalf("the job's role before --grant: %v; want permission denied", err)
	}
	code, out, errb = runBaton(t, "fence", "install", "--db", db, "--grant", job)
	if code != exitOK || !strings.Contains(out, `granted EXECUTE on baton_fence to role "`+job+`"`) || strings.Contains(out, "nothing changed") {
		t.Fatalf("install --grant %s: exit %d\n%s%s", job, code, out, errb)
	}
	if err := call(jobURL, 2); err != nil {
		t.Fatalf("the granted role: %v", err)
	}
	code, out, _ = runBaton(t, "fence", "install", "--db", db, "--grant", job)
	if code != exitOK || !strings.HasSuffix(out, "nothing changed\n") {
		t.Fatalf("install --grant again: exit %d\n%s", code, out)
	}
	// An older install: PUBLIC could call the function.
	admin, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `GRANT EXECUTE ON FUNCTION baton_fence(text, bigint, text, text) TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	code, out, errb = runBaton(t, "fence", "install", "--db", db)
	if code != exitOK || !strings.Contains(out, "revoked EXECUTE on baton_fence from PUBLIC") {
		t.Fatalf("install over an older fence: exit %d\n%s%s", code, out, errb)
	}
	t.Log(strings.TrimSpace(out))
	if err := call(strangerURL, 9223372036854775807); sqlStateOf(err) != "42501" {
		t.Fatalf("an ungranted role after the upgrade: %v; want permission denied", err)
	}
	if err := call(jobURL, 3); err != nil {
		t.Fatalf("the granted role after the upgrade: %v", err)
	}
	for _, bad := range []string{"public", "PUBLIC", "", "no_such_role_x"} {
		code, out, errb := runBaton(t, "fence", "install", "--db", db, "--grant", bad)
		if code != exitUsage || out != "" || strings.Count(errb, "\n") != 1 {
			t.Errorf("--grant %q: exit %d, stdout %q, stderr %q; want 2 and one line", bad, code, out, errb)
		}
	}
}

// docs/SECURITY.md, "a node": every command that reads a fence key
// refuses a key file other users can read, in one line naming the fix,
// and changes nothing.
func TestFenceKeyFileExposed(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "fence.key")
	if err := os.WriteFile(keyFile, []byte("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"fence", "install", "--db", "postgres://u@127.0.0.1:1/none", "--key-file", keyFile},
		{"fence", "proxy", "--upstream", "http://127.0.0.1:1", "--key-file", keyFile},
		{"run", "--store", "mem:", "--fence-key-file", keyFile, "--every", "1s", "j", "--", "true"},
	} {
		code, _, stderr := runBaton(t, args...)
		checkOneLine(t, args, code, stderr, "readable by every user", "chmod 600 "+keyFile)
	}
}

// TestFenceInstallRefusesBeforeConnecting: a grant that would let every
// role lock the leader out (PUBLIC, or no role) is refused as a usage
// error before baton dials the database (nothing listens at port 1 here:
// a refusal after connecting would be a connection error, exit 1).
func TestFenceInstallRefusesBeforeConnecting(t *testing.T) {
	for _, grant := range []string{"public", "PUBLIC", ""} {
		code, _, errb := runBaton(t, "fence", "install", "--db", "postgres://job@127.0.0.1:1/db", "--grant", grant)
		if code != exitUsage || strings.Count(errb, "\n") != 1 || !strings.Contains(errb, "--grant") {
			t.Errorf("--grant %q: exit %d, stderr %q; want 2 and one line naming --grant", grant, code, errb)
		}
	}
}
