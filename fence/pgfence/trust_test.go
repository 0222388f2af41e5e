package pgfence_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/pgtest"
)

// The rows of docs/SECURITY.md about the SQL fence: who may call
// baton_fence, and what a caller's search_path can do to it.

// lockOut is the attack of issue 42: a role calls baton_fence with the
// largest BIGINT, so that every real leader's token is stale from then on.
const lockOut = `SELECT baton_fence('billing', 9223372036854775807)`

// connect opens a connection to url with search_path set to path ("" for
// the server's default).
func connect(t *testing.T, ctx context.Context, url, path string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if path != "" {
		cfg.RuntimeParams["search_path"] = path
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// highest returns the fence's token of name in schema, 0 if it has none.
func highest(t *testing.T, ctx context.Context, c *pgx.Conn, schema, name string) int64 {
	t.Helper()
	var tok int64
	err := c.QueryRow(ctx, `SELECT coalesce((SELECT token FROM `+pgx.Identifier{schema, "baton_fence"}.Sanitize()+` WHERE name = $1), 0)`, name).Scan(&tok)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// A role that was not granted EXECUTE (at install, WithGrant)
// cannot call baton_fence: the lock-out is refused with permission
// denied and the fence does not move; a granted role fences as before,
// in the public schema and in another one (whose USAGE Install grants).
func TestFenceCallableOnlyByGrantedRoles(t *testing.T) {
	for _, schema := range []string{"public", "Fence Room"} {
		t.Run(schema, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			db := pgtest.Start(t)
			job, jobURL := pgtest.NewRole(t, db)
			_, strangerURL := pgtest.NewRole(t, db)
			owner := connect(t, ctx, db, "")
			res, err := pgfence.Install(ctx, owner, pgfence.WithSchema(schema), pgfence.WithGrant(job))
			if err != nil || !res.Created {
				t.Fatalf("install: %+v, %v", res, err)
			}
			path := pgx.Identifier{schema}.Sanitize()
			stranger := connect(t, ctx, strangerURL, path)
			_, err = stranger.Exec(ctx, `SELECT `+path+`.baton_fence('billing', 9223372036854775807)`)
			if sqlState(err) != "42501" {
				t.Fatalf("an ungranted role's lock-out: %v; want SQLSTATE 42501 (permission denied)", err)
			}
			t.Logf("ungranted role: %v", err)
			if h := highest(t, ctx, owner, schema, "billing"); h != 0 {
				t.Fatalf("the fence moved to %d: an ungranted role locked the leader out", h)
			}
			granted := connect(t, ctx, jobURL, path)
			if _, err := granted.Exec(ctx, `SELECT baton_fence('billing', 3)`); err != nil {
				t.Fatalf("the granted role: %v", err)
			}
			if _, err := granted.Exec(ctx, `SELECT baton_fence('billing', 2)`); sqlState(err) != pgfence.SQLStateStale {
				t.Fatalf("the granted role, stale token: %v", err)
			}
			// The granted role calls the function; it has no right on
			// the tables behind it.
			if _, err := granted.Exec(ctx, `UPDATE baton_fence SET token = 1`); sqlState(err) != "42501" {
				t.Fatalf("the granted role wrote the fence table directly: %v", err)
			}
			if h := highest(t, ctx, owner, schema, "billing"); h != 3 {
				t.Fatalf("fence at %d, want 3", h)
			}
		})
	}
}

// An install made before this baton left baton_fence callable by PUBLIC
// (as PostgreSQL does by default): installing again revokes it, says so,
// and grants the roles named; a third install changes nothing.
func TestInstallRevokesPublicOnUpgrade(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.Start(t)
	job, jobURL := pgtest.NewRole(t, db)
	stranger, strangerURL := pgtest.NewRole(t, db)
	owner := connect(t, ctx, db, "")
	if _, err := pgfence.Install(ctx, owner); err != nil {
		t.Fatal(err)
	}
	// The older install's state: EXECUTE for PUBLIC.
	if _, err := owner.Exec(ctx, `GRANT EXECUTE ON FUNCTION baton_fence(text, bigint, text, text) TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	if _, err := connect(t, ctx, strangerURL, "").Exec(ctx, `SELECT baton_fence('probe', 1)`); err != nil {
		t.Fatalf("the older install's state does not let PUBLIC call: %v (the test's control is broken)", err)
	}
	// A role that does not own the function cannot revoke (PostgreSQL
	// only warns): Install says whose it is and changes nothing.
	if _, err := owner.Exec(ctx, `GRANT SELECT ON baton_fence_meta TO `+stranger); err != nil {
		t.Fatal(err)
	}
	var ownerName string
	if err := owner.QueryRow(ctx, `SELECT current_user::regrole::text`).Scan(&ownerName); err != nil {
		t.Fatal(err)
	}
	if _, err := pgfence.Install(ctx, connect(t, ctx, strangerURL, "")); err == nil ||
		!strings.Contains(err.Error(), "run the install as role "+ownerName) {
		t.Fatalf("install by a role that does not own the function: %v; want an error naming the owner", err)
	} else {
		t.Log(err)
	}
	res, err := pgfence.Install(ctx, owner, pgfence.WithGrant(job))
	if err != nil || res.Created || !res.PublicRevoked || len(res.Granted) != 1 || res.Granted[0] != job {
		t.Fatalf("install over the older one: %+v, %v; want PUBLIC revoked and %s granted", res, err, job)
	}
	if _, err := connect(t, ctx, strangerURL, "").Exec(ctx, lockOut); sqlState(err) != "42501" {
		t.Fatalf("an ungranted role after the upgrade: %v; want permission denied", err)
	}
	if _, err := connect(t, ctx, jobURL, "").Exec(ctx, `SELECT baton_fence('billing', 4)`); err != nil {
		t.Fatalf("the granted role after the upgrade: %v", err)
	}
	res, err = pgfence.Install(ctx, owner, pgfence.WithGrant(job))
	if err != nil || res.Created || res.PublicRevoked || len(res.Granted) != 0 {
		t.Fatalf("a third install: %+v, %v; want a no-op", res, err)
	}
	for _, bad := range []string{"", "public", "PUBLIC", "a\x00b"} {
		if _, err := pgfence.Install(ctx, owner, pgfence.WithGrant(bad)); err == nil {
			t.Errorf("Install granted to %q", bad)
		}
	}
	if _, err := pgfence.Install(ctx, owner, pgfence.WithGrant("no_such_role_x")); err == nil {
		t.Error("Install granted to a role that does not exist")
	} else {
		t.Log(err)
	}
}

// A granted role that plants an operator in a schema before pg_catalog on
// its own search_path does not change what baton_fence computes: the
// function's search_path is pinned. The negative control removes the pin
// and shows the same plant then lets a stale token through.
func TestFenceIgnoresCallersSearchPath(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.Start(t)
	job, jobURL := pgtest.NewRole(t, db)
	owner := connect(t, ctx, db, "")
	if _, err := pgfence.Install(ctx, owner, pgfence.WithGrant(job)); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `CREATE SCHEMA evil AUTHORIZATION `+job); err != nil {
		t.Fatal(err)
	}
	planter := connect(t, ctx, jobURL, "")
	for _, q := range []string{
		`CREATE FUNCTION evil.always(bigint, bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true'`,
		`CREATE OPERATOR evil.<= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.always)`,
	} {
		if _, err := planter.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	const path = "evil, pg_catalog, public"
	write := func(token int64) error {
		_, err := connect(t, ctx, jobURL, path).Exec(ctx, `SELECT baton_fence('billing', $1)`, token)
		return err
	}
	var planted bool
	if err := connect(t, ctx, jobURL, path).QueryRow(ctx, `SELECT 5::bigint <= 3::bigint`).Scan(&planted); err != nil || !planted {
		t.Fatalf("the planted operator is not in effect on the caller's path (%v, %v): the test proves nothing", planted, err)
	}
	if err := write(5); err != nil {
		t.Fatal(err)
	}
	if err := write(3); sqlState(err) != pgfence.SQLStateStale {
		t.Fatalf("stale token 3 with a planted <= on the caller's path: %v; want SQLSTATE %s", err, pgfence.SQLStateStale)
	}
	// Negative control: without the pinned search_path the plant works.
	if _, err := owner.Exec(ctx, `ALTER FUNCTION baton_fence(text, bigint, text, text) RESET search_path`); err != nil {
		t.Fatal(err)
	}
	if err := write(3); err != nil {
		t.Fatalf("control: with the pin removed the planted operator should let token 3 through, got %v", err)
	}
	if h := highest(t, ctx, owner, "public", "billing"); h != 3 {
		t.Fatalf("control: fence at %d, want 3 (the plant lowered it)", h)
	}
}

// What a granted role can do depends on the key. Without one it can
// raise the fence to any token (the limit docs/SECURITY.md states: grant
// only the jobs' roles); with one, its unsigned or forged tokens are
// refused with BF002, and it can read neither the key nor call the
// function that uses it.
func TestGrantedRoleAndTheKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.Start(t)
	job, jobURL := pgtest.NewRole(t, db)
	owner := connect(t, ctx, db, "")
	if _, err := pgfence.Install(ctx, owner, pgfence.WithGrant(job)); err != nil {
		t.Fatal(err)
	}
	granted := connect(t, ctx, jobURL, "")
	if _, err := granted.Exec(ctx, lockOut); err != nil {
		t.Fatalf("without a key, a granted role's high token: %v; the documented limit no longer holds: update docs/SECURITY.md", err)
	}
	k, err := fence.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := pgfence.Install(ctx, owner, pgfence.WithKey(k), pgfence.WithGrant(job))
	if err != nil || !res.KeyChanged {
		t.Fatalf("install with a key: %+v, %v", res, err)
	}
	granted = connect(t, ctx, jobURL, "")
	other, _ := fence.NewKey([]byte("fedcba9876543210fedcba9876543210"))
	for _, sig := range []any{nil, k.Sign("billing", 1<<62), other.Sign("payroll", 1<<62), strings.Repeat("0", 64)} {
		if _, err := granted.Exec(ctx, `SELECT baton_fence('payroll', $1, $2)`, int64(1<<62), sig); sqlState(err) != pgfence.SQLStateBadSignature {
			t.Fatalf("with a key, a granted role's forged token (sig %v): %v; want SQLSTATE %s", sig, err, pgfence.SQLStateBadSignature)
		}
	}
	if _, err := granted.Exec(ctx, `SELECT baton_fence('payroll', 2, $1)`, k.Sign("payroll", 2)); err != nil {
		t.Fatalf("a signed token: %v", err)
	}
	for _, q := range []string{`SELECT secret FROM baton_fence_key`, `SELECT baton_fence_hmac('\x00'::bytea, '\x00'::bytea)`} {
		if _, err := granted.Exec(ctx, q); sqlState(err) != "42501" {
			t.Fatalf("the granted role ran %s: %v; want permission denied", q, err)
		}
	}
}
