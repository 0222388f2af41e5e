package election_test

import (
	"testing"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// A renewal whose reply arrives after the deadline ends the term, even if
// it succeeded: Valid() may already have said false to someone.
func TestLateRenewalReplyDoesNotRevive(t *testing.T) {
	cfg := election.Config{Name: "j", Node: "a", Incarnation: "a1", Lease: 3 * time.Second,
		Renew: time.Second, Margin: 100 * time.Millisecond, Poll: 100 * time.Millisecond, Retry: 100 * time.Millisecond}
	m := election.New(cfg)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.Step(t0, election.Start{})
	m.Step(t0, election.GetReply{Err: store.ErrNotFound})
	acts := m.Step(t0, election.SwapReply{Record: store.Record{Name: "j", Holder: "a", Incarnation: "a1", Token: 1, Lease: cfg.Lease, Version: 1}})
	if len(acts) == 0 {
		t.Fatal("not elected")
	}
	if _, ok := acts[0].(election.Elected); !ok {
		t.Fatalf("actions %#v", acts)
	}
	// The renewal goes out at t0+1s; its reply comes 2.5s later, after the
	// deadline t0+3s.
	acts = m.Step(t0.Add(time.Second), election.Tick{})
	if _, ok := acts[0].(election.Swap); !ok {
		t.Fatalf("no renewal at t0+1s: %#v", acts)
	}
	acts = m.Step(t0.Add(3500*time.Millisecond), election.SwapReply{Record: store.Record{Name: "j", Holder: "a", Incarnation: "a1", Token: 1, Lease: cfg.Lease, Version: 2}})
	if len(acts) == 0 {
		t.Fatal("no action for the late reply")
	}
	if l, ok := acts[0].(election.Lost); !ok || l.Cause != election.ErrLeaseExpired {
		t.Fatalf("late successful renewal: %#v, want Lost(ErrLeaseExpired)", acts)
	}
	if m.Leading() {
		t.Fatal("still leading")
	}
}
