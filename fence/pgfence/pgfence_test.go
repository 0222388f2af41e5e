package pgfence_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func setup(t *testing.T) (context.Context, *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	pool, err := pgxpool.New(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for range 2 { // idempotent
		if err := pgfence.CreateTable(ctx, pool); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE invoice (id bigserial PRIMARY KEY, token bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return ctx, pool
}

// write runs the fenced work: an invoice line with token, written before
// or after the check.
func write(ctx context.Context, pool *pgxpool.Pool, token uint64, checkFirst bool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if checkFirst {
			if err := pgfence.Check(ctx, tx, "billing", token); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO invoice (token) VALUES ($1)`, int64(token)); err != nil {
			return err
		}
		if !checkFirst {
			return pgfence.Check(ctx, tx, "billing", token)
		}
		return nil
	})
}

func invoices(t *testing.T, ctx context.Context, pool *pgxpool.Pool) []int64 {
	t.Helper()
	rows, _ := pool.Query(ctx, `SELECT token FROM invoice ORDER BY id`)
	toks, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

func TestCheck(t *testing.T) {
	ctx, pool := setup(t)
	steps := []struct {
		token      uint64
		checkFirst bool
		stale      bool
	}{
		{1, true, false},
		{1, false, false}, // the same term again
		{3, true, false},
		{2, true, true},
		{2, false, true}, // written before the check: rolled back all the same
		{3, false, false},
		{4, true, false},
		{1, true, true},
	}
	var want []int64
	for i, st := range steps {
		err := write(ctx, pool, st.token, st.checkFirst)
		if st.stale != errors.Is(err, fence.ErrStaleToken) || (!st.stale && err != nil) {
			t.Fatalf("step %d (token %d): err = %v, want stale %v", i, st.token, err, st.stale)
		}
		if !st.stale {
			want = append(want, int64(st.token))
		} else {
			t.Logf("step %d: %v", i, err)
		}
	}
	got := invoices(t, ctx, pool)
	if len(got) != len(want) {
		t.Fatalf("invoice tokens %v, want %v: stale work landed", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("invoice tokens %v, want %v", got, want)
		}
	}
	// Another name is independent.
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return pgfence.Check(ctx, tx, "other", 1) })
	if err != nil {
		t.Fatalf("another name: %v", err)
	}
}

func TestCheckRefusesBadInput(t *testing.T) {
	ctx, pool := setup(t)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := pgfence.Check(ctx, tx, "", 1); err == nil || errors.Is(err, fence.ErrStaleToken) {
		t.Errorf("empty name: %v", err)
	}
	if err := pgfence.Check(ctx, tx, "n", 1<<63); err == nil || errors.Is(err, fence.ErrStaleToken) {
		t.Errorf("token 2^63: %v", err)
	}
}

func TestCheckMissingTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	err = pgfence.Check(ctx, tx, "n", 1)
	if err == nil || errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("Check without the table: %v", err)
	}
	t.Log(err)
}

// A lower token waits for a higher one in flight and is refused when the
// higher one commits; accepted when it rolls back.
func TestConcurrentHigherThenLower(t *testing.T) {
	for _, commit := range []bool{true, false} {
		name := map[bool]string{true: "commit", false: "rollback"}[commit]
		t.Run(name, func(t *testing.T) {
			ctx, pool := setup(t)
			high, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer high.Rollback(ctx)
			if err := pgfence.Check(ctx, high, "billing", 5); err != nil {
				t.Fatal(err)
			}
			if _, err := high.Exec(ctx, `INSERT INTO invoice (token) VALUES (5)`); err != nil {
				t.Fatal(err)
			}
			low := make(chan error, 1)
			go func() { low <- write(ctx, pool, 4, true) }()
			// The lower token's transaction must be waiting on the fence row.
			waitForLockWait(t, ctx, pool)
			if commit {
				if err := high.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				high.Rollback(ctx)
			}
			err = <-low
			got := invoices(t, ctx, pool)
			if commit {
				if !errors.Is(err, fence.ErrStaleToken) || len(got) != 1 || got[0] != 5 {
					t.Fatalf("after the higher token committed: low err %v, invoices %v", err, got)
				}
			} else if err != nil || len(got) != 1 || got[0] != 4 {
				t.Fatalf("after the higher token rolled back: low err %v, invoices %v", err, got)
			}
		})
	}
}

func waitForLockWait(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	for {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no transaction waited for the fence row")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Many writers with random tokens at once: the invoices that land, in the
// order they took the fence row, never go back in token, and the fence
// ends at the highest accepted token.
func TestConcurrentRandomTokens(t *testing.T) {
	ctx, pool := setup(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const n = 40
	tokens := make([]uint64, n)
	for i := range tokens {
		tokens[i] = 1 + rng.Uint64N(10)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = write(ctx, pool, tokens[i], true)
		}()
	}
	wg.Wait()
	accepted := 0
	for i, err := range errs {
		switch {
		case err == nil:
			accepted++
		case errors.Is(err, fence.ErrStaleToken):
		default:
			t.Fatalf("writer %d (token %d): %v", i, tokens[i], err)
		}
	}
	got := invoices(t, ctx, pool)
	if len(got) != accepted {
		t.Fatalf("%d writers accepted, %d invoices landed", accepted, len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Fatalf("accepted tokens went back: %v", got)
		}
	}
	var highest int64
	if err := pool.QueryRow(ctx, `SELECT token FROM baton_fence WHERE name = 'billing'`).Scan(&highest); err != nil {
		t.Fatal(err)
	}
	if highest != got[len(got)-1] {
		t.Fatalf("fence at %d, last accepted invoice %d", highest, got[len(got)-1])
	}
}
