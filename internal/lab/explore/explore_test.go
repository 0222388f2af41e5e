package explore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/internal/lab/scenario"
)

// TestMutationsAreCaught runs each mutation through the tiny
// configuration (wrap-deadline through 2x1-hostile, the one with a
// planted record; the scheduler's through sched-2x1-tiny, those whose
// shortest counterexample is there: each other one is explored in its
// own configuration by TestCounterexamplesAreShortest, which must catch
// it too): each must be caught, on a shortest path whose script the
// scenario runner replays with the same outputs.
func TestMutationsAreCaught(t *testing.T) {
	for _, m := range Mutations() {
		_, work := workNeeds[m]
		if work && shortest[m] != "sched-2x1-tiny" {
			continue
		}
		if _, group := groupNeeds[m]; group {
			continue // explored in its configuration by TestCounterexamplesAreShortest
		}
		_, pref := preferNeeds[m]
		if pref && slow[m] {
			continue // explored in its configuration by TestCounterexamplesAreShortest
		}
		t.Run(m, func(t *testing.T) {
			c, _ := Lookup("2x1-tiny")
			if pref {
				c, _ = Lookup(shortest[m]) // a preference's, where it is caught in an instant
			} else if work {
				c, _ = Lookup("sched-2x1-tiny")
			} else if !c.Fits(m) {
				c, _ = Lookup(shortest[m]) // 2x1-hostile's planted record, 2x1-live's liveness check
			}
			c, r := exploreMutated(t, c, m)
			if r.Violation == nil {
				t.Fatalf("%s not caught: %v", m, r)
			}
			replay(t, c, r)
		})
	}
}

// exploreMutated explores c with the mutation m and returns the mutated
// configuration and the result, logged.
func exploreMutated(t *testing.T, c Config, m string) (Config, Result) {
	t.Helper()
	c, err := c.Mutated(m)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Explore(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", r)
	return c, r
}

// replay writes r's counterexample as a script under a temporary
// directory and replays it with the scenario runner: every step's output
// must be the one written.
func replay(t *testing.T, c Config, r Result) {
	t.Helper()
	script, err := Script(c, r.Path, r.Violation)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := filepath.Join(dir, c.Name+".txt")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	scenario.Files(t, filepath.Join(dir, "*.txt"), func(t *testing.T) func(scenario.Step) string {
		return replayer(t.Fatalf)
	})
	if got, err := os.ReadFile(f); err != nil || string(got) != script {
		t.Fatalf("the script changed on replay (%v)", err)
	}
}

// TestScriptChecksTheReplay: a path that the exploration says ends in a
// violation must end in it on replay, or Script refuses to write it.
func TestScriptChecksTheReplay(t *testing.T) {
	c, _ := Lookup("2x1-tiny")
	c, _ = c.Mutated("no-valid-check")
	r, err := Explore(context.Background(), c)
	if err != nil || r.Violation == nil {
		t.Fatalf("%v %v", r, err)
	}
	if _, err := Script(c, r.Path[:len(r.Path)-1], r.Violation); err == nil {
		t.Fatal("Script wrote a path that does not reach its violation")
	}
}

// TestClonesAreReplays: a state the exploration reached by cloning its
// parent (machines shared until one steps) is the state a run of its path
// from the start reaches, key for key; checked for one state in 50 of the
// tiny configuration (complete), of the one with faults, to depth 12,
// and of three with the scheduler machine (its ledger, its prunes, its
// supervisor's records) to their bounds, of the one with the clock guard
// and a stepped wall clock to depth 15, of the one of Groups (cloned
// by deepCopy, the store too) and the one of balanced Groups to depth 16,
// and of the two with a preference (a machine's preference state copied
// when it steps) to depths 12 and 16.
func TestClonesAreReplays(t *testing.T) {
	for _, n := range []string{"2x1-tiny", "2x1", "sched-2x1-tiny", "sched-2x1-prune", "sched-2x1-supervisor", "sched-2x1-clock", "group-2x1", "group-2x2-balance", "2x1-prefer", "sched-2x1-prefer", "sched-2x1-supervisor-late", "group-2x1-forge"} {
		c, _ := Lookup(n)
		switch n {
		case "2x1-prefer":
			c.MaxDepth = 12
		case "sched-2x1-prefer":
			c.MaxDepth = 16
		case "2x1":
			c.MaxDepth = 12
		case "sched-2x1-clock":
			c.MaxDepth = 15
		case "group-2x1":
			c.MaxDepth = 16
		case "group-2x2-balance":
			c.MaxDepth = 16
		case "sched-2x1-supervisor-late":
			c.MaxDepth = 14
		case "group-2x1-forge":
			c.MaxDepth = 9
		}
		checked, count := 0, 0
		c.visit = func(k key, p func() []Event) {
			if count++; count%50 != 0 {
				return
			}
			cc := c
			w := newWorld(&cc, nil)
			for _, ev := range p() {
				if err := w.do(ev, nil); err != nil {
					t.Fatalf("%s: replay: %v", n, err)
				}
			}
			if w.key(&hasher{}) != k {
				t.Fatalf("%s: the replay of %v reaches another state", n, p())
			}
			checked++
		}
		r, err := Explore(context.Background(), c)
		if err != nil || r.Violation != nil {
			t.Fatalf("%v %v", r, err)
		}
		if checked < 100 {
			t.Fatalf("%s: only %d states checked", n, checked)
		}
		t.Logf("%s: %d states replayed", n, checked)
	}
}

// TestFeedGapsAreReplays explores group-2x1-forge with a feed gap in
// the budget (no configuration has one yet) a few events deep: the
// feed's events close and open it, no invariant breaks, and states
// reached by copies are those a replay of their paths reaches.
func TestFeedGapsAreReplays(t *testing.T) {
	c, _ := Lookup("group-2x1-forge")
	g := *c.Group
	g.Feed = &Feed{Gaps: 1, Forges: 1}
	c.Group, c.MaxDepth = &g, 7
	kinds := map[kind]int{}
	count := 0
	c.visit = func(k key, p func() []Event) {
		path := p()
		for _, ev := range path {
			kinds[ev.Kind]++
		}
		if count++; count%10 != 0 {
			return
		}
		cc := c
		w := newWorld(&cc, nil)
		for _, ev := range path {
			if err := w.do(ev, nil); err != nil {
				t.Fatalf("replay: %v", err)
			}
		}
		if w.key(&hasher{}) != k {
			t.Fatalf("the replay of %v reaches another state", path)
		}
	}
	r, err := Explore(context.Background(), c)
	if err != nil || r.Violation != nil {
		t.Fatalf("%v %v", r, err)
	}
	for _, k := range []kind{evNote, evGap, evHeal, evForge} {
		if kinds[k] == 0 {
			t.Errorf("no path with a %s event among %d states", k, r.States)
		}
	}
}
