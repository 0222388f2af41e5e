package memstore_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// GetManyInto answers as GetMany does, each answer where it is told, over
// whatever was there before.
func TestGetManyIntoIsGetMany(t *testing.T) {
	s := memstore.New()
	ctx := t.Context()
	for _, name := range []string{"a", "b"} {
		if _, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: name, Holder: "n1", Incarnation: "1", Token: 1, Lease: 1e9}}); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"b", "missing", "a"}
	want, err := s.GetMany(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	// Places that hold an earlier read, and in another order.
	got := make([]store.GetResult, 4)
	for i := range got {
		got[i] = store.GetResult{Record: store.Record{Name: "stale", Holder: "x", Token: 9}, Err: errors.New("stale")}
	}
	at := func(i int) (*store.Record, *error) { return &got[3-i].Record, &got[3-i].Err }
	if err := s.GetManyInto(ctx, names, at); err != nil {
		t.Fatal(err)
	}
	if got[0].Record.Name != "stale" {
		t.Fatalf("GetManyInto wrote where it was not told: %+v", got[0])
	}
	for i := range want {
		w, g := want[i], got[3-i]
		if !reflect.DeepEqual(w.Record, g.Record) || errors.Is(w.Err, store.ErrNotFound) != errors.Is(g.Err, store.ErrNotFound) || (w.Err == nil) != (g.Err == nil) {
			t.Fatalf("result %d: GetManyInto %+v, GetMany %+v", i, g, w)
		}
	}
	if !errors.Is(got[2].Err, store.ErrNotFound) || got[2].Record != (store.Record{}) || got[3].Record.Name != "b" || got[1].Record.Name != "a" {
		t.Fatalf("GetManyInto answers in the wrong places, or keeps an earlier read: %+v", got)
	}
	s.SetUnreachable("", true)
	if err := s.GetManyInto(ctx, names, at); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("GetManyInto ignores the store's faults: %v", err)
	}
}

// TestNotFoundMessage holds a missing record's error, formatted when it is
// read, to what fmt.Errorf made of it.
func TestNotFoundMessage(t *testing.T) {
	s := memstore.New()
	_, err := s.Get(t.Context(), `a "b"`)
	got, gerr := s.GetMany(t.Context(), []string{`a "b"`})
	if gerr != nil {
		t.Fatal(gerr)
	}
	want := fmt.Errorf("election %q: %w", `a "b"`, store.ErrNotFound)
	for _, err := range []error{err, got[0].Err} {
		if err == nil || err.Error() != want.Error() || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("got %v, want %v", err, want)
		}
	}
}
