package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// session returns a session record of node, and a name record held
// through it.
func session(node string) store.Record {
	return store.Record{Name: store.SessionPrefix + node + "/i1/1", Holder: node, Incarnation: "i1", Lease: 3 * time.Second}
}

func heldThrough(name string, sess store.Record, token uint64) store.Record {
	return store.Record{Name: name, Holder: sess.Holder, Incarnation: sess.Incarnation, Session: sess.Name, Token: token, Lease: sess.Lease}
}

func testSessions(t *testing.T, open func() store.Store) {
	s := open()
	sess := mustSwap(t, s, store.Swap{Record: session("n1")})
	held := mustSwap(t, s, store.Swap{Record: heldThrough("tenant-1", sess, 1), Event: store.Acquired})
	got, err := s.Get(ctx(t), "tenant-1")
	if err != nil || got.Session != sess.Name || got.Holder != "n1" || got.Token != 1 {
		t.Fatalf("Get of a record held through a session = %+v, %v", got, err)
	}
	// A renewal of the session leaves the name's record alone.
	renewed := mustSwap(t, s, store.Swap{Expect: sess.Version, Record: sess})
	if got, _ := s.Get(ctx(t), "tenant-1"); got.Version != held.Version {
		t.Fatalf("renewing the session changed the name's record: version %d -> %d", held.Version, got.Version)
	}
	// A contender ends the dead session with a free record; it is never
	// held again, and the name is taken with a higher token.
	dead := mustSwap(t, s, store.Swap{Expect: renewed.Version, Record: store.Record{Name: sess.Name, Lease: sess.Lease}})
	if _, err := s.Swap(ctx(t), store.Swap{Expect: dead.Version, Record: sess}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a dead session was held again: %v", err)
	}
	other := mustSwap(t, s, store.Swap{Record: session("n2")})
	mustSwap(t, s, store.Swap{Expect: held.Version, Record: heldThrough("tenant-1", other, 2), Event: store.TakenOver})
	// A free record naming a session, and a session that is not one, are refused.
	for _, bad := range []store.Record{
		{Name: "tenant-2", Session: other.Name},
		{Name: "tenant-2", Holder: "n2", Incarnation: "i1", Session: "tenant-1"},
	} {
		if _, err := s.Swap(ctx(t), store.Swap{Record: bad}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("Swap(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	names, err := s.Names(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"tenant-1"}) {
		t.Fatalf("Names() = %q, want only the election name (no session records)", names)
	}
}

// testDeleteSession checks DeleteSession: only a dead (free)
// session record of the version read is deleted; the names held through it
// keep their tokens and may be taken with token + 1; the election log of
// the session and of its names is kept.
func testDeleteSession(t *testing.T, open func() store.Store) {
	s := open()
	sess := mustSwap(t, s, store.Swap{Record: session("n1"), Event: store.Acquired})
	held := mustSwap(t, s, store.Swap{Record: heldThrough("tenant-1", sess, 7), Event: store.Acquired})
	before, err := s.History(ctx(t), sess.Name, 0, 0)
	if err != nil {
		t.Fatal(err)
	}

	// A held session, a name that is no session's, a missing one, another
	// version: refused, nothing deleted.
	if err := s.DeleteSession(ctx(t), sess.Name, sess.Version); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("deleting a held session: %v; want ErrInvalid", err)
	}
	if err := s.DeleteSession(ctx(t), "tenant-1", held.Version); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("deleting a name's record: %v; want ErrInvalid", err)
	}
	if err := s.DeleteSession(ctx(t), store.SessionPrefix+"nobody/1/1", 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting a missing session: %v; want ErrNotFound", err)
	}
	dead := mustSwap(t, s, store.Swap{Expect: sess.Version, Record: store.Record{Name: sess.Name, Lease: sess.Lease}, Event: store.Released})
	if err := s.DeleteSession(ctx(t), sess.Name, sess.Version); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("deleting with an old version: %v; want ErrConflict", err)
	}
	if got, err := s.Get(ctx(t), sess.Name); err != nil || got.Version != dead.Version {
		t.Fatalf("after refused deletes: %+v, %v", got, err)
	}

	// The dead session, at its version: deleted.
	if err := s.DeleteSession(ctx(t), sess.Name, dead.Version); err != nil {
		t.Fatalf("deleting a dead session: %v", err)
	}
	if _, err := s.Get(ctx(t), sess.Name); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of a deleted session: %v; want ErrNotFound", err)
	}
	if err := s.DeleteSession(ctx(t), sess.Name, dead.Version); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting it again: %v; want ErrNotFound", err)
	}
	after, err := s.History(ctx(t), sess.Name, 0, 0)
	if err != nil || len(after) != len(before)+1 {
		t.Fatalf("the session's log after the delete: %d events, %v; want %d", len(after), err, len(before)+1)
	}
	// The name keeps its record and token, and is taken with token + 1.
	got, err := s.Get(ctx(t), "tenant-1")
	if err != nil || got.Token != 7 || got.Session != sess.Name {
		t.Fatalf("the name after its session was deleted: %+v, %v", got, err)
	}
	other := mustSwap(t, s, store.Swap{Record: session("n2")})
	taken := mustSwap(t, s, store.Swap{Expect: got.Version, Record: heldThrough("tenant-1", other, 8), Event: store.TakenOver})
	if taken.Token != 8 {
		t.Fatalf("taken with token %d; want 8", taken.Token)
	}
	if _, err := s.Swap(ctx(t), store.Swap{Expect: 0, Record: heldThrough("tenant-1", other, 9)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("re-creating a kept name: %v; want ErrConflict", err)
	}
	if evs, err := s.History(ctx(t), "tenant-1", 0, 0); err != nil || len(evs) != 2 {
		t.Fatalf("the name's log: %d events, %v; want 2", len(evs), err)
	}
}
