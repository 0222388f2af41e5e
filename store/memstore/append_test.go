package memstore_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// RunsAppend answers as Runs does, appended to the slice it is given,
// limit included; a reused slice keeps nothing of the last read.
func TestRunsAppendIsRuns(t *testing.T) {
	s := memstore.New()
	ctx := t.Context()
	if _, err := s.EnsureJob(ctx, store.Job{Name: "j", Schedule: "@every 1h"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"p1", "p2", "p3"} {
		if _, err := s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "j", Period: p, State: store.Done}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		after string
		limit int
	}{{"", 0}, {"p1", 0}, {"", 2}, {"p3", 0}} {
		want, err := s.Runs(ctx, "j", c.after, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		prev := []store.Run{{Period: "kept"}}
		got, err := s.RunsAppend(ctx, prev, "j", c.after, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want)+1 || got[0].Period != "kept" || !reflect.DeepEqual(got[1:], want) {
			t.Fatalf("after %q, limit %d: RunsAppend %+v, Runs %+v", c.after, c.limit, got, want)
		}
		again, err := s.RunsAppend(ctx, got[:0], "j", c.after, c.limit)
		if err != nil || !reflect.DeepEqual(again, want) {
			t.Fatalf("after %q, limit %d: a reused slice: %+v, %v; want %+v", c.after, c.limit, again, err, want)
		}
	}
	s.SetUnreachable("", true)
	if _, err := s.RunsAppend(ctx, nil, "j", "", 0); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("RunsAppend ignores the store's faults: %v", err)
	}
}

// SwapManyAppend writes as SwapMany does, its results appended to the
// slice it is given.
func TestSwapManyAppendIsSwapMany(t *testing.T) {
	ctx := t.Context()
	swaps := func(s *memstore.Store) []store.Swap {
		a, _ := s.Get(ctx, "a")
		return []store.Swap{
			{Expect: a.Version, Record: store.Record{Name: "a", Holder: "n2", Incarnation: "2", Token: a.Token + 1, Lease: 1e9}},
			{Expect: 99, Record: store.Record{Name: "b", Holder: "n2", Incarnation: "2", Token: 1, Lease: 1e9}}, // conflicts
		}
	}
	var results [2][]store.SwapResult
	for i := range results {
		s := memstore.New()
		if _, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "1", Token: 1, Lease: 1e9}}); err != nil {
			t.Fatal(err)
		}
		var err error
		if i == 0 {
			results[i], err = s.SwapMany(ctx, swaps(s))
		} else {
			results[i], err = s.SwapManyAppend(ctx, []store.SwapResult{{Err: errors.New("kept")}}, swaps(s))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want, got := results[0], results[1]
	if len(got) != 3 || got[0].Err == nil || got[0].Err.Error() != "kept" {
		t.Fatalf("SwapManyAppend did not append to dst: %+v", got)
	}
	for i := range want {
		w, g := want[i], got[i+1]
		if w.Record.Name != g.Record.Name || w.Record.Token != g.Record.Token || w.Record.Version != g.Record.Version || errors.Is(w.Err, store.ErrConflict) != errors.Is(g.Err, store.ErrConflict) {
			t.Fatalf("result %d: SwapManyAppend %+v, SwapMany %+v", i, g, w)
		}
	}
	if want[0].Err != nil || !errors.Is(want[1].Err, store.ErrConflict) {
		t.Fatalf("the batch did not write as expected: %+v", want)
	}
}
