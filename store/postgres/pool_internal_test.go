package postgres

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

// TestNewPool checks the one pool set-up of Open and its read-only form:
// the schema comes from the URL, WithPoolConfig functions apply, and the
// sessions are read-only exactly when the store is.
func TestNewPool(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	u, err := url.Parse(pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", "s1")
	u.RawQuery = q.Encode()
	for _, tc := range []struct {
		readOnly bool
		want     string
	}{{false, "off"}, {true, "on"}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		o := config{readOnly: tc.readOnly, poolConfig: []func(*pgxpool.Config){func(c *pgxpool.Config) {
			c.ConnConfig.RuntimeParams["application_name"] = "baton-newpool"
		}}}
		pool, schema, err := newPool(ctx, u.String(), o)
		if err != nil {
			t.Fatalf("readOnly %v: %v", tc.readOnly, err)
		}
		defer pool.Close()
		if schema != "s1" {
			t.Errorf("readOnly %v: schema %q, want s1", tc.readOnly, schema)
		}
		var ro, app string
		if err := pool.QueryRow(ctx, `SELECT current_setting('default_transaction_read_only'), current_setting('application_name')`).Scan(&ro, &app); err != nil {
			t.Fatalf("readOnly %v: %v", tc.readOnly, err)
		}
		if ro != tc.want || app != "baton-newpool" {
			t.Errorf("readOnly %v: default_transaction_read_only %q, application_name %q; want %q, baton-newpool", tc.readOnly, ro, app, tc.want)
		}
	}
}

// TestSwapNotBehindBusyPool checks that a Swap (a renewal) gets a
// connection while every connection of the Store's main pool is taken,
// as by batched reads and writes in flight: it has a pool of its own.
func TestSwapNotBehindBusyPool(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, pgtest.Start(t), WithPoolConfig(func(c *pgxpool.Config) { c.MaxConns = 2 }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "busy", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Second}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	var held []*pgxpool.Conn
	for range s.pool.Config().MaxConns {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	// A renewal (its one-row UPDATE), then a swap that goes to swap_one.
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if rec, err = s.Swap(sctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
		t.Fatalf("renewal with the main pool taken: %v", err)
	}
	free := rec
	free.Holder, free.Incarnation = "", ""
	if _, err := s.Swap(sctx, store.Swap{Expect: rec.Version, Record: free, Event: store.Released}); err != nil {
		t.Fatalf("release with the main pool taken: %v", err)
	}
}
