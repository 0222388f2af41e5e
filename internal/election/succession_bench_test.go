package election_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// BenchmarkTakeover100k is the machine's part of a bulk takeover of
// 100,000 names held through a dead session: from the answer to the
// observer's write that ends the session to the last Elected, the
// store answering at once. With succession the names read again and
// adopt; without, each is taken by a swap. Neither counts the store.
func BenchmarkTakeover100k(b *testing.B) {
	for _, succession := range []bool{false, true} {
		b.Run(fmt.Sprintf("succession=%v", succession), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				h := newTakeoverHarness(100_000, succession)
				b.StartTimer()
				before := h.swaps
				if n := h.takeOver(); n != 100_000 {
					b.Fatalf("%d names elected, want 100000", n)
				}
				if swaps := h.swaps - before; (swaps == 0) != succession {
					b.Fatalf("%d names written in the takeover (succession %v)", swaps, succession)
				}
			}
		})
	}
}

// takeoverHarness drives one Group against a scripted store: names held
// by n2 through its session until the group's observer ends it.
type takeoverHarness struct {
	g          *election.Group
	now        time.Time
	dead       string // n2's session
	self       string
	succession bool
	pending    []election.Action
	names      int
	swaps      int // swaps of names answered
}

func newTakeoverHarness(n int, succession bool) *takeoverHarness {
	cfg := election.Config{Node: "n1", Incarnation: "n1.1", Lease: 3 * time.Second, Renew: time.Second,
		Margin: 150 * time.Millisecond, Poll: 250 * time.Millisecond, Retry: 250 * time.Millisecond,
		Succession: succession}
	h := &takeoverHarness{g: election.NewGroup(cfg, true), now: t0, dead: store.SessionPrefix + "n2/n2.1/1", succession: succession, names: n}
	for i := range n {
		h.pending = append(h.pending, h.g.Step(h.now, election.Start{Name: fmt.Sprintf("shard-%d", i), Hold: true})...)
	}
	h.self, _ = h.g.Session()
	h.drain(false) // the session is taken, every name awaits n2's session
	// The session is renewed until the observer's wait runs out.
	for h.now = h.now.Add(250 * time.Millisecond); ; h.now = h.now.Add(250 * time.Millisecond) {
		h.pending = append(h.pending, h.g.Step(h.now, election.Tick{})...)
		if h.endsSession() {
			return h
		}
		h.drain(false)
	}
}

// endsSession reports whether the pending actions hold the write that
// ends n2's session.
func (h *takeoverHarness) endsSession() bool {
	for _, a := range h.pending {
		if s, ok := a.(election.Swap); ok && s.Swap.Record.Name == h.dead {
			return true
		}
	}
	return false
}

// takeOver answers everything from the write that ends the session on,
// and returns how many names were elected.
func (h *takeoverHarness) takeOver() int { return h.drain(true) }

// drain answers the pending actions (and ticks while the group has
// something due now) until nothing is left; ending says the observer's
// write may be answered. It returns the Elected seen.
func (h *takeoverHarness) drain(ending bool) int {
	elected := 0
	for len(h.pending) > 0 {
		acts := h.pending
		h.pending = nil
		for _, a := range acts {
			switch a := a.(type) {
			case election.Get:
				h.pending = append(h.pending, h.g.StepGet(h.now, &election.GetReply{Name: a.Name, Record: h.record(a.Name, ending)})...)
			case election.Swap:
				if a.Swap.Record.Name == h.dead && !ending {
					h.pending = append(h.pending, a) // held back until takeOver
					return elected
				}
				rec := a.Swap.Record
				rec.Version = a.Swap.Expect + 1
				if !store.IsSession(rec.Name) {
					h.swaps++
				}
				h.pending = append(h.pending, h.g.StepSwap(h.now, &election.SwapReply{Name: rec.Name, Record: rec})...)
			case election.Elected:
				elected++
			}
		}
		if next := h.g.Next(); len(h.pending) == 0 && !next.IsZero() && !next.After(h.now) {
			h.pending = h.g.Step(h.now, election.Tick{})
		}
	}
	return elected
}

// record is the store's answer to a read of name: n2's live session and
// the names it holds until the session was ended, then (with succession)
// the names passed on to this group's session.
func (h *takeoverHarness) record(name string, ended bool) store.Record {
	switch {
	case name == h.self:
		return store.Record{Name: name}
	case name == h.dead:
		return store.Record{Name: name, Holder: "n2", Incarnation: "n2.1", Lease: 3 * time.Second, Version: 5}
	case ended && h.succession:
		return store.Record{Name: name, Holder: "n1", Incarnation: "n1.1", Token: 8, Lease: 3 * time.Second,
			Session: h.self, Via: h.dead, Version: 10}
	}
	return store.Record{Name: name, Holder: "n2", Incarnation: "n2.1", Token: 7, Lease: 3 * time.Second, Session: h.dead, Version: 6}
}
