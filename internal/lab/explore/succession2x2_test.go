package explore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/store"
)

// adoptedBoth returns the node that holds every name of w's
// configuration by the succession of the planted dead session, in the
// one write that ended it, or -1: the dead session record is free and
// names the node's live session its successor, and every name, as the
// store resolves it, is held through that session via the dead one, at
// the version of that write (no write of the name's own since), its
// token one above the dead holder's, and the node's Group holds a term
// of it with that token, valid on its clock.
func adoptedBoth(w *world) int {
	ctx := context.Background()
	dead, err := w.st.Get(ctx, ghostSession(ghost))
	if err != nil || !dead.Free() || dead.Successor == "" {
		return -1
	}
	for i := range w.nodes {
		if !w.nodes[i].up || w.nodes[i].g == nil {
			continue
		}
		if s, alive := w.nodes[i].g.Session(); !alive || s != dead.Successor {
			continue
		}
		held := 0
		for k, nm := range w.c.Group.Names {
			r, err := w.st.Get(ctx, nm)
			tok, valid := w.groupValid(i, k)
			if err == nil && r.Via == dead.Name && r.Session == dead.Successor && r.Version == dead.Version && r.Token == 2 && valid && tok == r.Token {
				held++
			}
		}
		if held == len(w.c.Group.Names) {
			return i
		}
	}
	return -1
}

// refusedSuccession reports whether ev delivers to its node, in w, the
// store's refusal (a conflict) of its swap that ends the planted dead
// session naming its own the successor: it lost the race to end it.
func refusedSuccession(w *world, ev Event) bool {
	if ev.Kind != evDeliver {
		return false
	}
	j := w.nodeReq(int(ev.Node), int(ev.Idx))
	if j < 0 {
		return false
	}
	r := w.reqs[j]
	return r.swap && r.sw.Record.Name == ghostSession(ghost) && r.sw.Record.Successor != "" && errors.Is(r.err, store.ErrConflict)
}

// TestSuccessionOfTwoNames explores group-2x2-succession to its own
// depth bound and requires its graph to hold what the configuration is
// for, within that bound: for each node, a state in which it holds both
// names by one succession (adoptedBoth), and one reached, on the path
// first found to it, after the other node was told its own swap ending
// the dead session was refused (the race to succeed it lost), in which
// each name has a valid term on exactly one node. Were the bound cut
// below those paths, or the planted start changed so that no
// succession passes both names, it fails.
func TestSuccessionOfTwoNames(t *testing.T) {
	c, _ := Lookup("group-2x2-succession")
	lost := map[int32]int8{} // the node (+1) that lost the race, on the path first found to a state
	adopted := map[int]bool{}
	raced := map[int]bool{}
	c.reach = func(from, to int32, ev Event, before, after *world) {
		l := lost[from]
		if refusedSuccession(before, ev) {
			l = ev.Node + 1
		}
		if l > 0 {
			lost[to] = l
		}
		i := adoptedBoth(after)
		if i < 0 {
			return
		}
		adopted[i] = true
		if l == 0 || int(l-1) == i {
			return
		}
		for k := range after.c.Group.Names {
			if _, ok := after.groupValid(int(l-1), k); ok {
				t.Fatalf("node-%d holds %s, which node-%d adopted", l-1, after.c.Group.Names[k], i)
			}
		}
		raced[i] = true
	}
	r, err := Explore(context.Background(), c)
	if err != nil || r.Violation != nil {
		t.Fatalf("%v %v", r, err)
	}
	t.Logf("%v", r)
	for i := 0; i < c.Nodes; i++ {
		if !adopted[i] {
			t.Errorf("no state within depth %d in which node-%d holds both names by the succession of the dead session", c.MaxDepth, i)
		}
		if !raced[i] {
			t.Errorf("no state within depth %d in which node-%d holds both names by the succession after node-%d lost the race to it", c.MaxDepth, i, 1-i)
		}
	}
}

// TestSuccessionOfTwoNamesCanFail: group-2x2-succession catches a
// broken succession, the store's that passes the names on without
// raising their tokens (succession-no-raise): node-1 wins a name it
// adopted with the dead holder's token. Its path is replayed by the
// scenario runner.
func TestSuccessionOfTwoNamesCanFail(t *testing.T) {
	c, _ := Lookup("group-2x2-succession")
	c, r := exploreMutated(t, c, "succession-no-raise")
	if r.Violation == nil || !strings.Contains(r.Violation.Error(), "not above token") {
		t.Fatalf("succession-no-raise not caught as a token not raised: %v", r)
	}
	replay(t, c, r)
}

// TestSuccessionOfTwoNamesClones: a state of group-2x2-succession
// reached by cloning its parent (its Groups and store copied on write)
// is the state a run of its path from the start reaches, key for key;
// checked for one state in 20, to depth 14.
func TestSuccessionOfTwoNamesClones(t *testing.T) {
	c, _ := Lookup("group-2x2-succession")
	c.MaxDepth = 14
	checked, count := 0, 0
	c.visit = func(k key, p func() []Event) {
		if count++; count%20 != 0 {
			return
		}
		cc := c
		w := newWorld(&cc, nil)
		for _, ev := range p() {
			if err := w.do(ev, nil); err != nil {
				t.Fatalf("replay: %v", err)
			}
		}
		if w.key(&hasher{}) != k {
			t.Fatalf("the replay of %v reaches another state", p())
		}
		checked++
	}
	r, err := Explore(context.Background(), c)
	if err != nil || r.Violation != nil {
		t.Fatalf("%v %v", r, err)
	}
	if checked < 100 {
		t.Fatalf("only %d states checked", checked)
	}
}
