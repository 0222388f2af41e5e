package election_test

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/testenv"
)

// PairPulls moves names while the move brings the two closer to
// proportion; with equal weights it is the rule for equal weights, half
// the difference rounded down once it is two or more.
func TestPairPulls(t *testing.T) {
	for _, tc := range []struct{ mine, wMe, theirs, wThem, want int }{
		{0, 1, 1, 1, 0}, {0, 1, 2, 1, 1}, {0, 1, 3, 1, 1}, {0, 1, 4, 1, 2}, {3, 1, 10, 1, 3},
		{5, 1, 5, 1, 0}, {5, 1, 0, 1, 0},
		// Weights 3 and 1: 36 names end 27 and 9.
		{0, 3, 36, 1, 27}, {26, 3, 10, 1, 1}, {27, 3, 9, 1, 0},
		// Weight 1 under weight 3 holding all: 9 move.
		{0, 1, 36, 3, 9}, {9, 1, 27, 3, 0},
		// Weight 4 against 1, two names: (2,0) -> (1,1)? 2*(2*... no:
		// the heavier one asks for both of the lighter one's two.
		{0, 4, 2, 1, 2}, {1, 1, 1, 4, 0},
		{-3, 1, 2, 1, 1}, {0, 0, 2, -1, 1},
	} {
		if got := election.PairPulls(tc.mine, tc.wMe, tc.theirs, tc.wThem); got != tc.want {
			t.Errorf("PairPulls(%d, %d, %d, %d) = %d, want %d", tc.mine, tc.wMe, tc.theirs, tc.wThem, got, tc.want)
		}
	}
}

// The property: after PairPulls' k moves no further move lowers
// mine²/wMe + theirs²/wThem, and each of the k did.
// Counts as large as an int saturate rather than wrap.
func TestPairPullsSaturates(t *testing.T) {
	if got := election.PairPulls(0, election.MaxWeight, math.MaxInt, 1); got < 1 || got > 1<<40 {
		t.Fatalf("PairPulls(0, MaxWeight, MaxInt, 1) = %d, want 1 to 2^40", got)
	}
	if got := election.PairPulls(math.MaxInt, 1, math.MaxInt, election.MaxWeight); got != 0 {
		t.Fatalf("PairPulls(MaxInt, 1, MaxInt, MaxWeight) = %d, want 0", got)
	}
}

func TestPairPullsStops(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.IntRange(0, 10_000).Draw(t, "mine")
		l := rapid.IntRange(0, 10_000).Draw(t, "theirs")
		wi := rapid.IntRange(1, election.MaxWeight).Draw(t, "wMe")
		wj := rapid.IntRange(1, election.MaxWeight).Draw(t, "wThem")
		phi := func(m, l int) float64 { return float64(m)*float64(m)/float64(wi) + float64(l)*float64(l)/float64(wj) }
		k := election.PairPulls(m, wi, l, wj)
		for i := range k {
			if phi(m+i+1, l-i-1) >= phi(m+i, l-i) {
				t.Fatalf("move %d of %d from (%d, w %d) to (%d, w %d) does not bring them closer", i+1, k, l, wj, m, wi)
			}
		}
		if l-k > 0 && phi(m+k+1, l-k-1) < phi(m+k, l-k)-1e-9*phi(m+k, l-k) {
			t.Fatalf("after %d moves from (%d, w %d) to (%d, w %d) one more would bring them closer", k, l, wj, m, wi)
		}
	})
}

func TestQuotaCeil(t *testing.T) {
	for _, tc := range []struct {
		n, w int
		sum  uint64
		want int
	}{
		{36, 1, 6, 6}, {5, 1, 6, 1}, {5, 4, 8, 3}, {0, 3, 5, 0}, {7, 1, 0, 7}, {7, 9, 3, 7},
		{math.MaxInt, election.MaxWeight, 2 * election.MaxWeight, math.MaxInt/2 + 1},
	} {
		if got := election.QuotaCeil(tc.n, tc.w, tc.sum); got != tc.want {
			t.Errorf("QuotaCeil(%d, %d, %d) = %d, want %d", tc.n, tc.w, tc.sum, got, tc.want)
		}
	}
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

// sharesMet says whether every name is held once and the live nodes
// hold their names in proportion to their weights: for every two, either
// no name moved from one to the other brings them closer (lowers the sum
// of load²/weight), or the one that would take it holds n*w/W rounded up
// already.
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
	for i, a := range live {
		for j, b := range live {
			wi, wj := max(a.share, 1), max(b.share, 1)
			ceil := (len(w.names)*wi + sum - 1) / sum
			if i != j && 2*(counts[j]*wi-counts[i]*wj) > wi+wj && counts[i] < ceil {
				return fmt.Errorf("%d names on nodes of weights %v held %v: a name of %s would bring %s closer to proportion", len(w.names), weightsOf(live), counts, b.id, a.id)
			}
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
// join one by one; after each join they settle in proportion to their
// weights (sharesMet); then one leaves and the two left settle again. Safety
// is checked at every step (gworld.check). It returns the first error.
func sharesRun(t *rapid.T, mut election.Mutations) error {
	w := balanceWorld(t, rapid.IntRange(12, 60).Draw(t, "names"))
	weights := rapid.Permutation([]int{1, 2, 3}).Draw(t, "weights")
	var live []*gnode
	for i, share := range weights {
		live = append(live, w.joinWeighted(fmt.Sprintf("n%d", i), share, mut))
		w.run(2 * settle)
		if err := w.sharesMet(live); err != nil {
			return fmt.Errorf("after %d joined: %w", len(live), err)
		}
	}
	leaver := rapid.IntRange(0, 2).Draw(t, "leaver")
	live[leaver].hold = false
	w.step(live[leaver], election.Resign{})
	live = append(live[:leaver:leaver], live[leaver+1:]...)
	w.run(2 * settle)
	if err := w.sharesMet(live); err != nil {
		return fmt.Errorf("after a leave: %w", err)
	}
	return nil
}

// Balanced Groups of weights 1, 2 and 3 on a memstore, in virtual time,
// settle in proportion to their weights (about N*w/W names each) after
// every join and a leave, within two settle times: weighted moves may
// chain, so one was not always enough.
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
