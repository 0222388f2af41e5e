package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

// next returns the names of the next batch of feed, failing t if none
// comes within 10s.
func next(t *testing.T, feed <-chan []store.Change) []string {
	t.Helper()
	select {
	case batch, ok := <-feed:
		if !ok {
			t.Fatal("change feed closed")
		}
		names := make([]string, len(batch))
		for i, c := range batch {
			names[i] = c.Name
		}
		slices.Sort(names)
		return names
	case <-time.After(10 * time.Second):
		t.Fatal("no batch on the change feed within 10s")
	}
	return nil
}

// waitFor reads feed until every name in want came.
func waitFor(t *testing.T, feed <-chan []store.Change, want ...string) {
	t.Helper()
	left := map[string]bool{}
	for _, n := range want {
		left[n] = true
	}
	for len(left) > 0 {
		for _, n := range next(t, feed) {
			delete(left, n)
		}
	}
}

// swapInTx runs the store's swap function for rec in tx, as Swap does in
// its own transaction, so that a test controls when it commits.
func swapInTx(t *testing.T, tx pgx.Tx, expect int64, rec store.Record) {
	t.Helper()
	var applied bool
	err := tx.QueryRow(testCtx(t), `SELECT o_applied FROM baton.swap_many((SELECT value FROM baton.meta WHERE key = 'store_id'),
		ARRAY[1], ARRAY[$1::text], ARRAY[$2::bigint], ARRAY[$3::text], ARRAY[$4::text], ARRAY[$5::bigint], ARRAY[$6::bigint],
		ARRAY[''], ARRAY[''], ARRAY[''])`,
		rec.Name, expect, rec.Holder, rec.Incarnation, int64(rec.Token), int64(rec.Lease)).Scan(&applied)
	if err != nil || !applied {
		t.Fatalf("swap of %s in a transaction: %v, %v", rec.Name, applied, err)
	}
}

func begin(t *testing.T, url string) pgx.Tx {
	t.Helper()
	c, err := pgx.Connect(testCtx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	tx, err := c.Begin(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// Transactions that commit in another order than they wrote are all
// named: one in progress when the feed read its position, and an older
// one committing after a newer one (which a feed ordered by a sequence
// number drawn at write time would miss).
func TestChangeFeedOutOfOrderCommits(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	s := open(t, url)
	defer s.Close()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()

	// In progress while the feed starts.
	early := begin(t, url)
	swapInTx(t, early, 0, acquire("early", "n1", 1))
	feed := s.WatchChanges(ctx)
	if err := early.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, feed, "early")

	// older writes first and commits last.
	older, newer := begin(t, url), begin(t, url)
	swapInTx(t, older, 0, acquire("older", "n1", 1))
	swapInTx(t, newer, 0, acquire("newer", "n1", 1))
	if err := newer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, feed, "newer")
	if err := older.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, feed, "older")

	// A rolled back write is not named, and the next change comes alone.
	gone := begin(t, url)
	swapInTx(t, gone, 0, acquire("gone", "n1", 1))
	if err := gone.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Swap(ctx, store.Swap{Record: acquire("after", "n1", 1)}); err != nil {
		t.Fatal(err)
	}
	for {
		batch := next(t, feed)
		if slices.Contains(batch, "gone") {
			t.Fatalf("the feed named a rolled back write: %v", batch)
		}
		if slices.Contains(batch, "after") {
			break
		}
	}
	cancel()
	for range feed {
	}
}

// A batch of swaps sends one notification, and a refused swap none.
func TestSwapManyNotifiesOnce(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	s := open(t, url)
	defer s.Close()
	ctx := testCtx(t)
	l, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if _, err := l.Exec(ctx, `LISTEN baton_baton`); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n := 0
		for {
			wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err := l.WaitForNotification(wctx)
			cancel()
			if err != nil {
				return n
			}
			n++
		}
	}
	var swaps []store.Swap
	for i := range 200 {
		swaps = append(swaps, store.Swap{Record: acquire(fmt.Sprintf("n%03d", i), "n1", 1), Event: store.Acquired})
	}
	if _, err := s.SwapMany(ctx, swaps); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("a batch of 200 swaps sent %d notifications, want 1", n)
	}
	if _, err := s.SwapMany(ctx, swaps[:10]); err != nil { // all conflicts
		t.Fatal(err)
	}
	if _, err := s.Swap(ctx, swaps[0]); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a repeated create: %v", err)
	}
	if n := count(); n != 0 {
		t.Fatalf("refused swaps sent %d notifications, want 0", n)
	}
}

// A batch holds swaps the database cannot take (a NUL byte), duplicates
// and names out of order: each gets its own result, in the given order.
func TestSwapManyMixed(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	s := open(t, pgtest.Start(t))
	defer s.Close()
	ctx := testCtx(t)
	bad := acquire("nul", "n1", 1)
	bad.Holder = "n\x001"
	res, err := s.SwapMany(ctx, []store.Swap{
		{Record: acquire("z", "n1", 1), Event: store.Acquired},
		{Record: bad},
		{Record: acquire("a", "n1", 1), Event: store.Acquired},
		{Record: acquire("z", "n2", 1), Event: store.Acquired}, // a second create: conflict
		{Record: acquire("bad\x00name", "n1", 1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[0].Record.Holder != "n1" || res[2].Err != nil || res[2].Record.Name != "a" ||
		!errors.Is(res[1].Err, store.ErrInvalid) || !errors.Is(res[3].Err, store.ErrConflict) || !errors.Is(res[4].Err, store.ErrInvalid) {
		t.Fatalf("results: %+v", res)
	}
	if got, err := s.Get(ctx, "z"); err != nil || got.Holder != "n1" || got.Version != res[0].Record.Version {
		t.Fatalf("z after the batch: %+v, %v", got, err)
	}
}

// Swaps of two batches that name the same records in opposite orders, at
// the same time, never deadlock: each batch locks in name order.
func TestSwapManyConcurrentBatches(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	a, b := open(t, url), open(t, url)
	defer a.Close()
	defer b.Close()
	ctx := testCtx(t)
	const n = 300
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("r%03d", i)
	}
	for round := range 5 {
		mk := func(node string, rev bool) []store.Swap {
			sw := make([]store.Swap, n)
			for i, name := range names {
				if rev {
					name = names[n-1-i]
				}
				sw[i] = store.Swap{Record: acquire(name+fmt.Sprint(round), node, 1), Event: store.Acquired}
			}
			return sw
		}
		errs := make(chan error, 2)
		won := make(chan int, 2)
		for _, c := range []struct {
			s    store.Store
			node string
			rev  bool
		}{{a, "n1", false}, {b, "n2", true}} {
			go func() {
				res, err := c.s.SwapMany(ctx, mk(c.node, c.rev))
				k := 0
				for _, r := range res {
					if r.Err == nil {
						k++
					}
				}
				won <- k
				errs <- err
			}()
		}
		total := 0
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			total += <-won
		}
		if total != n {
			t.Fatalf("round %d: %d creates applied, want %d (each name once)", round, total, n)
		}
	}
}

// A notification any session of the database sends on the store's
// channel, naming a record and a version, is passed on as a change (a
// reader reads again) but does not raise how far the feed says it has
// reported (Change.Through): only the feed's reads do.
func TestForgedNotificationClaimsNothing(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	s := open(t, url)
	defer s.Close()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	feed := s.WatchChanges(ctx)
	// A release by swap_many: its notification has no payload, and the
	// read after it sets Through.
	res, err := s.SwapMany(ctx, []store.Swap{{Record: acquire("billing", "n1", 1), Event: store.Acquired}})
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	real := res[0].Record.Version
	var through int64
	for through < real {
		select {
		case batch := <-feed:
			through = max(through, batch[len(batch)-1].Through)
		case <-time.After(10 * time.Second):
			t.Fatalf("no batch with Through %d within 10s", real)
		}
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	const forged = 1 << 40
	if _, err := c.Exec(ctx, `SELECT pg_notify('baton_baton', $1)`, fmt.Sprintf("write %d reports", int64(forged))); err != nil {
		t.Fatal(err)
	}
	select {
	case batch := <-feed:
		if len(batch) != 1 || batch[0].Name != "reports" || batch[0].Version != forged {
			t.Fatalf("after the forged notification: %+v, want reports at %d", batch, int64(forged))
		}
		if got := batch[0].Through; got >= forged || got < real {
			t.Fatalf("Through %d after a forged notification of version %d; want %d (what the reads found)", got, int64(forged), real)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the forged notification was not passed on within 10s")
	}
}
