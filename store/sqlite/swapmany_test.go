package sqlite_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
	"github.com/batonhq/baton/store/storedriver"
)

// TestSwapManyMatchesMemstore runs the same random SwapMany batches on
// the sqlite store and on memstore, the reference, and compares every
// result, record and log. The batches are of every size from one swap to
// a few hundred (so that the multi-row statements of every size are
// used), name some names several times (a later swap of a name expects
// the version the earlier one gives it, or, sometimes, the version from
// before the batch: it conflicts if the earlier one applied), and mix
// stale expectations, events and none, holders and free records. Both
// backends count versions store-wide, so the version each swap gives is
// known in advance: memstore one per write; SQLite one per write but a
// renewal, which takes the next above its record's version and the
// counter without raising the counter (see renewStmt). 40 batches in CI
// (testenv.Long), 15 otherwise (the five sizes at the statements' edges
// and ten drawn): the 40 took 7 s of CPU.
func TestSwapManyMatchesMemstore(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own file; 1 s serial
	sq := open(t, filepath.Join(t.TempDir(), "baton.db"))
	mem := memstore.New()
	backends := []store.Store{sq, mem}
	rng := rand.New(rand.NewPCG(7, 15))
	const pool = 150
	names := make([]string, pool)
	for i := range names {
		names[i] = fmt.Sprintf("d-%03d", i)
	}
	rounds := 40
	if !testenv.Long() {
		rounds = 15
	}
	t.Logf("%d batches", rounds)
	var last [2]int64 // each backend's store-wide version
	for round := range rounds {
		type plan struct {
			name   string
			stale  bool
			pre    bool // expect the version from before the batch
			holder string
			bump   uint64
			event  store.EventKind
		}
		n := 1 + rng.IntN(300)
		if round < 5 {
			n = []int{1, 63, 64, 65, 127}[round]
		}
		plans := make([]plan, n)
		for i := range plans {
			p := plan{name: names[rng.IntN(pool)], stale: rng.IntN(10) == 0, pre: rng.IntN(10) == 0, bump: uint64(rng.IntN(2))}
			p.holder = []string{"", "n1", "n2"}[rng.IntN(3)]
			p.event = []store.EventKind{"", store.Acquired, store.TakenOver, store.Released}[rng.IntN(4)]
			plans[i] = p
		}
		var results [2][]store.SwapResult
		var predicted [2][]int64 // each swap's version, if it applies
		for b, st := range backends {
			swaps := make([]store.Swap, n)
			predicted[b] = make([]int64, n)
			ver := map[string]int64{} // each name's version as the swaps before leave it
			recs := map[string]store.Record{}
			for i, p := range plans {
				cur, err := st.Get(ctx(t), p.name)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Fatal(err)
				}
				v, seen := ver[p.name]
				prev := cur // the record as the swaps before leave it
				if !seen {
					v = cur.Version
				} else {
					prev = recs[p.name]
				}
				rec := store.Record{Name: p.name, Holder: p.holder, Token: cur.Token + p.bump, Lease: 3e9}
				if p.holder != "" {
					rec.Incarnation = "i-" + p.holder
				}
				expect := v
				switch {
				case p.stale:
					expect += 1000
				case p.pre:
					expect = cur.Version
				}
				sw := store.Swap{Expect: expect, Record: rec, Event: p.event}
				if expect == v && rec.Token >= prev.Token { // it applies
					c := prev
					c.Version = v
					switch {
					case b == 1:
						last[b]++
						ver[p.name] = last[b]
					case storedriver.Renews(c, sw):
						ver[p.name] = max(last[b], v) + 1
					default:
						last[b] = max(last[b], v) + 1
						ver[p.name] = last[b]
					}
					rec.Version = ver[p.name]
					recs[p.name] = rec
					predicted[b][i] = rec.Version
				}
				swaps[i] = sw
			}
			res, err := st.SwapMany(ctx(t), swaps)
			if err != nil {
				t.Fatalf("round %d, backend %d: SwapMany: %v", round, b, err)
			}
			results[b] = res
		}
		for i := range plans {
			got, want := results[0][i], results[1][i]
			if class(got.Err) != class(want.Err) {
				t.Fatalf("round %d, swap %d of %s: sqlite %v, memstore %v", round, i, plans[i].name, got.Err, want.Err)
			}
			if (got.Err == nil) != (predicted[0][i] != 0) {
				t.Fatalf("round %d, swap %d of %s: sqlite %v, predicted to apply: %v", round, i, plans[i].name, got.Err, predicted[0][i] != 0)
			}
			if got.Err == nil && (!sameRecord(got.Record, want.Record) || got.Record.Version != predicted[0][i] || want.Record.Version != predicted[1][i]) {
				t.Fatalf("round %d, swap %d: sqlite returned %+v (version %d predicted), memstore %+v (%d)", round, i, got.Record, predicted[0][i], want.Record, predicted[1][i])
			}
		}
		for _, name := range names {
			got, gerr := sq.Get(ctx(t), name)
			want, werr := mem.Get(ctx(t), name)
			if class(gerr) != class(werr) || !sameRecord(got, want) {
				t.Fatalf("round %d: %s: sqlite %+v (%v), memstore %+v (%v)", round, name, got, gerr, want, werr)
			}
			gl, err := sq.History(ctx(t), name, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			wl, err := mem.History(ctx(t), name, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(gl) != len(wl) {
				t.Fatalf("round %d: %s: sqlite log has %d events, memstore %d", round, name, len(gl), len(wl))
			}
			for j := range gl {
				g, w := gl[j], wl[j]
				g.Time = w.Time
				if g != w {
					t.Fatalf("round %d: %s: event %d: sqlite %+v, memstore %+v", round, name, j, gl[j], wl[j])
				}
			}
		}
	}
}

// class is the contract sentinel err wraps, or nil.
func class(err error) error {
	for _, s := range []error{store.ErrConflict, store.ErrInvalid, store.ErrNotFound} {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

// sameRecord compares two records but for their version and store time,
// which each backend assigns its own way.
func sameRecord(a, b store.Record) bool {
	a.Version, a.Updated = b.Version, b.Updated
	return a == b
}
