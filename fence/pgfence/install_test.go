package pgfence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/pgtest"
)

// installed returns a pool on a fresh database with the SQL fence in
// schema public (installed twice: the second is a no-op) and an invoice
// table.
func installed(t *testing.T, key *fence.Key) (context.Context, *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	pool, err := pgxpool.New(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var opts []pgfence.Option
	if key != nil {
		opts = append(opts, pgfence.WithKey(key))
	}
	res, err := pgfence.Install(ctx, pool, opts...)
	if err != nil || !res.Created || res.TableExisted || res.Signed != (key != nil) || res.KeyChanged != (key != nil) {
		t.Fatalf("first install: %+v, %v", res, err)
	}
	res, err = pgfence.Install(ctx, pool, opts...)
	if err != nil || res.Created || res.KeyChanged || res.Signed != (key != nil) {
		t.Fatalf("second install: %+v, %v; want a no-op", res, err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE invoice (id bigserial PRIMARY KEY, token bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return ctx, pool
}

// sqlWrite is the fenced work through the SQL function: an invoice line
// written before the call to baton_fence, so that a refusal must roll it
// back with the rest.
func sqlWrite(ctx context.Context, pool *pgxpool.Pool, name string, token int64, sig any) error {
	return sqlWriteIso(ctx, pool, pgx.ReadCommitted, name, token, sig)
}

func sqlWriteIso(ctx context.Context, pool *pgxpool.Pool, iso pgx.TxIsoLevel, name string, token int64, sig any) error {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO invoice (token) VALUES ($1)`, token); err != nil {
		return err
	}
	var got int64
	if err := tx.QueryRow(ctx, `SELECT baton_fence($1, $2, $3)`, name, token, sig).Scan(&got); err != nil {
		return pgfence.Classify(err)
	}
	if got != token {
		return fmt.Errorf("baton_fence returned %d, want %d", got, token)
	}
	return tx.Commit(ctx)
}

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func TestInstalledFunction(t *testing.T) {
	ctx, pool := installed(t, nil)
	steps := []struct {
		token int64
		state string
	}{
		{1, ""}, {1, ""}, {3, ""}, {2, pgfence.SQLStateStale}, {4, ""}, {1, pgfence.SQLStateStale},
		{0, pgfence.SQLStateInvalid}, {-5, pgfence.SQLStateInvalid},
	}
	var want []int64
	for i, st := range steps {
		err := sqlWrite(ctx, pool, "billing", st.token, nil)
		if sqlState(err) != st.state || (st.state == "" && err != nil) {
			t.Fatalf("step %d (token %d): %v, want SQLSTATE %q", i, st.token, err, st.state)
		}
		switch st.state {
		case "":
			want = append(want, st.token)
		case pgfence.SQLStateStale:
			if !errors.Is(err, fence.ErrStaleToken) || !strings.Contains(err.Error(), "stale token") {
				t.Fatalf("step %d: %v, want fence.ErrStaleToken", i, err)
			}
			t.Logf("step %d: %v", i, err)
		case pgfence.SQLStateInvalid:
			if !errors.Is(err, fence.ErrInvalidToken) {
				t.Fatalf("step %d: %v, want fence.ErrInvalidToken", i, err)
			}
		}
	}
	if got := invoices(t, ctx, pool); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("invoice tokens %v, want %v: refused work landed", got, want)
	}
	if err := sqlWrite(ctx, pool, "", 9, nil); sqlState(err) != pgfence.SQLStateInvalid {
		t.Fatalf("empty name: %v", err)
	}
	if err := sqlWrite(ctx, pool, "other", 1, nil); err != nil {
		t.Fatalf("another name: %v", err)
	}
}

// A Go writer (Check) and a SQL writer (the function) on one name fence
// each other: they share the table.
func TestGoAndSQLWritersShareTheFence(t *testing.T) {
	ctx, pool := installed(t, nil)
	goWrite := func(token uint64) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return pgfence.Check(ctx, tx, "billing", token) })
	}
	if err := goWrite(5); err != nil {
		t.Fatal(err)
	}
	if err := sqlWrite(ctx, pool, "billing", 4, nil); sqlState(err) != pgfence.SQLStateStale {
		t.Fatalf("SQL writer with token 4 after Go's 5: %v, want SQLSTATE %s", err, pgfence.SQLStateStale)
	}
	if err := sqlWrite(ctx, pool, "billing", 7, nil); err != nil {
		t.Fatal(err)
	}
	if err := goWrite(6); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("Go writer with token 6 after SQL's 7: %v, want ErrStaleToken", err)
	}
	// fence.CheckTx's postgres dialect, through database/sql, too.
	sdb := stdlib.OpenDBFromPool(pool)
	defer sdb.Close()
	checkTx := func(token uint64) error {
		tx, err := sdb.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := fence.CheckTx(ctx, tx, fence.Postgres, "billing", token); err != nil {
			return err
		}
		return tx.Commit()
	}
	if err := checkTx(6); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("fence.CheckTx with token 6 after SQL's 7: %v, want ErrStaleToken", err)
	}
	if err := checkTx(8); err != nil {
		t.Fatal(err)
	}
	if err := sqlWrite(ctx, pool, "billing", 7, nil); sqlState(err) != pgfence.SQLStateStale {
		t.Fatalf("SQL writer with token 7 after fence.CheckTx's 8: %v", err)
	}
}

// Install keeps the table CreateTable made, with its tokens, and refuses
// a foreign baton_fence table, changing nothing.
func TestInstallExistingAndForeignTables(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Run("CreateTable's", func(t *testing.T) {
		pool, err := pgxpool.New(ctx, pgtest.Start(t))
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		if err := pgfence.CreateTable(ctx, pool); err != nil {
			t.Fatal(err)
		}
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return pgfence.Check(ctx, tx, "billing", 8) }); err != nil {
			t.Fatal(err)
		}
		res, err := pgfence.Install(ctx, pool)
		if err != nil || !res.Created || !res.TableExisted {
			t.Fatalf("install over CreateTable's table: %+v, %v", res, err)
		}
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `SELECT baton_fence('billing', 7)`)
			return err
		})
		if sqlState(err) != pgfence.SQLStateStale {
			t.Fatalf("token 7 after Check's 8: %v", err)
		}
	})
	for name, create := range map[string]string{
		"other columns": `CREATE TABLE baton_fence (name text PRIMARY KEY, token integer NOT NULL)`,
		"nullable":      `CREATE TABLE baton_fence (name text PRIMARY KEY, token bigint)`,
		"extra column":  `CREATE TABLE baton_fence (name text PRIMARY KEY, token bigint NOT NULL, at timestamptz)`,
		"no key":        `CREATE TABLE baton_fence (name text NOT NULL, token bigint NOT NULL)`,
		"a view":        `CREATE VIEW baton_fence AS SELECT 'n'::text AS name, 1::bigint AS token`,
		"a function":    `CREATE FUNCTION baton_fence(text, bigint) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'`,
	} {
		t.Run(name, func(t *testing.T) {
			pool, err := pgxpool.New(ctx, pgtest.Start(t))
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			if _, err := pool.Exec(ctx, create); err != nil {
				t.Fatal(err)
			}
			res, err := pgfence.Install(ctx, pool)
			if !errors.Is(err, pgfence.ErrForeign) || res.Created {
				t.Fatalf("install: %+v, %v; want ErrForeign", res, err)
			}
			t.Log(err)
			var meta, fn bool
			if err := pool.QueryRow(ctx, `SELECT to_regclass('baton_fence_meta') IS NOT NULL,
				EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'baton_fence' AND pronargs = 3)`).Scan(&meta, &fn); err != nil || meta || fn {
				t.Fatalf("after the refusal: meta table %v, function %v (%v); want nothing changed", meta, fn, err)
			}
		})
	}
}

// In another schema, quoted: the function there, and the Go helpers with
// the schema on their search_path, share its table.
func TestInstallSchema(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = `"Fence Room"`
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pgfence.Install(ctx, pool, pgfence.WithSchema("Fence Room")); err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return pgfence.Check(ctx, tx, "n", 3) }); err != nil {
		t.Fatal(err)
	}
	_, err = pool.Exec(ctx, `SELECT "Fence Room".baton_fence('n', 2)`)
	if sqlState(err) != pgfence.SQLStateStale {
		t.Fatalf("schema-qualified call with a stale token: %v", err)
	}
	if _, err := pgfence.InstallSQL(""); err == nil {
		t.Fatal("InstallSQL accepted an empty schema")
	}
	ddl, err := pgfence.InstallSQL("Fence Room")
	if err != nil || !strings.Contains(ddl, `CREATE FUNCTION "Fence Room".baton_fence(`) {
		t.Fatalf("InstallSQL: %v\n%s", err, ddl)
	}
}

// With a key: only the key's signature moves the fence; a forged token
// (1<<62) with no signature, a malformed one or another token's is
// refused with SQLStateBadSignature and does not move it. Install with
// another key replaces it.
func TestInstalledFunctionSigned(t *testing.T) {
	k, err := fence.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, pool := installed(t, k)
	if err := sqlWrite(ctx, pool, "billing", 5, k.Sign("billing", 5)); err != nil {
		t.Fatal(err)
	}
	upper := strings.ToUpper(k.Sign("billing", 5))
	if err := sqlWrite(ctx, pool, "billing", 5, upper); err != nil {
		t.Fatalf("upper-case signature: %v", err)
	}
	// A name with multi-byte characters: the length is counted in bytes,
	// as Key.Sign does.
	if err := sqlWrite(ctx, pool, "fact\u00fcre-\u65e5", 2, k.Sign("fact\u00fcre-\u65e5", 2)); err != nil {
		t.Fatalf("non-ASCII name: %v", err)
	}
	for _, sig := range []any{nil, "", "zz", k.Sign("billing", 5), k.Sign("other", 1<<62), upper[:63]} {
		err := sqlWrite(ctx, pool, "billing", 1<<62, sig)
		if sqlState(err) != pgfence.SQLStateBadSignature || !errors.Is(err, fence.ErrBadSignature) {
			t.Fatalf("forged token with signature %v: %v", sig, err)
		}
	}
	var highest int64
	if err := pool.QueryRow(ctx, `SELECT token FROM baton_fence WHERE name = 'billing'`).Scan(&highest); err != nil || highest != 5 {
		t.Fatalf("fence at %d (%v), want 5: a forged token moved it", highest, err)
	}
	if err := sqlWrite(ctx, pool, "billing", 4, k.Sign("billing", 4)); sqlState(err) != pgfence.SQLStateStale {
		t.Fatalf("signed but stale: %v", err)
	}
	// The key table is the owner's alone.
	var public bool
	if err := pool.QueryRow(ctx, `SELECT has_table_privilege('public', 'baton_fence_key', 'SELECT')`).Scan(&public); err != nil || public {
		t.Fatalf("PUBLIC can read the key: %v %v", public, err)
	}
	k2, _ := fence.NewKey([]byte("another key, 32 bytes long......"))
	res, err := pgfence.Install(ctx, pool, pgfence.WithKey(k2))
	if err != nil || res.Created || !res.KeyChanged || !res.Signed {
		t.Fatalf("install with another key: %+v, %v", res, err)
	}
	if err := sqlWrite(ctx, pool, "billing", 6, k.Sign("billing", 6)); sqlState(err) != pgfence.SQLStateBadSignature {
		t.Fatalf("the old key's signature after the key was replaced: %v", err)
	}
	if err := sqlWrite(ctx, pool, "billing", 6, k2.Sign("billing", 6)); err != nil {
		t.Fatal(err)
	}
}

// A lower token through the function waits for a higher one in flight
// (through the function or Check) and is refused once it commits,
// accepted if it rolls back; at SERIALIZABLE the refusal may come as a
// serialization failure, and the retry is refused as stale.
func TestInstalledConcurrentHigherThenLower(t *testing.T) {
	for _, iso := range []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.Serializable} {
		for _, highByGo := range []bool{false, true} {
			for _, commit := range []bool{true, false} {
				name := fmt.Sprintf("%s/go-%v/commit-%v", strings.ReplaceAll(string(iso), " ", "-"), highByGo, commit)
				t.Run(name, func(t *testing.T) {
					ctx, pool := installed(t, nil)
					high, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
					if err != nil {
						t.Fatal(err)
					}
					defer high.Rollback(ctx)
					if highByGo {
						err = pgfence.Check(ctx, high, "billing", 5)
					} else {
						_, err = high.Exec(ctx, `SELECT baton_fence('billing', 5)`)
					}
					if err != nil {
						t.Fatal(err)
					}
					if _, err := high.Exec(ctx, `INSERT INTO invoice (token) VALUES (5)`); err != nil {
						t.Fatal(err)
					}
					low := make(chan error, 1)
					go func() { low <- sqlWriteIso(ctx, pool, iso, "billing", 4, nil) }()
					waitForLockWait(t, ctx, pool)
					if commit {
						if err := high.Commit(ctx); err != nil {
							t.Fatal(err)
						}
					} else {
						high.Rollback(ctx)
					}
					err = <-low
					if commit && sqlState(err) == "40001" {
						t.Logf("serialization failure, retried: %v", err)
						err = sqlWriteIso(ctx, pool, iso, "billing", 4, nil)
					}
					got := invoices(t, ctx, pool)
					if commit {
						if sqlState(err) != pgfence.SQLStateStale || len(got) != 1 || got[0] != 5 {
							t.Fatalf("after the higher token committed: low err %v, invoices %v", err, got)
						}
					} else if err != nil || len(got) != 1 || got[0] != 4 {
						t.Fatalf("after the higher token rolled back: low err %v, invoices %v", err, got)
					}
				})
			}
		}
	}
}
