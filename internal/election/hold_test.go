package election_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// holdRun drives one machine against a record it answers by hand and
// returns the kinds of the actions it emitted, in order.
type holdRun struct {
	t   *testing.T
	m   *election.Machine
	now time.Time
	log []string
}

func (h *holdRun) step(ev election.Event) []election.Action {
	acts := h.m.Step(h.now, ev)
	for _, a := range acts {
		h.log = append(h.log, fmt.Sprintf("%T", a))
	}
	return acts
}

func has[T election.Action](acts []election.Action) bool {
	for _, a := range acts {
		if _, ok := a.(T); ok {
			return true
		}
	}
	return false
}

// A name started with Hold is campaigned for again by the machine itself
// after its term ends (here: deposed, then released), and no more once it
// is told to stop (Resign with token 0) or the store fails for good.
func TestHoldCampaignsAgainUntilResigned(t *testing.T) {
	cfg := election.Config{Name: "job", Node: "a", Incarnation: "a.1", Lease: 3 * time.Second,
		Renew: time.Second, Margin: 100 * time.Millisecond, Poll: 100 * time.Millisecond, Retry: 100 * time.Millisecond}
	h := &holdRun{t: t, m: election.New(cfg), now: time.Unix(0, 0)}
	free := store.Record{Name: "job", Token: 4, Version: 10, Lease: cfg.Lease}
	mine := store.Record{Name: "job", Holder: "a", Incarnation: "a.1", Token: 5, Version: 11, Lease: cfg.Lease}

	win := func() {
		t.Helper()
		if acts := h.step(election.GetReply{Name: "job", Record: free}); !has[election.Swap](acts) {
			t.Fatalf("no acquisition of a free record: %v", h.log)
		}
		if acts := h.step(election.SwapReply{Name: "job", Record: mine}); !has[election.Elected](acts) {
			t.Fatalf("not elected: %v", h.log)
		}
	}
	if acts := h.step(election.Start{Hold: true}); !has[election.Get](acts) {
		t.Fatalf("Start: %v", h.log)
	}
	win()
	// Deposed at the next renewal: the term ends, the machine reads to
	// see whose the record is, finds it is not its own, and campaigns
	// again by itself.
	h.now = h.now.Add(cfg.Renew)
	h.step(election.Tick{})
	if acts := h.step(election.SwapReply{Name: "job", Err: store.ErrConflict}); !has[election.Lost](acts) {
		t.Fatalf("deposed: %v", h.log)
	}
	other := store.Record{Name: "job", Holder: "b", Incarnation: "b.1", Token: 6, Version: 12, Lease: cfg.Lease}
	acts := h.step(election.GetReply{Name: "job", Record: other})
	if !has[election.Released](acts) || !has[election.Get](acts) {
		t.Fatalf("after the release a held name is campaigned for again: %v", h.log)
	}
	if h.m.Phase() != "contending" {
		t.Fatalf("phase %s, want contending", h.m.Phase())
	}
	// Told to stop: no campaign any more.
	acts = h.step(election.Resign{})
	h.step(election.GetReply{Name: "job", Record: other})
	if h.m.Phase() != "idle" || has[election.Get](acts) {
		t.Fatalf("after Resign: phase %s, actions %v", h.m.Phase(), h.log)
	}

	// A permanent store error ends a hold too.
	h = &holdRun{t: t, m: election.New(cfg), now: time.Unix(0, 0)}
	h.step(election.Start{Hold: true})
	acts = h.step(election.GetReply{Name: "job", Err: fmt.Errorf("%w: malformed", store.ErrCorrupt)})
	if !has[election.Failed](acts) || h.m.Phase() != "idle" {
		t.Fatalf("permanent error: phase %s, %v", h.m.Phase(), h.log)
	}

	// Without Hold, a term that ends is not campaigned for again.
	h = &holdRun{t: t, m: election.New(cfg), now: time.Unix(0, 0)}
	h.step(election.Start{})
	win()
	h.now = h.now.Add(cfg.Renew)
	h.step(election.Tick{})
	h.step(election.SwapReply{Name: "job", Err: store.ErrConflict})
	acts = h.step(election.GetReply{Name: "job", Record: other})
	if has[election.Get](acts) || h.m.Phase() != "idle" {
		t.Fatalf("without Hold: phase %s, %v", h.m.Phase(), h.log)
	}
}
