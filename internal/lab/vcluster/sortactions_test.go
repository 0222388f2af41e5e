package vcluster

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// TestSortActionsIsStable holds SortActions, which sorts a step's few
// actions by insertion and skips those already in order, to the stable
// sort by name it stands for, on random lists of every length up to
// past its cut-over to the library sort.
func TestSortActionsIsStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	names := []string{"", "a", "b", "job", "name-1", "name-10", "name-2"}
	mk := func(i int) election.Action {
		name := names[rng.IntN(len(names))]
		switch rng.IntN(5) {
		case 0:
			return election.Get{Name: name}
		case 1:
			return election.Swap{Swap: store.Swap{Expect: int64(i), Record: store.Record{Name: name}}}
		case 2:
			return election.Extended{Name: name}
		case 3:
			return election.Lost{Name: name, Cause: election.ErrResigned}
		}
		return election.Idle{}
	}
	for n := range 24 {
		for range 200 {
			acts := make([]election.Action, n)
			for i := range acts {
				acts[i] = mk(i)
			}
			want := slices.Clone(acts)
			slices.SortStableFunc(want, func(a, b election.Action) int { return strings.Compare(actionName(a), actionName(b)) })
			SortActions(acts)
			for i := range acts {
				if acts[i] != want[i] {
					t.Fatalf("%d actions: at %d got %#v, want %#v", n, i, acts[i], want[i])
				}
			}
		}
	}
}

// TestSortNamesSorts holds sortNames, which sorts a step's read names by
// insertion on their first eight bytes, to the library sort, on random
// lists of names that share prefixes of every length up to past eight.
func TestSortNamesSorts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	names := []string{"", "a", "billing", "shard-1", "shard-10", "shard-100", "shard-2", "@session/n-1/n-1.1/1", "@session/n-1/n-1.1/2", "@session/n-10/n-10.1/1", "shard-1\x00"}
	for n := range 24 {
		for range 200 {
			got := make([]string, n)
			for i := range got {
				got[i] = names[rng.IntN(len(names))]
			}
			want := slices.Clone(got)
			slices.Sort(want)
			sortNames(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%d names: got %q, want %q", n, got, want)
			}
		}
	}
}
