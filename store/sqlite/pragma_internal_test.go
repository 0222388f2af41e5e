package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"
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
