package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

// TestSessionRenewalLeavesWxid: a session's renewal (Swap at the record's
// version, nothing else changed) goes the one-row way, renewSession: it
// leaves wxid, the change feed's indexed column, as it was, and raises the
// version; the feed still names it (the conformance test
// WatchSessionRenewals), from the notification's payload.
func TestSessionRenewalLeavesWxid(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: store.SessionPrefix + "n1/i1/1", Holder: "n1", Incarnation: "i1", Lease: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	wxid := func() int64 {
		var x int64
		if err := s.pool.QueryRow(ctx, `SELECT wxid FROM `+s.q+`.election WHERE name = $1`, rec.Name).Scan(&x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	w0 := wxid()
	for i := range 3 {
		prev := rec.Version
		if rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
			t.Fatal(err)
		}
		if rec.Version <= prev {
			t.Fatalf("renewal %d: version %d after %d", i, rec.Version, prev)
		}
		if w := wxid(); w != w0 {
			t.Fatalf("session renewal %d wrote wxid (%d, was %d): it went through swap_one", i, w, w0)
		}
	}
}

// TestNamedPayload: the listener parses what renewSession and swap_one
// send, and nothing else.
func TestNamedPayload(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	name := store.SessionPrefix + "n1/i 1/1"
	for p, want := range map[string]store.Change{
		sessionPayloadTag + "42 " + name:          {Name: name, Version: 42},
		writePayloadTag + "42 " + name:            {Name: name, Version: 42},
		writePayloadTag + "7 billing run":         {Name: "billing run", Version: 7},
		writePayloadTag + "9223372036854775807 x": {Name: "x", Version: 9223372036854775807},
	} {
		if c, ok := namedPayload(p); !ok || c != want {
			t.Errorf("namedPayload(%q) = %+v, %v; want %+v", p, c, ok, want)
		}
	}
	for _, p := range []string{notifyPayload, sessionPayloadTag, sessionPayloadTag + "42", sessionPayloadTag + "x " + name,
		sessionPayloadTag + "0 " + name, sessionPayloadTag + "42 billing", "42 " + name, writePayloadTag + "42 ",
		writePayloadTag + "-1 billing", writePayloadTag + "9223372036854775808 billing", "Write 42 billing"} {
		if c, ok := namedPayload(p); ok {
			t.Errorf("namedPayload(%q) = %+v, want none", p, c)
		}
	}
}
