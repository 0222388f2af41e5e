package fence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/fence"
)

// HoldTx: passes for the committed token, refuses a newer one's
// predecessor, and keeps every CheckTx of the database waiting until its
// transaction ends (SQLite: the write lock).
func TestHoldTx(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	if err := writeInvoice(ctx, db, "billing", 5, "raise"); err != nil {
		t.Fatal(err)
	}
	hold, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fence.HoldTx(ctx, hold, fence.SQLite, "billing", 5); err != nil {
		t.Fatalf("hold at the committed token: %v", err)
	}
	raised := make(chan error, 1)
	go func() { raised <- writeInvoice(ctx, db, "billing", 6, "newer") }()
	select {
	case err := <-raised:
		t.Fatalf("token 6 was checked while token 5 was held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := hold.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-raised; err != nil {
		t.Fatalf("token 6 after the hold ended: %v", err)
	}
	if got := storedToken(t, db, "billing"); got != 6 {
		t.Errorf("stored token %d, want 6 (the hold changed nothing)", got)
	}

	for _, c := range []struct {
		name  string
		token uint64
		is    error
		want  string
	}{
		{"billing", 5, fence.ErrStaleToken, "token 5, highest 6"},
		{"billing", 0, fence.ErrInvalidToken, "token 0"},
		{"billing", 1 << 63, fence.ErrInvalidToken, "above"},
		{"", 5, fence.ErrNoFence, "empty name"},
		{"payroll", 5, nil, "no token is stored"},
	} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = fence.HoldTx(ctx, tx, fence.SQLite, c.name, c.token)
		tx.Rollback()
		if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("HoldTx(%q, %d) = %v, want an error wrapping %v containing %q", c.name, c.token, err, c.is, c.want)
		}
	}
	if err := fence.HoldTx(ctx, nil, fence.SQLite, "billing", 6); err == nil {
		t.Error("nil transaction accepted")
	}
}
