package electortest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

// Backend is what Run needs of a backend.
type Backend struct {
	// Timing is the election timing of the scenarios.
	Timing Timing
	// Fresh makes a fresh, empty store location for one scenario.
	Fresh func(t *testing.T) Location
	// Resource, when not nil, makes the scenario's protected resource
	// (default: NewGuarded).
	Resource func(t *testing.T) Resource
}

// Location is one scenario's store.
type Location struct {
	// Open opens a new handle on the store for a node (or, with node
	// "observer", for the test's own reads).
	Open func(node string) store.Store
	// Replace, when not nil, deletes the store (its file, schema or keys)
	// and creates a new one in its place, as another process would; it
	// adds the StoreReplaced scenario.
	Replace func()
}

// Run runs the real-time elector scenarios that need no backend-specific
// fault against b: handovers by resignation, and a leader cut off from the
// store. Each one ends with Check. They mostly wait: a caller whose
// serial t would hold the package's serial tests back while they wait
// marks t parallel first (testenv.ParallelUnlessLong).
func Run(t *testing.T, b Backend) {
	if testing.Short() {
		t.Skip("real-time elector scenarios take seconds")
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, c *Cluster, open func(string) store.Store)
	}{
		{"ResignHandover", testResignHandover},
		{"LeaderCutOff", testLeaderCutOff},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testenv.ParallelUnlessLong(t)
			loc := b.Fresh(t)
			var res Resource
			if b.Resource != nil {
				res = b.Resource(t)
			}
			tc.fn(t, New(t, b.Timing, res), loc.Open)
		})
	}
	t.Run("StoreReplaced", func(t *testing.T) { StoreReplaced(t, b) })
}

// StoreReplaced runs the scenario of a store replaced under a leader and a
// contender (Location.Replace) alone, for a backend with more than one way
// to replace its store.
func StoreReplaced(t *testing.T, b Backend) {
	testenv.ParallelUnlessLong(t)
	loc := b.Fresh(t)
	if loc.Replace == nil {
		t.Skip("the backend gives no way to replace its store")
	}
	testStoreReplaced(t, New(t, b.Timing, nil), loc)
}

// testResignHandover: three nodes run a 1s job; the leader resigns three
// times (twice by default, three times with testenv.Long). Each time
// exactly one other node takes over under the next token, and every period
// is done once.
func testResignHandover(t *testing.T, c *Cluster, open func(string) store.Store) {
	resigns := 2
	if testenv.Long() {
		resigns = 3
	}
	c.Runner = true
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		c.AddNode(id, open(id))
	}
	observer := open("observer")
	defer observer.Close()
	c.StartAll()
	leader, tr := c.WaitOneLeader(10 * time.Second)
	time.Sleep(1500 * time.Millisecond)
	for range resigns {
		leader.Resign(tr)
		prev := tr.Term.Token()
		leader, tr = c.WaitOneLeader(c.Timing.Safe() + 10*time.Second)
		t.Logf("after a resignation %s leads with token %d", leader.ID, tr.Term.Token())
		if tr.Term.Token() != prev+1 {
			t.Errorf("token %d after a resignation of %d, want %d", tr.Term.Token(), prev, prev+1)
		}
		time.Sleep(1200 * time.Millisecond)
	}
	c.DoneThrough(observer, time.Now(), 10*time.Second)
	c.Check(observer)
}

// testLeaderCutOff: the leader is cut off from the store while two
// contenders watch it renew and a 1s job runs. It steps down at its
// deadline (its last successful renewal's start plus the lease); a
// contender takes over no sooner than lease + 2e after that start (T_safe)
// and within a poll and some slack more; the periods of the handover are
// each done once. Healed, the old leader rejoins as a contender.
func testLeaderCutOff(t *testing.T, c *Cluster, open func(string) store.Store) {
	c.Runner = true
	tm := c.Timing
	link := NewCuttable(open("a"))
	a := c.AddNode("a", link)
	b := c.AddNode("b", open("b"))
	cc := c.AddNode("c", open("c"))
	observer := open("observer")
	defer observer.Close()

	first := c.LeadFirst(a, b, cc) // periods run; the others watch a renew

	link.Cut(true)
	cut := time.Now()
	ended := a.WaitEnded(first, tm.Lease+tm.Slack+time.Second)
	a.CheckSteppedDown(first, ended)
	leader, next := c.WaitOneLeader(tm.Safe() + 10*time.Second)
	if leader == a {
		t.Fatal("a leads again while cut off")
	}
	CheckCutTakeover(t, tm, first, next, leader, cut, ended, tm.Safe()+2*tm.Poll+2*c.Slack(cut, next.Won))
	c.DoneThrough(observer, time.Now(), 10*time.Second)

	link.Cut(false)
	time.Sleep(tm.Safe()) // a reads the record again and contends
	if l, tr := c.WaitOneLeader(10 * time.Second); tr != next {
		t.Errorf("after the heal %s leads with token %d, want %s to keep token %d", l.ID, tr.Term.Token(), leader.ID, next.Term.Token())
	}
	c.DoneThrough(observer, time.Now(), 10*time.Second)
	c.Check(observer)
}

// testStoreReplaced: the store is deleted and created afresh under a
// leader and a contender. Both find out at their next store call: the
// leader's term ends within a renew interval (and slack), long before its
// deadline, with ErrStoreLost wrapping store.ErrReplaced; Elector.Run
// returns that error on both nodes instead of campaigning again.
func testStoreReplaced(t *testing.T, c *Cluster, loc Location) {
	tm := c.Timing
	a := c.AddNode("a", loc.Open("a"))
	b := c.AddNode("b", loc.Open("b"))
	c.Start(a)
	_, first := c.WaitOneLeader(10 * time.Second)
	c.Start(b)
	time.Sleep(2 * tm.Renew)
	loc.Replace()
	replaced := time.Now()
	ended := a.WaitEnded(first, tm.Renew+tm.Slack+time.Second)
	if !errors.Is(first.Term.Err(), baton.ErrStoreLost) || !errors.Is(first.Term.Err(), store.ErrReplaced) {
		t.Fatalf("the leader's term ended with %v, want ErrStoreLost wrapping store.ErrReplaced", first.Term.Err())
	}
	if took, slack := ended.Sub(replaced), c.Slack(replaced, ended); took > tm.Renew+slack {
		t.Errorf("the leader stepped down %v after the store was replaced, want within a renew interval (%v) and slack (%v)", took, tm.Renew, slack)
	}
	if !ended.Before(first.Term.Deadline()) {
		t.Errorf("the leader stepped down at its deadline, not at its next renewal")
	}
	t.Logf("leader %s stepped down %v after the store was replaced: %v", a.ID, ended.Sub(replaced).Round(time.Millisecond), first.Term.Err())
	for _, n := range []*Node{a, b} {
		select {
		case <-n.done:
		case <-time.After(tm.Lease + 5*time.Second):
			t.Errorf("%s still campaigns on a replaced store", n.ID)
		}
		if len(n.Terms()) > 0 && n != a {
			t.Errorf("%s won a term on the replaced store", n.ID)
		}
	}
	if ls := c.Leaders(); len(ls) > 0 {
		t.Errorf("%d nodes lead on a replaced store", len(ls))
	}
}
