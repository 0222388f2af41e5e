package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storetest"
)

// BenchmarkRawUpdate is the floor a renewal is measured against: one
// UPDATE of one column of a one-row table shaped like the election
// record, autocommit, in the store's own file on the store's writer
// connection (WAL, synchronous=FULL: an fsync per commit, as a renewal
// pays), the setting BenchmarkRenew runs with.
func BenchmarkRawUpdate(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "baton.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	update := rawTable(b, s)
	defer update.Close() // before the store's connection closes
	for b.Loop() {
		if _, err := update.ExecContext(ctx, time.Now().UnixNano(), "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenew is a leader's renewal in the setting of
// BenchmarkRawUpdate: a Swap at the record's version with the same values
// (name: an Elector's name; session: a session record, as a Group renews
// it whatever the number of names held through it).
func BenchmarkRenew(b *testing.B) {
	for _, kind := range []string{"name", "session"} {
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "baton.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
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

// rawTable makes, in s's file, a one-row table shaped like the election
// record, and returns the raw UPDATE of its one row's updated_ns,
// prepared on s's writer connection: the caller closes it before s.
func rawTable(b *testing.B, s *Store) *sql.Stmt {
	b.Helper()
	ctx := context.Background()
	c := s.writer.Load()
	if c == nil {
		b.Fatal("the store has no writer connection")
	}
	for _, stmt := range []string{
		`CREATE TABLE raw (
			name        TEXT PRIMARY KEY,
			holder      TEXT NOT NULL,
			incarnation TEXT NOT NULL,
			token       INTEGER NOT NULL,
			lease_ns    INTEGER NOT NULL,
			transfer    TEXT NOT NULL,
			version     INTEGER NOT NULL,
			updated_ns  INTEGER NOT NULL,
			session     TEXT NOT NULL DEFAULT ''
		) STRICT`,
		`INSERT INTO raw VALUES ('bench', 'n1', 'i1', 1, 15000000000, '', 1, 0, '')`,
	} {
		if _, err := c.ExecContext(ctx, stmt); err != nil {
			b.Fatal(err)
		}
	}
	update, err := c.PrepareContext(ctx, `UPDATE raw SET updated_ns = ? WHERE name = ?`)
	if err != nil {
		b.Fatal(err)
	}
	return update
}

// BenchmarkRenewVsRawUpdate runs BenchmarkRawUpdate's UPDATE and
// BenchmarkRenew's session renewal in turn on one store, each timed on
// its own, so that both see the same disk at the same moments (a shared
// machine's fsync times drift by 2x within a minute): raw-ns and
// renew-ns are the mean of each, renew/raw their ratio.
func BenchmarkRenewVsRawUpdate(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "baton.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	update := rawTable(b, s)
	defer update.Close() // before the store's connection closes
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: store.SessionPrefix + "n1/i1/1", Holder: "n1", Incarnation: "i1", Lease: 15 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	storetest.RenewVsRaw(b, s, rec, func(ctx context.Context, now time.Time) error {
		_, err := update.ExecContext(ctx, now.UnixNano(), "bench")
		return err
	})
}
