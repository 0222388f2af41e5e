package election_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store/memstore"
)

// balanceWorld is a healthy cluster of balanced Groups holding names as
// Group.Hold does, on one memstore, polling only (no change notifications).
func balanceWorld(t *rapid.T, names int) *gworld {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &gworld{t: t, epoch: epoch, now: epoch}
	w.st = memstore.New(memstore.WithTime(func() time.Time { return w.now }))
	for i := range names {
		w.names = append(w.names, fmt.Sprintf("shard-%02d", i))
	}
	return w
}

func (w *gworld) join(id string, noPull bool) *gnode {
	n := &gnode{id: id, rate: 1, sessions: true, balance: true, hold: true}
	w.restart(n)
	if noPull {
		n.g = election.NewGroup(election.Config{
			Node: n.id, Incarnation: n.id + ".1", Lease: pLease, Renew: pRenew, Margin: pMargin, Poll: pPoll, Retry: pPoll,
			Balance: true, Mutate: election.Mutations{NoPull: true},
		}, true)
	}
	w.nodes = append(w.nodes, n)
	for _, name := range w.names {
		w.step(n, election.Start{Name: name})
	}
	return n
}

// run lets d pass in steps of 50ms, every node doing what is due, checking
// the safety properties after every step.
func (w *gworld) run(d time.Duration) {
	end := w.now.Add(d)
	for w.now.Before(end) {
		for _, n := range w.nodes {
			for len(n.reqs) > 0 || len(n.replies) > 0 {
				w.progress(n)
			}
			w.progress(n)
		}
		w.check()
		w.now = w.now.Add(50 * time.Millisecond)
	}
}

// balanced says whether every live node holds N/P names rounded down or
// up and every name is held once, and if not, how the names lie.
func (w *gworld) balanced(live []*gnode) error {
	counts := make([]int, len(live))
	total := 0
	for i, n := range live {
		for _, name := range w.names {
			if m := n.g.Machine(name); m != nil && m.Leading() {
				counts[i]++
			}
		}
		total += counts[i]
	}
	lo, hi := len(w.names)/len(live), (len(w.names)+len(live)-1)/len(live)
	for _, c := range counts {
		if c < lo || c > hi || total != len(w.names) {
			return fmt.Errorf("%d names on %d nodes held %v (total %d), want each %d to %d", len(w.names), len(live), counts, total, lo, hi)
		}
	}
	return nil
}

// The settle time of a change: the pull rounds halve the gap each renew,
// and a handover takes the holder's next read of the name (a lease without
// notifications) and the puller's next poll.
const settle = 4 * pLease

// Balanced Groups share the names: one holds all, a second and a third
// join and each ends with its share; one leaves (gives every name up) and
// the two left share again. Tokens rise and no name has two valid
// holders at any step (gworld.check).
func TestBalancedGroupsShareTheNames(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := balanceWorld(t, rapid.IntRange(7, 40).Draw(t, "names"))
		a := w.join("a", false)
		w.run(pLease)
		if err := w.balanced([]*gnode{a}); err != nil {
			t.Fatal(err)
		}
		b := w.join("b", false)
		w.run(settle)
		if err := w.balanced([]*gnode{a, b}); err != nil {
			t.Fatalf("after b joined: %v", err)
		}
		c := w.join("c", false)
		w.run(settle)
		if err := w.balanced([]*gnode{a, b, c}); err != nil {
			t.Fatalf("after c joined: %v", err)
		}
		leaver := rapid.SampledFrom([]*gnode{a, b, c}).Draw(t, "leaver")
		leaver.hold = false
		w.step(leaver, election.Resign{})
		var live []*gnode
		for _, n := range w.nodes {
			if n != leaver {
				live = append(live, n)
			}
		}
		w.run(settle)
		if err := w.balanced(live); err != nil {
			t.Fatalf("after %s left: %v", leaver.id, err)
		}
	})
}

// The check above is not vacuous: without pulls (the NoPull mutation) the
// first node keeps every name and the joiners get none.
func TestBalanceCheckCatchesNoPull(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := balanceWorld(t, rapid.IntRange(4, 40).Draw(t, "names"))
		a := w.join("a", true)
		w.run(pLease)
		b := w.join("b", true)
		w.run(settle)
		if err := w.balanced([]*gnode{a, b}); err == nil {
			t.Fatal("two nodes without pulls found balanced")
		}
	})
}
