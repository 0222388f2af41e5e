package election_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

var errReplaced = fmt.Errorf("test: %w", store.ErrReplaced)

func elected(t *testing.T) (*election.Machine, time.Time) {
	t.Helper()
	cfg := election.Config{Name: "j", Node: "a", Incarnation: "a1", Lease: 3 * time.Second,
		Renew: time.Second, Margin: 100 * time.Millisecond, Poll: 100 * time.Millisecond, Retry: 100 * time.Millisecond}
	m := election.New(cfg)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.Step(t0, election.Start{})
	m.Step(t0, election.GetReply{Err: store.ErrNotFound})
	acts := m.Step(t0, election.SwapReply{Record: store.Record{Name: "j", Holder: "a", Incarnation: "a1", Token: 1, Lease: cfg.Lease, Version: 1}})
	if _, ok := acts[0].(election.Elected); !ok {
		t.Fatalf("not elected: %#v", acts)
	}
	return m, t0
}

// A renewal answered with a permanent error ends the term at once, with a
// cause wrapping ErrStoreLost and the store's error, writes nothing more
// (no release on a store that cannot be trusted) and leaves the machine
// idle: it does not campaign again by itself.
func TestPermanentErrorEndsTermAtOnce(t *testing.T) {
	m, t0 := elected(t)
	m.Step(t0.Add(time.Second), election.Tick{}) // renewal out
	acts := m.Step(t0.Add(time.Second+10*time.Millisecond), election.SwapReply{Err: errReplaced})
	if len(acts) != 3 {
		t.Fatalf("actions %#v, want Lost, Released, Idle", acts)
	}
	l, ok := acts[0].(election.Lost)
	if !ok || !errors.Is(l.Cause, election.ErrStoreLost) || !errors.Is(l.Cause, store.ErrReplaced) {
		t.Fatalf("first action %#v, want Lost(ErrStoreLost wrapping ErrReplaced)", acts[0])
	}
	if _, ok := acts[1].(election.Released); !ok {
		t.Fatalf("second action %#v, want Released", acts[1])
	}
	if _, ok := acts[2].(election.Idle); !ok {
		t.Fatalf("third action %#v, want Idle", acts[2])
	}
	if m.Leading() || !m.Next().IsZero() {
		t.Fatalf("after a permanent error: leading %v, next timer %v", m.Leading(), m.Next())
	}
}

// A transient error keeps the term until the deadline; a contender's
// permanent error stops the campaign with Failed.
func TestTransientVersusPermanent(t *testing.T) {
	m, t0 := elected(t)
	m.Step(t0.Add(time.Second), election.Tick{})
	acts := m.Step(t0.Add(time.Second+10*time.Millisecond), election.SwapReply{Err: store.ErrUnavailable})
	if len(acts) != 0 || !m.Leading() {
		t.Fatalf("transient error: %#v, leading %v", acts, m.Leading())
	}

	cfg := election.Config{Name: "j", Node: "b", Incarnation: "b1", Lease: 3 * time.Second,
		Renew: time.Second, Margin: 100 * time.Millisecond, Poll: 100 * time.Millisecond, Retry: 100 * time.Millisecond}
	c := election.New(cfg)
	c.Step(t0, election.Start{})
	acts = c.Step(t0, election.GetReply{Err: fmt.Errorf("test: %w", store.ErrCorrupt)})
	if len(acts) != 2 {
		t.Fatalf("contender's permanent error: %#v, want Failed, Idle", acts)
	}
	if f, ok := acts[0].(election.Failed); !ok || !errors.Is(f.Err, election.ErrStoreLost) || !errors.Is(f.Err, store.ErrCorrupt) {
		t.Fatalf("first action %#v, want Failed(ErrStoreLost wrapping ErrCorrupt)", acts[0])
	}
}
