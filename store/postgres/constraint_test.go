package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/store"
)

// A write refused by a constraint baton did not make (another program
// added it to baton's tables) will not heal: it is store.ErrCorrupt, a
// permanent error, for a swap and for a ledger write, and nothing is
// written.
func TestForeignConstraintPermanent(t *testing.T) {
	url := pgtest.Start(t)
	s := open(t, url)
	defer s.Close()
	ctx := testCtx(t)
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	superExec(t, url, `ALTER TABLE baton.election ADD CONSTRAINT small_tokens CHECK (token < 2);
		ALTER TABLE baton.runs ADD CONSTRAINT no_failures CHECK (state <> 'failed')`)
	_, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: store.Record{Name: "a", Holder: "n2", Incarnation: "i2", Token: 2}, Event: store.TakenOver})
	if !store.Permanent(err) || !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "constraint") {
		t.Fatalf("a swap a foreign constraint refuses: %v, want a permanent ErrCorrupt naming the constraint", err)
	}
	_, err = s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "a", Period: "2026-01-01T00:00:00Z", State: store.Failed, Token: 1, Holder: "n1"}})
	if !store.Permanent(err) || !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("a run write a foreign constraint refuses: %v, want a permanent ErrCorrupt", err)
	}
	if got, err := s.Get(ctx, "a"); err != nil || got.Version != rec.Version {
		t.Fatalf("after the refused swap: %+v, %v; want %+v", got, err, rec)
	}
}
