package baton_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// unorderedStore is memstore declaring every capability but an ordered
// feed.
type unorderedStore struct{ *memstore.Store }

func (unorderedStore) Capabilities() store.Capabilities {
	return store.CapStoreTime | store.CapSuccession
}

// liarStore declares memstore's capabilities and implements none (a
// wrapper that embeds store.Store and forgot the optional methods).
type liarStore struct{ store.Store }

// A Group on a store that lacks a capability it would use says so in one
// log line naming the capability and what it costs; on a store that has
// them all, or when the Group would not use it, it says nothing.
func TestGroupSaysWhatTheStoreLacks(t *testing.T) {
	for _, tc := range []struct {
		what string
		st   store.Store
		opts []baton.Option
		want string // "" for no line
	}{
		{"memstore", memstore.New(), nil, ""},
		{"no successions", storeWithout{memstore.New()}, nil, "store lacks successions: a Group takes a dead process's names over one at a time"},
		{"no successions, WithoutSuccession", storeWithout{memstore.New()}, []baton.Option{baton.WithoutSuccession()}, ""},
		{"no successions, balanced", storeWithout{memstore.New()}, []baton.Option{baton.WithBalance()}, ""},
		{"no ordered feed", unorderedStore{memstore.New()}, nil, "store lacks ordered-feed: a succession's names are read again"},
		{"declared, not implemented", liarStore{memstore.New()}, nil, "store declares successions but does not implement it"},
	} {
		var buf bytes.Buffer
		opts := append([]baton.Option{baton.WithLogger(slog.New(slog.NewTextHandler(&buf, nil)))}, tc.opts...)
		g, err := baton.NewGroup(tc.st, opts...)
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		g.Close(context.Background())
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if strings.Contains(l, "store lacks") || strings.Contains(l, "store declares") {
				lines = append(lines, l)
			}
		}
		switch {
		case tc.want == "" && len(lines) != 0:
			t.Errorf("%s: logged %q, want nothing", tc.what, lines)
		case tc.want != "" && (len(lines) != 1 || !strings.Contains(lines[0], tc.want) || !strings.Contains(lines[0], "level=WARN")):
			t.Errorf("%s: logged %q, want one warning containing %q", tc.what, lines, tc.want)
		}
	}
}
