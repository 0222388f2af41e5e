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
