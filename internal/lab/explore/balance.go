package explore

import (
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/lab/vcluster"
)

// This file is the runtime of balanced Groups (Sessions.Balance): every
// node's Group is balanced (election.Config.Balance), of the weight
// Sessions.Shares gives it (election.Config.Share), so that the Groups
// share the names by the pulls of election's balance rule
// (internal/election/balance.go): a Group that sees another hold more
// than its share asks for names, the swap an operator's transfer makes,
// and the holder, at its next read of the name, hands it over.
//
// Balance is a liveness property: the names end up in proportion once
// faults stop, not at every instant (a handover frees a name before its
// taker reads it). The simulator checks it at the end of a balanced run,
// long after its last fault (package sim, vcluster.Unbalanced). The
// explorer checks it as a property of states: from Sessions.Heal on, the
// store answers promptly (time does not move while a call is in flight,
// so that every pull and every handover completes within the instant its
// calls are sent, in every order), and in every state at or after
// Sessions.Quiet in which no call is in flight, the names each live node
// holds (a valid term on its own clock, as vcluster counts
// Outcome.HeldByNode) must pass vcluster.Unbalanced, the simulator's
// check. Quiet is a bound on how long the shipping Groups take to
// balance from the configuration's start: measured, not derived (the
// shipping Groups explore with 0 violations with it; the simulator's
// quiet end is as measured, sim.SharesSettle).

// share is node i's weight (election.Config.Share): 0 (1) without
// Shares, as vcluster's.
func (s *Sessions) share(i int) int {
	if !s.Balance || i >= len(s.Shares) {
		return 0
	}
	return s.Shares[i]
}

// weighted reports whether the nodes' weights differ (Shares): what the
// no-shares mutation ignores.
func (s *Sessions) weighted() bool {
	return slices.ContainsFunc(s.Shares, func(w int) bool { return w != s.Shares[0] })
}

// validateBalance checks the balance settings of a Group configuration.
func (c *Config) validateBalance() error {
	s := c.Group
	if !s.Balance {
		if s.Shares != nil || s.Heal != 0 || s.Quiet != 0 {
			return fmt.Errorf("explore: Shares, Heal and Quiet without Balance: want Balance, or none of them")
		}
		return nil
	}
	if c.Pauses > 0 {
		return fmt.Errorf("explore: a balanced configuration with pauses: want Pauses 0 (from Heal on, a paused node's answers would hold time still)")
	}
	if s.Shares != nil && len(s.Shares) != c.Nodes {
		return fmt.Errorf("explore: %d shares for %d nodes: want one a node", len(s.Shares), c.Nodes)
	}
	for i, w := range s.Shares {
		if w < 1 || w > election.MaxWeight {
			return fmt.Errorf("explore: node-%d's share %d: want 1 to %d", i, w, election.MaxWeight)
		}
	}
	if s.Heal < 0 || s.Heal > s.Quiet || s.Quiet > c.End {
		return fmt.Errorf("explore: heal %v, quiet %v, end %v: want 0 <= heal <= quiet <= end", s.Heal, s.Quiet, c.End)
	}
	return nil
}

// prompt reports whether time may not move to t now: from Heal on, the
// store answers every call before time moves on.
func (w *world) prompt(t time.Duration) bool {
	if w.c.Prompt && len(w.reqs) > 0 {
		return true // Config.Prompt: from the start
	}
	if w.c.Prompt && w.running() {
		return true // and with work, a run ends within the instant it starts
	}
	s := w.c.Group
	return s != nil && s.Balance && len(w.reqs) > 0 && t > s.Heal
}

// checkBalance is the balance of a quiet state (at or after Quiet, no
// store call in flight): vcluster.Unbalanced of the names each live node
// holds.
func (w *world) checkBalance() error {
	s := w.c.Group
	if !s.Balance || w.now < s.Quiet || len(w.reqs) > 0 {
		return nil
	}
	held := make([]int, len(w.nodes))
	for i := range w.nodes {
		if !w.live(i) {
			held[i] = -1 // as vcluster's HeldByNode: down or frozen
			continue
		}
		for k := range s.Names {
			if _, ok := w.groupValid(i, k); ok {
				held[i]++
			}
		}
	}
	p, what := vcluster.Unbalanced(held, len(s.Names), s.Shares)
	if what == "" {
		return nil
	}
	weights := ""
	if s.Shares != nil {
		weights = fmt.Sprintf(" of weights %v", s.Shares)
	}
	return fmt.Errorf("balance: %d names on %d live nodes%s held %v per node at %v (quiet from %v, no store call in flight); %s",
		len(s.Names), p, weights, held, w.now, s.Quiet, what)
}
