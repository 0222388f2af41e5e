package baton_test

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
	"github.com/batonhq/baton/store/sqlite"
)

// Balanced Groups share the names: one process holds all 30, a second and
// a third join and each ends with its share (10), one leaves (Close) and
// the two left share again (15 each). At every sample no name has two
// valid terms, and at the end every name's election log has rising
// tokens. On the mem: store and on SQLite (one handle per process on one
// file), on virtual time.
func TestBalancedGroupsShareNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T, dir string) store.Store
	}{
		{"mem", func() func(*testing.T, string) store.Store {
			var mem *memstore.Store
			return func(t *testing.T, _ string) store.Store {
				if mem == nil {
					mem = memstore.New()
				}
				return mem
			}
		}()},
		{"sqlite", func(t *testing.T, dir string) store.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(dir, "baton.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			synctest.Test(t, func(t *testing.T) {
				names := shardNames(30)
				join := func(node string) (*baton.Group, store.Store) {
					st := tc.open(t, dir)
					g, err := baton.NewGroup(st, baton.WithNode(node), baton.WithLease(lease), baton.WithRenew(renew),
						baton.WithClockMargin(margin), baton.WithPoll(poll), baton.WithBalance())
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { g.Close(context.Background()) })
					if err := g.Hold(t.Context(), names, nil); err != nil {
						t.Fatal(err)
					}
					return g, st
				}
				a, st := join("a")
				waitHeld(t, a, len(names), lease)
				b, _ := join("b")
				t.Logf("two processes balanced after %v", waitBalanced(t, names, []*baton.Group{a, b}, 10*lease))
				c, _ := join("c")
				t.Logf("three processes balanced after %v", waitBalanced(t, names, []*baton.Group{a, b, c}, 10*lease))
				if err := b.Close(t.Context()); err != nil {
					t.Fatal(err)
				}
				t.Logf("two processes balanced after %v once one left", waitBalanced(t, names, []*baton.Group{a, c}, 10*lease))
				for _, name := range names {
					evs, err := st.History(t.Context(), name, 0, 0)
					if err != nil {
						t.Fatal(err)
					}
					var last uint64
					for _, ev := range evs {
						acquired := ev.Holder != "" && (ev.Kind == store.Acquired || ev.Kind == store.TakenOver || ev.Kind == store.Transferred)
						if acquired && ev.Token <= last || !acquired && ev.Token != last {
							t.Fatalf("election log of %s: %s by %q with token %d after %d", name, ev.Kind, ev.Holder, ev.Token, last)
						}
						last = ev.Token
					}
				}
			})
		})
	}
}

// waitBalanced lets virtual time pass until the groups hold every name
// once between them, each N/P rounded down or up, and returns how long
// that took; at every step no name has two valid terms. It fails after
// limit.
func waitBalanced(t *testing.T, names []string, gs []*baton.Group, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	lo, hi := len(names)/len(gs), (len(names)+len(gs)-1)/len(gs)
	for {
		for _, name := range names {
			valid := 0
			for _, g := range gs {
				if tm := g.Term(name); tm != nil && tm.Valid() {
					valid++
				}
			}
			if valid > 1 {
				t.Fatalf("%s has %d valid terms", name, valid)
			}
		}
		total, ok, held := 0, true, make([]int, len(gs))
		for i, g := range gs {
			held[i] = g.Stats().Held
			total += held[i]
			ok = ok && held[i] >= lo && held[i] <= hi
		}
		if ok && total == len(names) {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("%d names held %v by %d groups after %v, want each %d to %d", len(names), held, len(gs), limit, lo, hi)
		}
		time.Sleep(poll / 2)
	}
}

// New refuses WithBalance: an Elector holds one name.
func TestElectorRefusesBalance(t *testing.T) {
	if _, err := baton.New(memstore.New(), "billing", baton.WithBalance()); err == nil {
		t.Fatal("New took WithBalance")
	}
}
