package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/electortest"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/postgres"
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

// newSession writes the session record of node and returns it.
func newSession(b *testing.B, s *postgres.Store, node string) store.Record {
	b.Helper()
	rec, err := s.Swap(context.Background(), store.Swap{Record: store.Record{
		Name: store.SessionPrefix + node + "/i1/1", Holder: node, Incarnation: "i1", Lease: 15 * time.Second,
	}})
	if err != nil {
		b.Fatal(err)
	}
	return rec
}

// BenchmarkChangeFeed measures one commit seen through another handle's
// change feed, with 100 or 10,000 names stored: from the Swap's call until
// the feed names the record. The swap sets or clears the record's
// transfer request (a renewal is not on the feed).
func BenchmarkChangeFeed(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("feed/names=%d", n), func(b *testing.B) {
			url := pgtest.Start(b)
			w, s := open(b, url), open(b, url)
			defer w.Close()
			defer s.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var names []string
			for _, r := range storetest.HoldMany(b, s, newSession(b, s, "n1"), n) {
				names = append(names, r.Name)
			}
			feed := w.WatchChanges(ctx)
			rec, err := s.Get(ctx, names[n/2])
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				next := rec
				next.Transfer = map[string]string{"": "n2"}[rec.Transfer]
				rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: next})
				if err != nil {
					b.Fatal(err)
				}
				for seen := false; !seen; {
					batch, ok := <-feed
					if !ok {
						b.Fatal("feed closed")
					}
					seen = slices.ContainsFunc(batch, func(c store.Change) bool { return c.Name == rec.Name })
				}
			}
		})
	}
}

// BenchmarkRawUpdate is the floor a renewal is measured against: one
// UPDATE of one column of a one-row table shaped like the election
// record, through a pgx pool, autocommit, on the durable server (fsync,
// synchronous commits and full page writes on; pgtest.StartDurable), the
// server BenchmarkRenew runs on.
func BenchmarkRawUpdate(b *testing.B) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.StartDurable(b))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	rawTable(b, pool)
	for b.Loop() {
		if _, err := pool.Exec(ctx, `UPDATE raw SET updated = $1 WHERE name = $2`, time.Now(), "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenew is a leader's renewal on the durable server
// BenchmarkRawUpdate runs on: a Swap at the record's version with the
// same values (name: an Elector's name; session: a session record, as a
// Group renews it whatever the number of names held through it).
func BenchmarkRenew(b *testing.B) {
	for _, kind := range []string{"name", "session"} {
		b.Run(kind, func(b *testing.B) {
			s := open(b, pgtest.StartDurable(b))
			defer s.Close()
			ctx := context.Background()
			name := "bench"
			if kind == "session" {
				name = store.SessionPrefix + "n1/i1/1"
			}
			rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: name, Holder: "n1", Incarnation: "i1", Token: 1, Lease: 15 * time.Second}})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRenewVsRawUpdate runs BenchmarkRawUpdate's UPDATE and
// BenchmarkRenew's session renewal in turn, in one database of the
// durable server, each timed on its own, so that both see the same server
// and disk at the same moments: raw-ns and renew-ns are the mean of each,
// renew/raw their ratio.
func BenchmarkRenewVsRawUpdate(b *testing.B) {
	ctx := context.Background()
	url := pgtest.StartDurable(b)
	s := open(b, url)
	defer s.Close()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	rawTable(b, pool)
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: store.SessionPrefix + "n1/i1/1", Holder: "n1", Incarnation: "i1", Lease: 15 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	storetest.RenewVsRaw(b, s, rec, func(ctx context.Context, now time.Time) error {
		_, err := pool.Exec(ctx, `UPDATE raw SET updated = $1 WHERE name = $2`, now, "bench")
		return err
	})
}

// rawTable makes the one-row table of BenchmarkRawUpdate, shaped like the
// election record.
func rawTable(b *testing.B, pool *pgxpool.Pool) {
	b.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE raw (
			name        text COLLATE "C" PRIMARY KEY,
			holder      text NOT NULL,
			incarnation text NOT NULL,
			token       bigint NOT NULL,
			lease_ns    bigint NOT NULL,
			transfer    text NOT NULL,
			version     bigint NOT NULL,
			updated     timestamptz NOT NULL,
			session     text NOT NULL DEFAULT '')`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO raw VALUES ('bench', 'n1', 'i1', 1, 15000000000, '', 1, now(), '')`); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHandoverResign measures a graceful handover on the durable
// server (fsync and synchronous commits on), two Electors with stores of
// their own, lease 10s, poll 5s: from the leader's Resign call until the
// contender, woken by the release's notification (which names the record:
// no read of the change feed), holds the next Term. ns/op is one
// handover: the release (one transaction), the notification, the
// contender's read and its acquisition (one transaction); p50-ns is the
// median.
func BenchmarkHandoverResign(b *testing.B) {
	url := pgtest.StartDurable(b)
	var els [2]*baton.Elector
	for i := range els {
		st := open(b, url)
		b.Cleanup(func() { st.Close() })
		el, err := baton.New(st, "handover", baton.WithNode(fmt.Sprintf("n%d", i)), baton.WithLease(10*time.Second), baton.WithPoll(5*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { el.Close(context.Background()) })
		els[i] = el
	}
	electortest.BenchHandoverResign(b, els, func() time.Duration { return 50 * time.Millisecond })
}
