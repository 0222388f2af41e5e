package pgfence_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/pgtest"
)

// CheckLogged logs the committed acceptances only, LogRefusal the
// refusals with the highest token, in the table fence.ReadLog reads.
func TestCheckLogged(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pgfence.CreateTable(ctx, pool); err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent
		if err := pgfence.CreateLogTable(ctx, pool); err != nil {
			t.Fatal(err)
		}
	}
	errRollback := errors.New("roll back")
	do := func(w fence.Write, rollback bool) error {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := pgfence.CheckLogged(ctx, tx, nil, w); err != nil {
				return err
			}
			if rollback {
				return errRollback
			}
			return nil
		})
		if lerr := pgfence.LogRefusal(ctx, pool, w, err); lerr != nil {
			t.Fatal(lerr)
		}
		return err
	}
	if err := do(fence.Write{Name: "job", Token: 1, Period: "P1"}, false); err != nil {
		t.Fatal(err)
	}
	if err := do(fence.Write{Name: "job", Token: 5, Period: "P2"}, true); !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	if err := do(fence.Write{Name: "job", Token: 3, Period: "P2"}, false); err != nil {
		t.Fatal(err)
	}
	if err := do(fence.Write{Name: "job", Token: 2, Period: "P3"}, false); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("token 2 after 3: %v, want stale", err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d, _ := fence.Postgres.WithLog(fence.DefaultLogTable)
	log, err := fence.ReadLog(ctx, db, d, "job")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		token   uint64
		period  string
		outcome string
		highest uint64
	}
	want := []row{{1, "P1", fence.Accepted, 1}, {3, "P2", fence.Accepted, 3}, {2, "P3", fence.Refused, 3}}
	if len(log) != len(want) {
		t.Fatalf("log %+v, want %v", log, want)
	}
	for i, e := range log {
		if got := (row{e.Token, e.Period, e.Outcome, e.Highest}); got != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got, want[i])
		}
	}
	// package fence's Postgres dialect writes the same table.
	tx, _ := db.BeginTx(ctx, nil)
	if err := fence.CheckWriteTx(ctx, tx, d, fence.Write{Name: "job", Token: 4, Period: "P4"}); err != nil {
		t.Fatal(err)
	}
	tx.Commit()
	if log, _ := fence.ReadLog(ctx, db, d, "job"); len(log) != 4 || log[3].Token != 4 {
		t.Fatalf("after fence.CheckWriteTx: %+v", log)
	}
}
