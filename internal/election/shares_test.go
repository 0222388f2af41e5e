package election_test

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/testenv"
)

// Shares: each node gets n*w/W rounded down or up, the shares add up to
// n, and the leftover names go to the largest remainders, ties to the
// smallest node id.
func TestShares(t *testing.T) {
	for _, tc := range []struct {
		n       int
		weights map[string]int
		want    map[string]int
	}{
		{6, map[string]int{"a": 1, "b": 2, "c": 3}, map[string]int{"a": 1, "b": 2, "c": 3}},
		// 5*1/6 = 0.83, 5*2/6 = 1.67, 5*3/6 = 2.5: floors 0, 1, 2; the two
		// left go to the remainders 5 and 4 (sixths).
		{5, map[string]int{"a": 1, "b": 2, "c": 3}, map[string]int{"a": 1, "b": 2, "c": 2}},
		// Equal remainders: the smallest node ids first.
		{4, map[string]int{"c": 1, "b": 1, "a": 1}, map[string]int{"a": 2, "b": 1, "c": 1}},
		{0, map[string]int{"a": 1, "b": 5}, map[string]int{"a": 0, "b": 0}},
		{1, map[string]int{"a": 1, "b": 1_000_000}, map[string]int{"a": 0, "b": 1}},
		{10, map[string]int{"a": 1}, map[string]int{"a": 10}},
		// Weights below 1 weigh 1.
		{4, map[string]int{"a": 0, "b": -3}, map[string]int{"a": 2, "b": 2}},
		// No wrap: n*w is above 2^64 and computed in 128 bits.
		{math.MaxInt, map[string]int{"a": math.MaxInt, "b": math.MaxInt}, map[string]int{"a": math.MaxInt/2 + 1, "b": math.MaxInt / 2}},
	} {
		got := election.Shares(tc.n, tc.weights)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Shares(%d, %v) = %v, want %v", tc.n, tc.weights, got, tc.want)
		}
	}
}

// The property: whatever the weights, each share is n*w/W rounded down or
// up and they add up to n.
func TestSharesRounding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 100_000).Draw(t, "n")
		k := rapid.IntRange(1, 12).Draw(t, "nodes")
		weights := map[string]int{}
		sum := 0
		for i := range k {
			w := rapid.IntRange(1, election.MaxWeight).Draw(t, "w")
			weights[fmt.Sprintf("node-%d", i)] = w
			sum += w
		}
		got := election.Shares(n, weights)
		total := 0
		for node, w := range weights {
			lo := n * w / sum // below 2^63: n <= 1e5, w <= 1e6
			hi := lo
			if n*w%sum != 0 {
				hi++
			}
			if got[node] < lo || got[node] > hi {
				t.Fatalf("%s of weight %d gets %d of %d (weights %v), want %d to %d", node, w, got[node], n, weights, lo, hi)
			}
			total += got[node]
		}
		if total != n {
			t.Fatalf("shares %v add up to %d, want %d", got, total, n)
		}
	})
}

func TestSessionShare(t *testing.T) {
	for _, tc := range []struct {
		session string
		want    int
	}{
		{election.SessionName("n1", "n1.1", 3), 1},
		{election.SharedSessionName("n1", "n1.1", 3, 1), 1},
		{election.SharedSessionName("n1", "n1.1", 3, 0), 1},
		{election.SharedSessionName("n1", "n1.1", 3, 7), 7},
		{election.SharedSessionName("n1", "n1.1", 3, election.MaxWeight), election.MaxWeight},
		{"", 1},
		{"@session/n1/n1.1/3/w", 1},
		{"@session/n1/n1.1/3/w0", 1},
		{"@session/n1/n1.1/3/w07", 1},
		{"@session/n1/n1.1/3/w-7", 1},
		{"@session/n1/n1.1/3/w1000001", 1},
		{"@session/n1/n1.1/3/w99999999999999999999", 1},
		{"@session/n1/n1.1/3/wx", 1},
	} {
		if got := election.SessionShare(tc.session); got != tc.want {
			t.Errorf("SessionShare(%q) = %d, want %d", tc.session, got, tc.want)
		}
	}
	if got := election.SharedSessionName("n1", "n1.1", 3, 1); got != election.SessionName("n1", "n1.1", 3) {
		t.Errorf("a share of 1 changes the session name: %q", got)
	}
}

// sharesMet says whether every live node holds its weighted share, n*w/W
// rounded down or up, and every name is held once.
func (w *gworld) sharesMet(live []*gnode) error {
	counts := make([]int, len(live))
	total, sum := 0, 0
	for i, n := range live {
		for _, name := range w.names {
			if m := n.g.Machine(name); m != nil && m.Leading() {
				counts[i]++
			}
		}
		total += counts[i]
		sum += max(n.share, 1)
	}
	if total != len(w.names) {
		return fmt.Errorf("%d names held %v (total %d)", len(w.names), counts, total)
	}
	for i, n := range live {
		exact := float64(len(w.names)*max(n.share, 1)) / float64(sum)
		if float64(counts[i]) < math.Floor(exact) || float64(counts[i]) > math.Ceil(exact) {
			return fmt.Errorf("%d names on nodes of weights %v held %v: %s holds %d, want %.2f rounded", len(w.names), weightsOf(live), counts, n.id, counts[i], exact)
		}
	}
	return nil
}

func weightsOf(nodes []*gnode) []int {
	var ws []int
	for _, n := range nodes {
		ws = append(ws, max(n.share, 1))
	}
	return ws
}

// joinWeighted starts a balanced node of weight share.
func (w *gworld) joinWeighted(id string, share int, mut election.Mutations) *gnode {
	n := &gnode{id: id, rate: 1, sessions: true, balance: true, hold: true, share: share}
	w.restart(n)
	if mut != (election.Mutations{}) {
		n.g = election.NewGroup(election.Config{
			Node: n.id, Incarnation: n.id + ".1", Lease: pLease, Renew: pRenew, Margin: pMargin, Poll: pPoll, Retry: pPoll,
			Balance: true, Share: share, Mutate: mut,
		}, true)
	}
	w.nodes = append(w.nodes, n)
	for _, name := range w.names {
		w.step(n, election.Start{Name: name})
	}
	return n
}

// sharesRun: balanced Groups of weights 1, 2 and 3 (in a drawn order)
// join one by one; after each join they settle at their weighted shares;
// then one leaves and the two left share again by their weights. Safety
// is checked at every step (gworld.check). It returns the first error.
func sharesRun(t *rapid.T, mut election.Mutations) error {
	w := balanceWorld(t, rapid.IntRange(12, 60).Draw(t, "names"))
	weights := rapid.Permutation([]int{1, 2, 3}).Draw(t, "weights")
	var live []*gnode
	for i, share := range weights {
		live = append(live, w.joinWeighted(fmt.Sprintf("n%d", i), share, mut))
		w.run(settle)
		if err := w.sharesMet(live); err != nil {
			return fmt.Errorf("after %d joined: %w", len(live), err)
		}
	}
	leaver := rapid.IntRange(0, 2).Draw(t, "leaver")
	live[leaver].hold = false
	w.step(live[leaver], election.Resign{})
	live = append(live[:leaver:leaver], live[leaver+1:]...)
	w.run(settle)
	if err := w.sharesMet(live); err != nil {
		return fmt.Errorf("after a leave: %w", err)
	}
	return nil
}

// Balanced Groups of weights 1, 2 and 3 on a memstore, in virtual time,
// settle at N*w/W names each, rounded, after every join and a leave.
func TestBalancedGroupsWeightedShares(t *testing.T) {
	rapid.Check(t, testenv.NewDraws(t, 20).Prop(func(t *rapid.T) {
		if err := sharesRun(t, election.Mutations{}); err != nil {
			t.Fatal(err)
		}
	}))
}

// The check above sees Groups that ignore the weights (NoShares): each
// aims at N/P, and the weight-1 Group holds more than its share.
func TestSharesCheckCatchesNoShares(t *testing.T) {
	rapid.Check(t, testenv.NewDraws(t, 20).Prop(func(t *rapid.T) {
		if err := sharesRun(t, election.Mutations{NoShares: true}); err == nil {
			t.Fatal("Groups that ignore their weights met the weighted shares")
		}
	}))
}
