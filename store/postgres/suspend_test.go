package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

// A claim that meets a suspension in flight (SuspendJob's transaction
// holds the job's row for update) waits for it and, once it commits, is
// refused: it does not decide on the job as it was before.
func TestClaimWaitsForSuspension(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	s := open(t, url)
	defer s.Close()
	ctx := testCtx(t)
	if _, err := s.EnsureJob(ctx, store.Job{Name: "job", Schedule: "every 1h"}); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM baton.jobs WHERE name = 'job' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		_, err := s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "job", Period: "2026-01-01T00:00:00Z", State: store.Running, Token: 1, Holder: "n1", Attempt: 1}})
		res <- err
	}()
	// Wait until the claim waits for a lock (or comes back: it must not),
	// polled on a connection of its own: inside tx, pg_stat_activity
	// would be the snapshot of its first use.
	watch, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	for waiting := 0; waiting == 0; {
		select {
		case err := <-res:
			t.Fatalf("the claim came back (%v) while a suspension held the job's row", err)
		case <-ctx.Done():
			t.Fatal("the claim never waited for the job's row")
		case <-time.After(10 * time.Millisecond):
		}
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE baton.jobs SET suspended_at = now(), suspended_by = 'ops@h1' WHERE name = 'job'`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, store.ErrSuspended) {
		t.Fatalf("the claim after the suspension committed: %v, want ErrSuspended", err)
	}
	if _, err := s.GetRun(ctx, "job", "2026-01-01T00:00:00Z"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused claim wrote its row: %v", err)
	}
}
