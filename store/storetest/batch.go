package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

func testSwapMany(t *testing.T, open func() store.Store) {
	s := open()
	a := mustSwap(t, s, store.Swap{Record: acquire("m1", "n1", 1), Event: store.Acquired})
	res, err := s.SwapMany(ctx(t), []store.Swap{
		{Expect: a.Version, Record: a},
		{Expect: 12345, Record: acquire("m2", "n1", 1)},
		{Record: acquire("m3", "n1", 1), Event: store.Acquired},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].Err != nil || !errors.Is(res[1].Err, store.ErrConflict) || res[2].Err != nil {
		t.Fatalf("SwapMany results = %+v", res)
	}
	if res[0].Record.Version == a.Version {
		t.Fatal("renewal in a batch kept the old version")
	}
	if _, err := s.Get(ctx(t), "m2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a conflicting swap in a batch was applied: %v", err)
	}
	evs, _ := s.History(ctx(t), "m3", 0, 0)
	if len(evs) != 1 {
		t.Fatalf("batched acquisition wrote %d log events", len(evs))
	}
}

func testGetMany(t *testing.T, open func() store.Store) {
	s := open()
	a := mustSwap(t, s, store.Swap{Record: acquire("g1", "n1", 1), Event: store.Acquired})
	b := mustSwap(t, s, store.Swap{Record: acquire("g3", "n2", 4), Event: store.Acquired})
	res, err := s.GetMany(ctx(t), []string{"g3", "g2", "g1", "g3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0].Err != nil || res[0].Record.Version != b.Version || res[0].Record.Token != 4 ||
		!errors.Is(res[1].Err, store.ErrNotFound) ||
		res[2].Err != nil || res[2].Record.Version != a.Version || res[2].Record.Holder != "n1" ||
		res[3].Err != nil || res[3].Record.Version != b.Version {
		t.Fatalf("GetMany results = %+v", res)
	}
	if res, err := s.GetMany(ctx(t), nil); err != nil || len(res) != 0 {
		t.Fatalf("GetMany(nil) = %v, %v", res, err)
	}
}

// testManyNames acquires, renews through a session and reads back a
// thousand names in batches: what a process holding many names does every
// renew interval and at a bulk takeover.
func testManyNames(t *testing.T, open func() store.Store) {
	s := open()
	sess := mustSwap(t, s, store.Swap{Record: session("n1")})
	const n = 1000
	names := make([]string, n)
	swaps := make([]store.Swap, n)
	for i := range names {
		names[i] = fmt.Sprintf("shard-%04d", i)
		swaps[i] = store.Swap{Record: heldThrough(names[i], sess, 1), Event: store.Acquired}
	}
	res, err := s.SwapMany(ctx(t), swaps)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("swap %d of %d: %v", i, n, r.Err)
		}
	}
	got, err := s.GetMany(ctx(t), names)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if r.Err != nil || r.Record.Session != sess.Name || r.Record.Version != res[i].Record.Version {
			t.Fatalf("GetMany result %d = %+v, want %+v", i, r, res[i].Record)
		}
	}
	// A takeover batch: every name at its version, token + 1.
	other := mustSwap(t, s, store.Swap{Record: session("n2")})
	for i := range swaps {
		swaps[i] = store.Swap{Expect: got[i].Record.Version, Record: heldThrough(names[i], other, 2), Event: store.TakenOver}
	}
	swaps[7].Expect++ // one stale expectation: only it fails
	res, err = s.SwapMany(ctx(t), swaps)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if (i == 7) != (r.Err != nil) || (i == 7 && !errors.Is(r.Err, store.ErrConflict)) {
			t.Fatalf("takeover swap %d: %v", i, r.Err)
		}
	}
	if evs, _ := s.History(ctx(t), names[n-1], 0, 0); len(evs) != 2 || evs[1].Kind != store.TakenOver || evs[1].Token != 2 {
		t.Fatalf("log of %s after a batched takeover = %+v", names[n-1], evs)
	}
}

// testSwapManyTakes moves many records of one session to another in one
// SwapMany, as a bulk takeover does (and, again, frees many records in
// one, as a release of many names does), some of the swaps refused for
// each reason a take can be (the record moved on, it does not exist, the
// token would go back), and checks every outcome, record and log event
// against the same swaps made one Swap at a time on another store: a
// backend's batched path for takes (one statement for all of them) must
// decide exactly as a single swap does.
func testSwapManyTakes(t *testing.T, open func() store.Store) {
	for _, release := range []bool{false, true} {
		kind := "take"
		if release {
			kind = "free"
		}
		t.Run(kind, func(t *testing.T) { testSwapManyKind(t, open, kind, release) })
	}
}

func testSwapManyKind(t *testing.T, open func() store.Store, kind string, release bool) {
	const n = 24
	from := store.SessionPrefix + "n1/n1-1/1"
	to := store.SessionPrefix + "n2/n2-1/1"
	next := func(name string, token uint64) (store.Record, store.EventKind) {
		if release {
			return store.Record{Name: name, Token: token, Lease: 3 * time.Second}, store.Released
		}
		return store.Record{Name: name, Holder: "n2", Incarnation: "n2-1", Session: to, Token: token + 1, Lease: 3 * time.Second}, store.TakenOver
	}
	// The two stores may be one (open gives the same store again on some
	// backends): each has its own names.
	batch := func(s store.Store, prefix string) []store.Swap {
		var swaps []store.Swap
		for i := range n {
			name := fmt.Sprintf("%s-%02d", prefix, i)
			if i == 9 {
				rec, ev := next(name, 1)
				swaps = append(swaps, store.Swap{Expect: 7, Event: ev, Record: rec})
				continue // never written: a conflict
			}
			r := acquire(name, "n1", uint64(2+i%3))
			r.Session = from
			cur := mustSwap(t, s, store.Swap{Record: r, Event: store.Acquired})
			read := cur
			switch i {
			case 3: // renewed after it was read: a conflict
				mustSwap(t, s, store.Swap{Expect: cur.Version, Record: cur})
			case 5: // its token raised after it was read (an operator's floor): a conflict
				up := cur
				up.Token += 5
				mustSwap(t, s, store.Swap{Expect: cur.Version, Record: up, Event: store.FloorRaised})
			}
			rec, ev := next(name, read.Token)
			if i == 7 { // a token that would go back: invalid
				rec.Token = read.Token - 1
			}
			swaps = append(swaps, store.Swap{Expect: read.Version, Record: rec, Event: ev})
		}
		return swaps
	}
	many, one := open(), open()
	manyName := func(i int) string { return fmt.Sprintf("%smany-%02d", kind, i) }
	oneName := func(i int) string { return fmt.Sprintf("%sone-%02d", kind, i) }
	manySwaps, oneSwaps := batch(many, kind+"many"), batch(one, kind+"one")
	res, err := many.SwapMany(ctx(t), manySwaps)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != n {
		t.Fatalf("SwapMany of %d swaps returned %d results", n, len(res))
	}
	outcome := func(err error) string {
		switch {
		case err == nil:
			return "applied"
		case errors.Is(err, store.ErrConflict):
			return "conflict"
		case errors.Is(err, store.ErrInvalid):
			return "invalid"
		case errors.Is(err, store.ErrNotFound):
			return "not found"
		}
		return "error " + err.Error()
	}
	for i, sw := range oneSwaps {
		rec, err := one.Swap(ctx(t), sw)
		name := manyName(i)
		if got, want := outcome(res[i].Err), outcome(err); got != want {
			t.Fatalf("%s: SwapMany %s (%v), one Swap %s (%v)", name, got, res[i].Err, want, err)
		}
		if err != nil {
			continue
		}
		got := res[i].Record
		if got.Holder != rec.Holder || got.Token != rec.Token || got.Session != rec.Session || got.Incarnation != rec.Incarnation {
			t.Fatalf("%s: SwapMany wrote %+v, one Swap %+v", name, got, rec)
		}
		if got.Version <= manySwaps[i].Expect {
			t.Fatalf("%s: written at version %d, not above %d", name, got.Version, manySwaps[i].Expect)
		}
		stored, err := many.Get(ctx(t), name)
		if err != nil || stored.Version != got.Version || stored.Token != got.Token || stored.Session != got.Session || stored.Holder != got.Holder {
			t.Fatalf("%s: stored %+v (%v), SwapMany returned %+v", name, stored, err, got)
		}
	}
	for i := range n {
		a, errA := many.Get(ctx(t), manyName(i))
		b, errB := one.Get(ctx(t), oneName(i))
		if outcome(errA) != outcome(errB) || a.Holder != b.Holder || a.Token != b.Token || a.Session != b.Session {
			t.Fatalf("%s: after SwapMany %+v (%v), after one Swap at a time %+v (%v)", manyName(i), a, errA, b, errB)
		}
		ha, _ := many.History(ctx(t), manyName(i), 0, 0)
		hb, _ := one.History(ctx(t), oneName(i), 0, 0)
		if len(ha) != len(hb) {
			t.Fatalf("%s: %d log events after SwapMany, %d after one Swap at a time", manyName(i), len(ha), len(hb))
		}
		for k := range ha {
			x, y := ha[k], hb[k]
			if x.Seq != y.Seq || x.Kind != y.Kind || x.Holder != y.Holder || x.Token != y.Token {
				t.Fatalf("%s: log event %d is %+v after SwapMany, %+v after one Swap at a time", manyName(i), k, x, y)
			}
		}
	}
	// A record SwapMany wrote goes on from the version it returned.
	again := res[0].Record
	if release {
		again, _ = next(again.Name, again.Token)
		again.Token = res[0].Record.Token + 1
	}
	if _, err := many.Swap(ctx(t), store.Swap{Expect: res[0].Record.Version, Record: again}); err != nil {
		t.Fatalf("a swap at the version SwapMany returned: %v", err)
	}
}

// testConcurrentTakes races batched takeovers of the same names: several
// handles each take every name of a dead session, in batches sent at
// once, each handle with the batches in another order and a stale
// expectation for a share of the names (refused whatever the others
// do). Every name must be taken by exactly one handle, every other swap
// of it refused with ErrConflict, and its log must hold one takeover;
// no batch may fail as a whole (a backend that locks the records of
// racing batches in different orders deadlocks here, and the database
// aborts one).
func testConcurrentTakes(t *testing.T, open func() store.Store) {
	const (
		n        = 240
		batch    = 40
		handles  = 4
		prefix   = "race-"
		batches  = n / batch
		staleMod = handles + 1
	)
	s := open()
	dead := mustSwap(t, s, store.Swap{Record: session("n0")})
	held := make([]store.Swap, n)
	for i := range held {
		held[i] = store.Swap{Record: heldThrough(fmt.Sprintf("%s%03d", prefix, i), dead, 3), Event: store.Acquired}
	}
	res, err := s.SwapMany(ctx(t), held)
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]store.Record, n)
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("acquire %d: %v", i, r.Err)
		}
		recs[i] = r.Record
	}
	type outcome struct {
		handle int
		err    error
	}
	outcomes := make([][]outcome, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for h := range handles {
		st := open()
		sess := mustSwap(t, st, store.Swap{Record: session(fmt.Sprintf("n%d", h+1))})
		for b := range batches {
			k := (b + h*batches/handles) % batches // each handle starts elsewhere
			wg.Go(func() {
				var swaps []store.Swap
				var idx []int
				for i := k * batch; i < (k+1)*batch; i++ {
					j := i
					if h%2 == 1 {
						j = (k+1)*batch - 1 - (i - k*batch) // this handle's batch backwards
					}
					sw := store.Swap{Expect: recs[j].Version, Record: heldThrough(recs[j].Name, sess, recs[j].Token+1), Event: store.TakenOver}
					if j%staleMod == h {
						sw.Expect = recs[j].Version - 1 // read long ago: refused
					}
					swaps, idx = append(swaps, sw), append(idx, j)
				}
				<-start
				res, err := st.SwapMany(ctx(t), swaps)
				if err != nil {
					t.Errorf("handle %d: a batch failed as a whole: %v", h, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for x, r := range res {
					outcomes[idx[x]] = append(outcomes[idx[x]], outcome{h, r.Err})
				}
			})
		}
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, got := range outcomes {
		winner := -1
		for _, o := range got {
			switch {
			case o.err == nil && winner >= 0:
				t.Fatalf("%s taken by handles %d and %d", recs[i].Name, winner, o.handle)
			case o.err == nil:
				winner = o.handle
			case !errors.Is(o.err, store.ErrConflict):
				t.Fatalf("%s, handle %d: %v, want ErrConflict", recs[i].Name, o.handle, o.err)
			}
		}
		if len(got) != handles || winner < 0 {
			t.Fatalf("%s: %d outcomes, winner %d; want %d outcomes and one winner", recs[i].Name, len(got), winner, handles)
		}
		if winner == i%staleMod {
			t.Fatalf("%s taken by handle %d through a stale expectation", recs[i].Name, winner)
		}
		evs, err := s.History(ctx(t), recs[i].Name, 0, 0)
		if err != nil || len(evs) != 2 || evs[1].Kind != store.TakenOver || evs[1].Token != recs[i].Token+1 || evs[1].Holder != fmt.Sprintf("n%d", winner+1) {
			t.Fatalf("log of %s (won by handle %d) = %+v, %v", recs[i].Name, winner, evs, err)
		}
	}
}
