package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func query(t *testing.T, url string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestStartGivesFreshDatabases(t *testing.T) {
	u1, u2 := pgtest.Start(t), pgtest.Start(t)
	if u1 == u2 {
		t.Fatalf("two calls returned the same database %s", u1)
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE x (a int)"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	if n := query(t, u2); n != 0 {
		t.Fatalf("second database has %d tables, want 0", n)
	}
}

func TestServerRestartKeepsData(t *testing.T) {
	s := pgtest.NewServer(t)
	ctx := context.Background()
	if err := s.Exec(ctx, "CREATE TABLE kept (a int)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, s.URL("postgres")); err == nil {
		t.Fatal("connected to a stopped server")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if n := query(t, s.URL("postgres")); n != 1 {
		t.Fatalf("after restart: %d tables, want 1", n)
	}
}
