package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/batonhq/baton/store"
)

func sessions(recs ...store.Record) func(string) (store.Record, bool) {
	m := map[string]store.Record{}
	for _, r := range recs {
		m[r.Name] = r
	}
	return func(n string) (store.Record, bool) { r, ok := m[n]; return r, ok }
}

func TestResolvePassesOn(t *testing.T) {
	s1, s2 := store.SessionPrefix+"a/1/1", store.SessionPrefix+"b/1/1"
	name := store.Record{Name: "x", Holder: "a", Incarnation: "1", Token: 5, Session: s1, Version: 3}
	dead := store.Record{Name: s1, Successor: s2, SuccessorHolder: "b", SuccessorIncarnation: "1", Version: 9}
	var passed []store.Record
	got, err := store.Resolve(name, sessions(dead, store.Record{Name: s2, Holder: "b", Incarnation: "1", Version: 10}),
		func(now, d store.Record) { passed = append(passed, now) })
	if err != nil || got.Holder != "b" || got.Session != s2 || got.Token != 6 || got.Version != 9 || got.Via != s1 || len(passed) != 1 {
		t.Fatalf("Resolve = %+v, %v (passed %d)", got, err, len(passed))
	}
	// Not through a session, or through a live one, or free: as it is.
	for _, r := range []store.Record{
		{Name: "x", Holder: "a", Token: 5},
		{Name: "x", Token: 5},
		{Name: "x", Holder: "b", Token: 5, Session: s2},
	} {
		if got, err := store.Resolve(r, sessions(dead, store.Record{Name: s2, Holder: "b"}), nil); err != nil || got != r {
			t.Fatalf("Resolve(%+v) = %+v, %v", r, got, err)
		}
	}
}

func TestResolveRefusesWhatNoStoreWrites(t *testing.T) {
	s1, s2 := store.SessionPrefix+"a/1/1", store.SessionPrefix+"b/1/1"
	cycle := sessions(store.Record{Name: s1, Successor: s2}, store.Record{Name: s2, Successor: s1})
	if _, err := store.Resolve(store.Record{Name: "x", Holder: "a", Session: s1}, cycle, nil); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a cycle: %v, want ErrInvalid", err)
	}
	at := sessions(store.Record{Name: s1, Successor: s2}, store.Record{Name: s2, Holder: "b"})
	if _, err := store.Resolve(store.Record{Name: "x", Holder: "a", Session: s1, Token: store.MaxToken}, at, nil); !errors.Is(err, store.ErrTokenLimit) {
		t.Fatalf("a token at the limit: %v, want ErrTokenLimit", err)
	}
}

// FuzzResolve: whatever the session records say, Resolve ends, raises the
// token by one per session passed, never lowers the version, and either
// returns a record held through a session that is not passed on, or an
// error wrapping ErrInvalid.
func FuzzResolve(f *testing.F) {
	f.Add([]byte{1, 2, 0}, uint64(5), int64(3))
	f.Add([]byte{1, 2, 1}, uint64(store.MaxToken-1), int64(0))
	f.Fuzz(func(t *testing.T, links []byte, token uint64, version int64) {
		if len(links) > 200 {
			links = links[:200]
		}
		name := func(i byte) string { return fmt.Sprintf("%ss/%d", store.SessionPrefix, i%16) }
		m := map[string]store.Record{}
		for i, l := range links {
			r := store.Record{Name: name(byte(i)), Version: int64(l)}
			if l%3 == 0 {
				r.Holder = "h"
			} else {
				r.Successor = name(l)
			}
			m[r.Name] = r
		}
		rec := store.Record{Name: "x", Holder: "a", Session: name(0), Token: token, Version: version}
		hops := 0
		got, err := store.Resolve(rec, func(n string) (store.Record, bool) { r, ok := m[n]; return r, ok },
			func(store.Record, store.Record) { hops++ })
		if err != nil {
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if got.Token != token+uint64(hops) || got.Version < version || hops > store.MaxSuccession {
			t.Fatalf("Resolve = %+v after %d hops, from token %d version %d", got, hops, token, version)
		}
		if s, ok := m[got.Session]; ok && s.Free() && s.Successor != "" {
			t.Fatalf("Resolve stopped at %s, which is passed on", got.Session)
		}
	})
}
