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
)

// BenchmarkRenew measures a leader's renewal: one compare-and-swap that
// keeps holder and token and writes no log event.
func BenchmarkRenew(b *testing.B) {
	s := open(b, pgtest.Start(b))
	defer s.Close()
	ctx := context.Background()
	rec, err := s.Swap(ctx, store.Swap{Record: acquire("renew", "n1", 1), Event: store.Acquired})
	if err != nil {
		b.Fatal(err)
	}

	for b.Loop() {
		if rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAcquire measures an acquisition: a swap that raises the token
// and appends an event to the election log.
func BenchmarkAcquire(b *testing.B) {
	s := open(b, pgtest.Start(b))
	defer s.Close()
	ctx := context.Background()
	rec, err := s.Swap(ctx, store.Swap{Record: acquire("acq", "n0", 1), Event: store.Acquired})
	if err != nil {
		b.Fatal(err)
	}

	for i := 0; b.Loop(); i++ {
		next := acquire("acq", fmt.Sprintf("n%d", i%5), rec.Token+1)
		if rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: next, Event: store.TakenOver}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSwapMany10 measures renewing ten names in one batch.
func BenchmarkSwapMany10(b *testing.B) {
	s := open(b, pgtest.Start(b))
	defer s.Close()
	ctx := context.Background()
	swaps := make([]store.Swap, 10)
	for i := range swaps {
		rec, err := s.Swap(ctx, store.Swap{Record: acquire(fmt.Sprintf("m%d", i), "n1", 1), Event: store.Acquired})
		if err != nil {
			b.Fatal(err)
		}
		swaps[i] = store.Swap{Expect: rec.Version, Record: rec}
	}

	for b.Loop() {
		res, err := s.SwapMany(ctx, swaps)
		if err != nil {
			b.Fatal(err)
		}
		for i, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
			swaps[i].Expect = r.Record.Version
		}
	}
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
