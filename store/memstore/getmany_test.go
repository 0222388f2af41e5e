package memstore_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// GetManyAppend answers as GetMany does, appended to the slice it is
// given, and reusing a slice leaves nothing of the last read in it.
func TestGetManyAppendIsGetMany(t *testing.T) {
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
	prev := []store.GetResult{{Record: store.Record{Name: "kept"}}}
	got, err := s.GetManyAppend(ctx, prev, names)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Record.Name != "kept" {
		t.Fatalf("GetManyAppend did not append to dst: %+v", got)
	}
	for i := range want {
		w, g := want[i], got[i+1]
		if !reflect.DeepEqual(w.Record, g.Record) || errors.Is(w.Err, store.ErrNotFound) != errors.Is(g.Err, store.ErrNotFound) {
			t.Fatalf("result %d: GetManyAppend %+v, GetMany %+v", i, g, w)
		}
	}
	if !errors.Is(got[2].Err, store.ErrNotFound) || got[1].Record.Name != "b" || got[3].Record.Name != "a" {
		t.Fatalf("GetManyAppend answers out of order or wrong: %+v", got)
	}
	again, err := s.GetManyAppend(ctx, got[:0], []string{"missing", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 2 || !errors.Is(again[0].Err, store.ErrNotFound) || again[0].Record != (store.Record{}) || again[1].Err != nil || again[1].Record.Name != "a" {
		t.Fatalf("a reused slice keeps an earlier read: %+v", again)
	}
	s.SetUnreachable("", true)
	if _, err := s.GetManyAppend(ctx, nil, names); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("GetManyAppend ignores the store's faults: %v", err)
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
