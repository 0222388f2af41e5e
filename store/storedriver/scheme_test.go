package storedriver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// A scheme registered once is found by each of its names, whatever the
// case, listed once in rank order, and a second registration of a name
// panics.
func TestRegisterScheme(t *testing.T) {
	open := func(context.Context, string, bool) (store.Store, error) { return nil, storedriver.BadURL("test") }
	storedriver.Register(storedriver.Scheme{Names: []string{"zz-test", "zz-alias"}, Form: "zz-test://X", Rank: -1, Networked: true, Hint: "hint", Open: open})
	storedriver.Register(storedriver.Scheme{Names: []string{"zz-last"}, Form: "zz-last:", Rank: 1 << 30, Open: open})
	for _, u := range []string{"zz-test://h", "ZZ-Alias:x"} {
		s, ok := storedriver.LookupScheme(u)
		if !ok || s.Form != "zz-test://X" || !s.Networked || s.Hint != "hint" {
			t.Errorf("LookupScheme(%q) = %+v, %v", u, s, ok)
		}
	}
	if s, ok := storedriver.LookupScheme("zz-none://h"); ok {
		t.Errorf("LookupScheme of an unknown scheme = %+v", s)
	}
	all := storedriver.Schemes()
	if len(all) != 2 || all[0].Form != "zz-test://X" || all[len(all)-1].Form != "zz-last:" {
		t.Errorf("Schemes() = %+v, want zz-test first and zz-last last, each once", all)
	}
	if _, err := all[0].Open(t.Context(), "zz-test://h", false); !errors.As(err, new(*storedriver.URLError)) {
		t.Errorf("Open: %v, want a URLError", err)
	}
	for _, bad := range []storedriver.Scheme{
		{Names: []string{"zz-alias"}, Form: "x", Open: open},
		{Names: []string{"ZZ-upper"}, Form: "x", Open: open},
		{Names: []string{"zz-noform"}, Open: open},
		{Names: []string{"zz-noopen"}, Form: "x"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%+v) did not panic", bad)
				}
			}()
			storedriver.Register(bad)
		}()
	}
}
