package election

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The Group's small-set lookups (entry, observer, waitSet.index,
// loadIndex) scan a slice while the set is small and use a map past it:
// these tests hold both ways to what a map alone gives.

// TestWaitSetIndex checks a waitSet through adds and removes, below and
// past the size where it starts indexing its names, against a plain
// model: the set's order is the order of adds, each removal filled by the
// last name.
func TestWaitSetIndex(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var w waitSet
		var model []string
		for i, n := 0, rapid.IntRange(0, 200).Draw(t, "ops"); i < n; i++ {
			name := fmt.Sprintf("name-%d", rapid.IntRange(0, 30).Draw(t, "name"))
			if rapid.Bool().Draw(t, "add") {
				w.add(name)
				if !slices.Contains(model, name) {
					model = append(model, name)
				}
			} else {
				w.remove(name)
				if j := slices.Index(model, name); j >= 0 {
					model[j] = model[len(model)-1]
					model = model[:len(model)-1]
				}
			}
			if !slices.Equal(w.list(), model) {
				t.Fatalf("names %v, want %v", w.list(), model)
			}
			for j, name := range model {
				if k, ok := w.index(name); !ok || k != j {
					t.Fatalf("index(%s) = %d, %v; want %d", name, k, ok, j)
				}
			}
			if _, ok := w.index("absent"); ok {
				t.Fatal("index found a name never added")
			}
		}
	})
}

// TestGroupEntryLookup checks that entry finds every name's entry and
// none for a name the Group does not have, for 1 to 20 names (a scan to
// 8, the map past it).
func TestGroupEntryLookup(t *testing.T) {
	cfg := Config{Node: "n", Incarnation: "i", Lease: 10 * time.Second, Renew: 3 * time.Second, Margin: time.Second, Poll: time.Second, Retry: time.Second}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := NewGroup(cfg, false)
	for i := 1; i <= 20; i++ {
		g.Step(now, Start{Name: fmt.Sprintf("shard-%d", i)})
		for name, e := range g.names {
			if got := g.entry(name); got != e {
				t.Fatalf("%d names: entry(%s) is not its entry", i, name)
			}
		}
		for _, name := range []string{"", "shard-0", "shard-21", "shard-1x", "hard-1"} {
			if got := g.entry(name); got != nil {
				t.Fatalf("%d names: entry(%q) found %s", i, name, got.name)
			}
		}
	}
}

// TestLoadOf checks that a balance count's loads, found by loadOf, are
// one per node, however many nodes (a scan to 8, loadAt past it), and
// that the count's scratch is empty after doneLoads.
func TestLoadOf(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := NewGroup(Config{}, true)
		for round := 0; round < 3; round++ {
			g.loadsOut = true
			seen := map[string]*load{}
			for i, n := 0, rapid.IntRange(0, 100).Draw(t, "counts"); i < n; i++ {
				node := fmt.Sprintf("n%d", rapid.IntRange(0, 20).Draw(t, "node"))
				l := g.loadOf(node)
				l.names++
				if l.node != node {
					t.Fatalf("loadOf(%s) is %s's load", node, l.node)
				}
				seen[node] = nil
			}
			if len(g.loadBuf) != len(seen) {
				t.Fatalf("%d loads for %d nodes", len(g.loadBuf), len(seen))
			}
			for node := range seen {
				if i, ok := g.loadIndex(node); !ok || g.loadBuf[i].node != node {
					t.Fatalf("loadIndex(%s) = %d, %v", node, i, ok)
				}
			}
			g.doneLoads()
			if len(g.loadBuf) != 0 || len(g.loadAt) != 0 {
				t.Fatal("scratch left after doneLoads")
			}
		}
	})
}
