package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// TestConnectionSettings checks that every pooled connection runs with the
// settings the package doc promises, not only the first one.
func TestConnectionSettings(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "baton.db"), WithBusyTimeout(1234*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Hold several connections at once so that the pool opens new ones.
	for i := 0; i < 3; i++ {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var mode string
		var sync, busy int
		if err := conn.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || sync != 2 || busy != 1234 {
			t.Errorf("connection %d: journal_mode %q, synchronous %d, busy_timeout %d; want wal, 2 (FULL), 1234", i, mode, sync, busy)
		}
	}
}

// TestWriterConnection: with the default pool, the Store's writes run on a
// connection of their own, with its settings; with a pool of 2 there is
// none and writes take a pooled connection; a writer connection closed
// under the Store is given up for the pool.
func TestWriterConnection(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "baton.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := s.writer.Load()
	if w == nil {
		t.Fatal("no writer connection with the default pool")
	}
	for _, c := range []struct {
		pragma string
		want   int64
	}{
		{"cache_size", -writerCacheKiB},
		{"temp_store", 2}, // MEMORY
		{"wal_autocheckpoint", walCheckpointPages},
		{"journal_size_limit", walLimitBytes},
	} {
		var got int64
		if err := w.QueryRowContext(ctx, `PRAGMA `+c.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("writer connection: PRAGMA %s = %d, want %d", c.pragma, got, c.want)
		}
	}
	// data_version counts the commits of other connections: the writer's
	// does not move at a Swap, a pooled connection's does.
	dataVersion := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) int64 {
		var v int64
		if err := q.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	pooled, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Close()
	wv, pv := dataVersion(w), dataVersion(pooled)
	if _, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "w1", Holder: "n1", Incarnation: "i1", Token: 1}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	if dataVersion(w) != wv || dataVersion(pooled) == pv {
		t.Fatal("the Swap did not commit on the writer connection")
	}
	// A writer connection that is gone: writes go on through the pool.
	w.Close()
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "w2", Holder: "n1", Incarnation: "i1", Token: 1}, Event: store.Acquired})
	if err != nil {
		t.Fatalf("Swap after the writer connection closed: %v", err)
	}
	if s.writer.Load() != nil {
		t.Fatal("the closed writer connection is still in use")
	}
	if got, err := s.Get(ctx, "w2"); err != nil || got != rec {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, rec)
	}

	small, err := Open(ctx, filepath.Join(t.TempDir(), "small.db"), WithMaxConns(2))
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if small.writer.Load() != nil {
		t.Fatal("a pool of 2 has a writer connection: reads would wait for the poller's")
	}
}
