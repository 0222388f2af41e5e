package storedriver_test

import (
	"slices"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

func TestChainInto(t *testing.T) {
	// a -> c, b -> c, c -> d; e -> f; a cycle x -> y -> x.
	successors := map[string]string{"a": "c", "b": "c", "c": "d", "e": "f", "x": "y", "y": "x"}
	for _, tc := range []struct {
		session string
		want    []string
	}{
		{"d", []string{"d", "c", "a", "b"}},
		{"c", []string{"c", "a", "b"}},
		{"a", []string{"a"}},
		{"f", []string{"f", "e"}},
		{"x", []string{"x", "y"}},
		{"nobody", []string{"nobody"}},
	} {
		if got := storedriver.ChainInto(tc.session, successors); !slices.Equal(got, tc.want) {
			t.Errorf("ChainInto(%s) = %v, want %v", tc.session, got, tc.want)
		}
	}
}

// SuccessorFault passes what a succession writes and names each field
// combination no baton write makes.
func TestSuccessorFault(t *testing.T) {
	dead := store.Record{Name: "@session/a/1/1", Successor: "@session/b/1/1", SuccessorHolder: "b", SuccessorIncarnation: "1"}
	ok := []store.Record{{Name: "billing", Holder: "a"}, {Name: "@session/a/1/1", Holder: "a"}, dead}
	for _, r := range ok {
		if f := storedriver.SuccessorFault(r); f != "" {
			t.Errorf("%+v: %s", r, f)
		}
	}
	bad := map[string]store.Record{
		"holder without successor": {Name: "@session/a/1/1", SuccessorHolder: "b"},
		"on a name":                {Name: "billing", Successor: "@session/b/1/1", SuccessorHolder: "b"},
		"naming a name":            {Name: "@session/a/1/1", Successor: "billing", SuccessorHolder: "b"},
		"itself":                   {Name: "@session/a/1/1", Successor: "@session/a/1/1", SuccessorHolder: "a"},
		"held":                     {Name: "@session/a/1/1", Holder: "a", Successor: "@session/b/1/1", SuccessorHolder: "b"},
		"without its holder":       {Name: "@session/a/1/1", Successor: "@session/b/1/1"},
	}
	for what, r := range bad {
		if storedriver.SuccessorFault(r) == "" {
			t.Errorf("%s: %+v passes", what, r)
		}
	}
}
