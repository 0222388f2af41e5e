package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storetest"
)

func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) store.Store { return open(b, pgtest.Start(b)) })
}

func invoicePool(b *testing.B) *pgxpool.Pool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, pgtest.Start(b))
	if err != nil {
		b.Fatal(err)
	}
	if err := pgfence.CreateTable(ctx, pool); err != nil {
		b.Fatal(err)
	}
	_, err = pool.Exec(ctx, `CREATE TABLE invoice (id bigserial PRIMARY KEY, customer text NOT NULL, amount_cents bigint NOT NULL, token bigint NOT NULL)`)
	if err != nil {
		b.Fatal(err)
	}
	return pool
}

func insertInvoice(ctx context.Context, tx pgx.Tx, i int) error {
	_, err := tx.Exec(ctx, `INSERT INTO invoice (customer, amount_cents, token) VALUES ($1, $2, $3)`,
		fmt.Sprintf("c%d", i%100), int64(i), int64(7))
	return err
}

// BenchmarkFencedInsert measures an invoice line written through the
// fence: pgfence.Check and the INSERT in one transaction.
func BenchmarkFencedInsert(b *testing.B) {
	pool := invoicePool(b)
	defer pool.Close()
	ctx := context.Background()

	for i := 0; b.Loop(); i++ {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := pgfence.Check(ctx, tx, "billing", 7); err != nil {
				return err
			}
			return insertInvoice(ctx, tx, i)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlainInsert is BenchmarkFencedInsert without the fence: the
// INSERT alone in a transaction.
func BenchmarkPlainInsert(b *testing.B) {
	pool := invoicePool(b)
	defer pool.Close()
	ctx := context.Background()

	for i := 0; b.Loop(); i++ {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return insertInvoice(ctx, tx, i) })
		if err != nil {
			b.Fatal(err)
		}
	}
}
