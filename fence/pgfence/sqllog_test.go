package pgfence_test

import (
	"context"
	"database/sql"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/pgtest"
)

// readSQLLog reads the fence log of name in db as `baton verify
// --fence-db` does: fence.ReadLog through database/sql.
func readSQLLog(t *testing.T, ctx context.Context, db, name string) []fence.LogEntry {
	t.Helper()
	sdb, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	d, _ := fence.Postgres.WithLog(fence.DefaultLogTable)
	log, err := fence.ReadLog(ctx, sdb, d, name)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// logString is the accepted rows of a log as "token/period" pairs.
func logString(log []fence.LogEntry) string {
	var s []string
	for _, e := range log {
		if e.Outcome != fence.Accepted || e.Highest != e.Token {
			s = append(s, "BAD:"+e.Outcome)
		}
		s = append(s, strings.TrimSuffix(strings.Join([]string{itoa(e.Token), e.Period}, "/"), "/"))
	}
	return strings.Join(s, " ")
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// With WithLog, baton_fence logs every call it accepts, with
// the period of its fourth argument, in the caller's transaction, in the
// table the Go fence logs to (fence.ReadLog reads it): a rolled-back
// write and a stale token log nothing; the 2- and 3-argument calls keep
// working (period ""). The job's role calls the function, which writes
// the log, but has no right on the log table itself.
func TestInstalledFunctionLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.Start(t)
	job, jobURL := pgtest.NewRole(t, db)
	owner := connect(t, ctx, db, "")
	res, err := pgfence.Install(ctx, owner, pgfence.WithGrant(job))
	if err != nil || res.Logged || res.LogChanged {
		t.Fatalf("install without a log: %+v, %v", res, err)
	}
	var exists bool
	owner.QueryRow(ctx, `SELECT to_regclass('baton_fence_log') IS NOT NULL`).Scan(&exists)
	if exists {
		t.Fatal("an install without Log made the table baton_fence_log")
	}
	c := connect(t, ctx, jobURL, "")
	if _, err := c.Exec(ctx, `SELECT baton_fence('billing', 1, NULL, '2026-01-01T00:00:00Z')`); err != nil {
		t.Fatalf("a call with a period on a fence without a log: %v", err)
	}
	res, err = pgfence.Install(ctx, owner, pgfence.WithLog())
	if err != nil || !res.Logged || !res.LogChanged || res.Created {
		t.Fatalf("install with Log: %+v, %v", res, err)
	}
	res, err = pgfence.Install(ctx, owner)
	if err != nil || !res.Logged || res.LogChanged {
		t.Fatalf("install again without Log: %+v, %v; want the log kept, nothing changed", res, err)
	}
	// A log table dropped by hand is made again by the next install.
	if _, err := owner.Exec(ctx, `DROP TABLE baton_fence_log`); err != nil {
		t.Fatal(err)
	}
	if res, err = pgfence.Install(ctx, owner); err != nil || !res.Logged {
		t.Fatalf("install after the log table was dropped: %+v, %v", res, err)
	}

	call := func(query string, commit bool) error {
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, query); err != nil {
			return pgfence.Classify(err)
		}
		if commit {
			return tx.Commit(ctx)
		}
		return nil
	}
	steps := []struct {
		query  string
		commit bool
	}{
		{`SELECT baton_fence('billing', 2, NULL, '2026-01-01T01:00:00Z')`, true},
		{`SELECT baton_fence('billing', 3, NULL, '2026-01-01T02:00:00Z')`, false}, // rolled back
		{`SELECT baton_fence('billing', 3, NULL, '2026-01-01T02:00:00Z')`, true},
		{`SELECT baton_fence('billing', 3)`, true},       // the 2-argument call
		{`SELECT baton_fence('billing', 4, NULL)`, true}, // the 3-argument call
		{`SELECT baton_fence('other', 9, NULL, 'p')`, true},
	}
	for _, s := range steps {
		if err := call(s.query, s.commit); err != nil {
			t.Fatalf("%s: %v", s.query, err)
		}
	}
	if err := call(`SELECT baton_fence('billing', 2, NULL, '2026-01-01T03:00:00Z')`, true); sqlState(err) != pgfence.SQLStateStale {
		t.Fatalf("stale token 2 after 4: %v, want %s", err, pgfence.SQLStateStale)
	}
	if got, want := logString(readSQLLog(t, ctx, db, "billing")), "2/2026-01-01T01:00:00Z 3/2026-01-01T02:00:00Z 3 4"; got != want {
		t.Fatalf("fence log of billing: %q, want %q (nothing of the rolled-back and the stale call)", got, want)
	}
	for _, q := range []string{`SELECT count(*) FROM baton_fence_log`, `DELETE FROM baton_fence_log`,
		`INSERT INTO baton_fence_log (name, token, period, outcome, highest, at_ns) VALUES ('billing', 5, 'x', 'accepted', 5, 0)`} {
		if _, err := c.Exec(ctx, q); sqlState(err) != "42501" {
			t.Fatalf("the job's role: %s: %v, want permission denied (42501)", q, err)
		}
	}
}

// A fence of version 1 (testdata/fence_v1.sql, as the baton before the
// fence log installed it), with a role granted its function and a token
// accepted, is upgraded in place by Install: the version becomes 2, the
// token and the role's right are kept, the old 2- and 3-argument calls
// keep working and the new 4-argument one logs.
func TestInstallUpgradesVersion1(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v1, err := os.ReadFile("testdata/fence_v1.sql")
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.Start(t)
	job, jobURL := pgtest.NewRole(t, db)
	owner := connect(t, ctx, db, "")
	if _, err := owner.Exec(ctx, string(v1)+`;GRANT EXECUTE ON FUNCTION baton_fence(text, bigint, text) TO `+pgx.Identifier{job}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	c := connect(t, ctx, jobURL, "")
	if _, err := c.Exec(ctx, `SELECT baton_fence('billing', 5)`); err != nil {
		t.Fatalf("version 1 as installed: %v", err)
	}
	res, err := pgfence.Install(ctx, owner, pgfence.WithLog())
	if err != nil || res.Upgraded != 1 || res.Created || !res.LogChanged || !res.Logged || res.PublicRevoked {
		t.Fatalf("install over version 1: %+v, %v; want upgraded from 1, the log on", res, err)
	}
	var v string
	owner.QueryRow(ctx, `SELECT value FROM baton_fence_meta WHERE key = 'version'`).Scan(&v)
	if v != "2" || pgfence.Version != 2 {
		t.Fatalf("version after the upgrade %q (pgfence.Version %d), want 2", v, pgfence.Version)
	}
	if _, err := c.Exec(ctx, `SELECT baton_fence('billing', 4)`); sqlState(err) != pgfence.SQLStateStale {
		t.Fatalf("token 4 after version 1 accepted 5: %v, want %s (the token kept)", err, pgfence.SQLStateStale)
	}
	for _, q := range []string{`SELECT baton_fence('billing', 5)`, `SELECT baton_fence('billing', 6, NULL)`,
		`SELECT baton_fence('billing', 7, NULL, '2026-01-01T00:00:00Z')`} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("the granted role after the upgrade: %s: %v", q, err)
		}
	}
	if got, want := logString(readSQLLog(t, ctx, db, "billing")), "5 6 7/2026-01-01T00:00:00Z"; got != want {
		t.Fatalf("fence log after the upgrade: %q, want %q", got, want)
	}
	res, err = pgfence.Install(ctx, owner, pgfence.WithLog())
	if err != nil || res.Upgraded != 0 || res.Created || res.LogChanged || len(res.Granted) != 0 {
		t.Fatalf("install again: %+v, %v; want a no-op", res, err)
	}
	var public bool
	owner.QueryRow(ctx, `SELECT has_function_privilege('public', 'baton_fence(text, bigint, text, text)', 'EXECUTE')`).Scan(&public)
	if public {
		t.Fatal("PUBLIC may execute the upgraded function")
	}
}

// A version 1 fence that let PUBLIC call it (a baton before issue 42) is
// upgraded with PUBLIC's EXECUTE revoked, and Install says so.
func TestInstallUpgradeRevokesPublic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v1, err := os.ReadFile("testdata/fence_v1.sql")
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.Start(t)
	owner := connect(t, ctx, db, "")
	if _, err := owner.Exec(ctx, string(v1)+`;GRANT EXECUTE ON FUNCTION baton_fence(text, bigint, text) TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	res, err := pgfence.Install(ctx, owner)
	if err != nil || res.Upgraded != 1 || !res.PublicRevoked || res.Logged {
		t.Fatalf("install over a public version 1: %+v, %v; want upgraded, PUBLIC revoked, no log", res, err)
	}
}

// A table baton_fence_log that is not a fence log is refused by
// Install with Log, which changes nothing.
func TestInstallLogForeignTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := connect(t, ctx, pgtest.Start(t), "")
	if _, err := owner.Exec(ctx, `CREATE TABLE baton_fence_log (id int PRIMARY KEY, what text)`); err != nil {
		t.Fatal(err)
	}
	_, err := pgfence.Install(ctx, owner, pgfence.WithLog())
	if err == nil || !strings.Contains(err.Error(), "baton_fence_log") || !strings.Contains(err.Error(), "columns") {
		t.Fatalf("install with Log over a foreign baton_fence_log: %v", err)
	}
	var fn bool
	owner.QueryRow(ctx, `SELECT to_regproc('baton_fence') IS NOT NULL`).Scan(&fn)
	if fn {
		t.Fatal("the refused install left the function behind")
	}
}
