package memstore_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

func TestUnreachableNodeFailsOthersDoNot(t *testing.T) {
	s := memstore.New()
	a, b := s.Client("a"), s.Client("b")
	s.SetUnreachable("a", true)
	if _, err := a.Swap(t.Context(), store.Swap{Record: store.Record{Name: "x", Holder: "a", Incarnation: "1", Token: 1}}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("cut-off node's swap: %v", err)
	}
	if _, err := b.Get(t.Context(), "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the cut-off node's swap was applied, or b is affected: %v", err)
	}
	s.SetUnreachable("a", false)
	if _, err := a.Swap(t.Context(), store.Swap{Record: store.Record{Name: "x", Holder: "a", Incarnation: "1", Token: 1}}); err != nil {
		t.Fatalf("reconnected node: %v", err)
	}
}

func TestDelayHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New()
		s.SetDelay("slow", time.Second)
		c := s.Client("slow")
		start := time.Now()
		if _, err := c.Get(t.Context(), "x"); !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("a delayed call took %v, want the delay both ways (2s)", d)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		if _, err := c.Get(ctx, "x"); !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("delayed call past its deadline: %v", err)
		}
	})
}
