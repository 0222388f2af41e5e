package kube

import (
	"math"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/batonhq/baton/store"
)

// TestHoldSeconds: a name held through a session is written with the
// store's hold, never less than a lease plus the slack and a second, and
// never past what the field holds.
func TestHoldSeconds(t *testing.T) {
	for _, tc := range []struct {
		hold, lease time.Duration
		want        int32
	}{
		{time.Hour, 3 * time.Second, 3600},
		{time.Second, 3 * time.Second, 6},
		{time.Second, 1500 * time.Millisecond, 5},
		{maxSessionHold, time.Second, 8760 * 3600},
		{time.Hour, 1 << 62, 1<<31 - 1},
		{time.Hour, math.MaxInt64, 1<<31 - 1}, // saturates, never wraps
	} {
		if got := holdSeconds(tc.hold, tc.lease); got != tc.want {
			t.Errorf("holdSeconds(%v, %v) = %d, want %d", tc.hold, tc.lease, got, tc.want)
		}
	}
}

// TestHoldPlan: with a hold of 60 s and a lease of 3 s, a renewal may
// lean on a write for 55 s: names written 55 s ago or more must be
// written before it succeeds, those from 27.5 s are written in the
// background, oldest first; younger ones are left alone.
func TestHoldPlan(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	written := map[string]time.Time{
		"fresh":  now.Add(-time.Second),
		"young":  now.Add(-27 * time.Second),
		"half":   now.Add(-27500 * time.Millisecond),
		"old":    now.Add(-40 * time.Second),
		"due":    now.Add(-55 * time.Second),
		"late":   now.Add(-70 * time.Second),
		"older":  now.Add(-54 * time.Second),
		"future": now.Add(time.Second), // another clock's write: not old
	}
	must, soon := holdPlan(written, now, 3*time.Second, 60)
	if want := []string{"late", "due"}; !slices.Equal(must, want) {
		t.Errorf("must = %v, want %v", must, want)
	}
	if want := []string{"older", "old", "half"}; !slices.Equal(soon, want) {
		t.Errorf("soon = %v, want %v", soon, want)
	}
	// At the smallest hold every renewal writes every name, as a renewal
	// that wrote each name's Lease would.
	must, _ = holdPlan(written, now, 3*time.Second, holdSeconds(time.Second, 3*time.Second))
	if len(must) != len(written)-1 {
		t.Errorf("at the smallest hold, must = %v, want every name but the future one", must)
	}
}

// TestHoldsIndex: the index follows a name's Lease from write to write:
// held through a session, then through another, then not at all, and a
// Lease another writer took leaves it.
func TestHoldsIndex(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	holder := "h"
	obj := func(session string, foreign bool) object {
		return object{
			lease:   &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
			st:      state{Name: "n", Rec: &store.Record{Holder: "h", Session: session}},
			foreign: foreign,
		}
	}
	var h holds
	h.noteWrite("n", obj("s1", false), at)
	h.noteWrite("n", obj("s1", false), at.Add(-time.Second)) // an older read: keeps the newer write
	if got := h.sessions["s1"].written["n"]; !got.Equal(at) {
		t.Fatalf("s1 has n written at %v, want %v", got, at)
	}
	h.noteWrite("n", obj("s2", false), at.Add(time.Second))
	if _, ok := h.sessions["s1"].written["n"]; ok || h.owner["n"] != "s2" {
		t.Fatalf("n moved to s2 but s1 still has it, or owner is %q", h.owner["n"])
	}
	h.noteWrite("n", obj("s2", true), at.Add(2*time.Second))
	if _, ok := h.sessions["s2"].written["n"]; ok {
		t.Fatal("a Lease another writer took is still indexed under s2")
	}
	h.noteWrite("n", obj("s2", false), at.Add(3*time.Second))
	if names := h.forget("s2"); !slices.Equal(names, []string{"n"}) {
		t.Fatalf("forget(s2) = %v, want [n]", names)
	}
	if _, ok := h.owner["n"]; ok || h.sessions["s2"] != nil {
		t.Fatal("forget left the session or its names")
	}
	// A Lease written for client-go with no holder (its session released)
	// is not held through the session any more.
	released := obj("s3", false)
	released.lease.Spec.HolderIdentity = nil
	h.noteWrite("n", obj("s3", false), at)
	h.noteWrite("n", released, at.Add(time.Second))
	if h.has("s3", "n") {
		t.Fatal("a released Lease is still indexed under its session")
	}
}
