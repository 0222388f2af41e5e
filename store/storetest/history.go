package storetest

import (
	"fmt"
	"testing"

	"github.com/batonhq/baton/store"
)

func testHistory(t *testing.T, open func() store.Store) {
	s := open()
	r1 := mustSwap(t, s, store.Swap{Record: acquire("h", "n1", 1), Event: store.Acquired})
	r1 = mustSwap(t, s, store.Swap{Expect: r1.Version, Record: r1}) // renewal: no event
	free := store.Record{Name: "h", Token: 1, Lease: r1.Lease}
	r2 := mustSwap(t, s, store.Swap{Expect: r1.Version, Record: free, Event: store.Released})
	r3 := mustSwap(t, s, store.Swap{Expect: r2.Version, Record: acquire("h", "n2", 2), Event: store.Acquired})
	mustSwap(t, s, store.Swap{Record: acquire("h2", "n9", 1), Event: store.Acquired})

	evs, err := s.History(ctx(t), "h", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind   store.EventKind
		holder string
		token  uint64
	}{{store.Acquired, "n1", 1}, {store.Released, "", 1}, {store.Acquired, "n2", 2}}
	if len(evs) != len(want) {
		t.Fatalf("History = %+v, want %d events", evs, len(want))
	}
	for i, w := range want {
		ev := evs[i]
		if ev.Seq != uint64(i+1) || ev.Name != "h" || ev.Kind != w.kind || ev.Holder != w.holder || ev.Token != w.token || ev.Time.IsZero() {
			t.Errorf("event %d = %+v, want seq %d %+v", i, ev, i+1, w)
		}
	}
	if evs[2].Incarnation != r3.Incarnation {
		t.Errorf("event incarnation %q, record %q", evs[2].Incarnation, r3.Incarnation)
	}
	page, _ := s.History(ctx(t), "h", 1, 1)
	if len(page) != 1 || page[0].Seq != 2 {
		t.Fatalf("History(after 1, limit 1) = %+v", page)
	}
}

// testHistoryPaging logs 17 events of one name, written by two handles in
// turn (each swapping on what the other wrote), by Swap and SwapMany,
// with renewals in between, and checks that every
// page of History (every after, limits 0 to 6) is the right slice of the
// whole log, on a third handle too.
func testHistoryPaging(t *testing.T, open func() store.Store) {
	const n = 17
	handles := []store.Store{open(), open()}
	var rec store.Record
	for i := range n {
		s := handles[i%2]
		next := acquire("hp", fmt.Sprintf("n%d", i), uint64(i/2+1))
		kind := store.Acquired
		if i%2 == 1 {
			next, kind = store.Record{Name: "hp", Token: rec.Token, Lease: rec.Lease}, store.Released
		}
		sw := store.Swap{Expect: rec.Version, Record: next, Event: kind}
		if i%3 == 0 {
			res, err := s.SwapMany(ctx(t), []store.Swap{sw})
			if err == nil {
				err = res[0].Err
			}
			if err != nil {
				t.Fatalf("SwapMany of event %d: %v", i+1, err)
			}
			rec = res[0].Record
		} else {
			rec = mustSwap(t, s, sw)
		}
		if kind == store.Acquired {
			rec = mustSwap(t, s, store.Swap{Expect: rec.Version, Record: rec}) // a renewal: no event
		}
	}
	full, err := open().History(ctx(t), "hp", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != n {
		t.Fatalf("History has %d events, want %d: %+v", len(full), n, full)
	}
	for i, ev := range full {
		want := store.Acquired
		if i%2 == 1 {
			want = store.Released
		}
		if ev.Seq != uint64(i+1) || ev.Kind != want || ev.Name != "hp" || ev.Token != uint64(i/2+1) {
			t.Fatalf("event %d = %+v, want seq %d, %s, token %d", i, ev, i+1, want, i/2+1)
		}
	}
	for after := 0; after <= n+1; after++ {
		for limit := 0; limit <= 6; limit++ {
			got, err := handles[after%2].History(ctx(t), "hp", uint64(after), limit)
			if err != nil {
				t.Fatal(err)
			}
			want := full[min(after, n):]
			if limit > 0 && len(want) > limit {
				want = want[:limit]
			}
			if len(got) != len(want) || (len(got) > 0 && (got[0].Seq != want[0].Seq || got[len(got)-1].Seq != want[len(want)-1].Seq)) {
				t.Fatalf("History(after %d, limit %d) = %d events %+v, want seqs %d..%d", after, limit, len(got), got, after+1, after+len(want))
			}
		}
	}
}
