package storedriver_test

import (
	"slices"
	"testing"

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
