package election_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/testenv"
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
	return w.joinMutated(id, election.Mutations{NoPull: noPull})
}

// joinMutated starts a balanced node with the mutations mut.
func (w *gworld) joinMutated(id string, mut election.Mutations) *gnode {
	n := &gnode{id: id, rate: 1, sessions: true, balance: true, hold: true}
	w.restart(n)
	if mut != (election.Mutations{}) {
		n.g = election.NewGroup(election.Config{
			Node: n.id, Incarnation: n.id + ".1", Lease: pLease, Renew: pRenew, Margin: pMargin, Poll: pPoll, Retry: pPoll,
			Balance: true, Mutate: mut,
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
func (w *gworld) run(d time.Duration) { w.runCounting(d, nil) }

// runCounting is run, and it returns how many terms the nodes of counted
// lost meanwhile: the handovers among them.
func (w *gworld) runCounting(d time.Duration, counted []*gnode) (lost int) {
	leading := func() map[string]bool {
		on := map[string]bool{}
		for _, n := range counted {
			for _, name := range w.names {
				if m := n.g.Machine(name); m != nil && m.Leading() {
					on[n.id+"/"+name] = true
				}
			}
		}
		return on
	}
	was := leading()
	end := w.now.Add(d)
	for w.now.Before(end) {
		for _, n := range w.nodes {
			for !n.paused && (len(n.reqs) > 0 || len(n.replies) > 0) {
				w.progress(n)
			}
			w.progress(n)
		}
		w.check()
		w.now = w.now.Add(50 * time.Millisecond)
		if counted != nil {
			is := leading()
			for k := range was {
				if !is[k] {
					lost++
				}
			}
			was = is
		}
	}
	return lost
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
//
// A short run (not CI, no BATON_LONG=1) runs 25 of rapid's draws
// (testenv.Draws): each takes a quarter of a second of CPU.
func TestBalancedGroupsShareTheNames(t *testing.T) {
	rapid.Check(t, testenv.NewDraws(t, 25).Prop(func(t *rapid.T) {
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
	}))
}

// leaveMoves runs three balanced nodes until they share the names; then
// one leaves, and one of the two left is paused (a slow machine) for up to
// 1.5 renew intervals when the leaver's session ends. It returns the terms
// the two left lost to each other meanwhile: the names that moved twice.
func leaveMoves(t *rapid.T, mut election.Mutations) (moves int, names int, pause time.Duration) {
	w := balanceWorld(t, rapid.IntRange(30, 120).Draw(t, "names"))
	nodes := []*gnode{w.joinMutated("a", mut), w.joinMutated("b", mut), w.joinMutated("c", mut)}
	w.run(settle)
	if err := w.balanced(nodes); err != nil {
		t.Fatal(err)
	}
	leaver := rapid.IntRange(0, 2).Draw(t, "leaver")
	var live []*gnode
	for i, n := range nodes {
		if i != leaver {
			live = append(live, n)
		}
	}
	slow := live[rapid.IntRange(0, 1).Draw(t, "slow")]
	pause = time.Duration(rapid.IntRange(0, 30).Draw(t, "pause")) * pRenew / 20
	nodes[leaver].hold = false
	w.step(nodes[leaver], election.Resign{})
	slow.paused = true
	moves = w.runCounting(pause, live)
	slow.paused = false
	moves += w.runCounting(settle, live)
	if err := w.balanced(live); err != nil {
		t.Fatalf("after the leave (%s paused %v): %v", slow.id, pause, err)
	}
	return moves, len(w.names), pause
}

// leaveMovesMax bounds the names that move twice in leaveMoves. The split
// does not make it 0: a node's count of the others' names is a read old,
// and the pulls that follow a count of one too many move a name. In two
// runs of 1,000 draws, 0 moved in 786 and 799, and at most 4 in any;
// without the split (NoSplit), 4 to 20 moved in each of 100 draws.
const leaveMovesMax = 6

// A leave moves each of the leaver's names about once: the two left split
// them by the rendezvous hash and their shares, the one at its share
// leaving the rest to the one under it for a few renew intervals more, so
// that a node that sees the session end that much later still gets them
// first.
//
// With -v it logs how many draws moved how many names (BENCHMARKS.md:
// -rapid.checks=1000). Under the race detector it runs 20 draws, not
// every one rapid asks for: 100 took 42 s there, and in CI that slowed
// other packages' tests that measure real time. A short run (not CI, no
// BATON_LONG=1) runs 20 too (testenv.Draws): 100 took 46 s beside the
// rest of the suite.
func TestBalancedLeaveMovesFewNamesTwice(t *testing.T) {
	t.Parallel()
	draws := map[int]int{} // names moved twice: draws (rapid runs them one by one)
	ran := 0
	rapid.Check(t, testenv.NewDraws(t, 20).Prop(func(t *rapid.T) {
		if raceEnabled && ran == 20 {
			return
		}
		ran++
		moves, names, pause := leaveMoves(t, election.Mutations{})
		draws[moves]++
		if moves > leaveMovesMax {
			t.Fatalf("%d of %d names moved twice after a leave (a survivor paused %v), want at most %d", moves, names, pause, leaveMovesMax)
		}
	}))
	t.Logf("names moved twice: draws %v", draws)
}

// The check above sees a Group that takes a dead session's names at once
// (the NoSplit mutation): more than leaveMovesMax names move in some draw.
func TestLeaveCheckCatchesNoSplit(t *testing.T) {
	t.Parallel()
	caught := 0
	rapid.Check(t, func(t *rapid.T) {
		if caught > 0 {
			return // seen: the other draws need not run
		}
		if moves, _, _ := leaveMoves(t, election.Mutations{NoSplit: true}); moves > leaveMovesMax {
			caught++
		}
	})
	if caught == 0 {
		t.Fatal("a Group that does not split a dead session's names passed the leave check in every draw")
	}
}

// The check above is not vacuous: without pulls (the NoPull mutation) the
// first node keeps every name and the joiners get none. A short run
// runs 25 of rapid's draws (testenv.Draws).
func TestBalanceCheckCatchesNoPull(t *testing.T) {
	rapid.Check(t, testenv.NewDraws(t, 25).Prop(func(t *rapid.T) {
		w := balanceWorld(t, rapid.IntRange(4, 40).Draw(t, "names"))
		a := w.join("a", true)
		w.run(pLease)
		b := w.join("b", true)
		w.run(settle)
		if err := w.balanced([]*gnode{a, b}); err == nil {
			t.Fatal("two nodes without pulls found balanced")
		}
	}))
}
