package explore

import (
	"testing"
	"time"
)

// stuck finds the first state, by id, that can reach no state that
// leads over the edges kept, among those at or before the limit.
func TestLiveGraphStuck(t *testing.T) {
	// 0 -> 1 -> 2 (leads); 0 -> 3 -> 4 (a dead end); 5 leads itself;
	// 6 -> 3 (stuck, but after the limit).
	g := &liveGraph{
		now:   []time.Duration{0, 1, 2, 1, 2, 3, 4},
		leads: []bool{false, false, true, false, false, true, false},
	}
	for _, e := range [][2]int32{{0, 1}, {1, 2}, {0, 3}, {3, 4}, {6, 3}} {
		g.edge(e[0], e[1])
	}
	if got := g.stuck(4); got != 3 {
		t.Errorf("stuck(4) = %d, want 3 (the first state that reaches no leader)", got)
	}
	if got := g.stuck(0); got != -1 {
		t.Errorf("stuck(0) = %d, want -1 (state 0 reaches state 2)", got)
	}
	g.edge(4, 5) // the dead end now leads on
	if got := g.stuck(10); got != -1 {
		t.Errorf("with 4 -> 5: stuck(10) = %d, want -1", got)
	}
}
