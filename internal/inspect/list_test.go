package inspect

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
	"github.com/batonhq/baton/store/storedriver"
)

// reader counts with the fallbacks of a minimal backend (storedriver):
// Summarize must count the same.
type reader struct{ store.Store }

func (r reader) GetMany(ctx context.Context, names []string) ([]store.GetResult, error) {
	return storedriver.GetMany(ctx, r.Store, names)
}

func (r reader) CountHolders(ctx context.Context, now time.Time) ([]store.HolderCount, int, error) {
	return storedriver.CountHolders(ctx, r, now)
}

func fill(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	swap := func(r store.Record) {
		t.Helper()
		if _, err := st.Swap(ctx, store.Swap{Record: r, Event: store.Acquired}); err != nil {
			t.Fatal(err)
		}
	}
	swap(store.Record{Name: store.SessionPrefix + "live", Holder: "g", Incarnation: "g1", Lease: time.Hour})
	swap(store.Record{Name: store.SessionPrefix + "dead", Holder: "h", Incarnation: "h1", Lease: time.Hour})
	rec, err := st.Get(ctx, store.SessionPrefix+"dead")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Swap(ctx, store.Swap{Expect: rec.Version, Record: store.Record{Name: rec.Name, Lease: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		swap(store.Record{Name: fmt.Sprintf("g-%02d", i), Holder: "g", Incarnation: "g1", Token: 1, Lease: time.Hour, Session: store.SessionPrefix + "live"})
	}
	for i := range 7 {
		swap(store.Record{Name: fmt.Sprintf("h-%02d", i), Holder: "h", Incarnation: "h1", Token: 1, Lease: time.Hour, Session: store.SessionPrefix + "dead"})
	}
	swap(store.Record{Name: "solo", Holder: "s", Incarnation: "s1", Token: 3, Lease: time.Hour})
	swap(store.Record{Name: "solo-dead", Holder: "s", Incarnation: "s1", Token: 3, Lease: time.Nanosecond})
	swap(store.Record{Name: "free", Token: 2})
	if _, err := st.EnsureJob(ctx, store.Job{Name: "job-only", Schedule: "every 1h"}); err != nil {
		t.Fatal(err)
	}
}

func TestListPagesAndFilters(t *testing.T) {
	st := memstore.New()
	fill(t, st)
	ctx := context.Background()
	now, err := StoreNow(ctx, st, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Millisecond)
	collect := func(q ListQuery) (names []string, pages int) {
		t.Helper()
		for {
			p, err := List(ctx, st, nil, q, now)
			if err != nil {
				t.Fatal(err)
			}
			if q.Limit > 0 && len(p.Entries) > q.Limit {
				t.Fatalf("page of %d for limit %d", len(p.Entries), q.Limit)
			}
			for _, e := range p.Entries {
				names = append(names, e.Name)
			}
			pages++
			if p.Next == "" {
				return names, pages
			}
			q.After = p.Next
		}
	}
	all, _ := collect(ListQuery{Limit: 7})
	if len(all) != 30+7+2+1+1 {
		t.Fatalf("%d names listed: %q", len(all), all)
	}
	for q, want := range map[ListQuery]int{
		{State: Held, Limit: 4}:                             31,
		{State: SessionEnded, Limit: 3}:                     7,
		{State: ProbablyDead}:                               1,
		{State: Free, Limit: 1}:                             2,
		{Holder: "h", Limit: 5}:                             7,
		{Session: store.SessionPrefix + "live", Limit: 100}: 30,
		{Prefix: "h-", State: SessionEnded, Limit: 2}:       7,
		{Prefix: "solo", Limit: 1}:                          2,
		{Holder: "nobody", Limit: 1}:                        0,
	} {
		got, _ := collect(q)
		if len(got) != want {
			t.Errorf("%+v: %d names %q; want %d", q, len(got), got, want)
		}
	}
	// A filter that matches nothing reads a bounded number of names per
	// request and hands back a cursor.
	p, err := List(ctx, st, nil, ListQuery{Holder: "nobody", Limit: 1}, now)
	if err != nil || p.Scanned > scanPages || p.Next == "" {
		t.Fatalf("a filter matching nothing: scanned %d, next %q, %v", p.Scanned, p.Next, err)
	}
	for _, bad := range []ListQuery{{Limit: -1}, {Limit: MaxLimit + 1}, {State: "sleeping"}} {
		if _, err := List(ctx, st, nil, bad, now); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	// Given names, it pages through those.
	if p, err := List(ctx, st, []string{"solo", "nope", "g-01"}, ListQuery{}, now); err != nil || len(p.Entries) != 3 || p.Entries[1].Name != "nope" || p.Entries[1].State.State != Free {
		t.Fatalf("given names: %+v, %v", p, err)
	}
}

func TestSummarize(t *testing.T) {
	st := memstore.New()
	fill(t, st)
	ctx := context.Background()
	now, err := StoreNow(ctx, st, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Millisecond)
	want := map[string]int{Held: 31, SessionEnded: 7, ProbablyDead: 1, Free: 2}
	var sums []Summary
	for _, s := range []store.Store{st, reader{st}} {
		sum, err := Summarize(ctx, s, now)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(sum.States, want) || sum.Names != 41 || sum.Sessions != 2 {
			t.Errorf("Summarize (%s): %+v; want states %v of 41 names, 2 sessions", sum.Read, sum, want)
		}
		if len(sum.Holders) != 3 || sum.Holders[0].Holder != "g" || sum.Holders[0].Names != 30 || sum.Holders[0].State != Held {
			t.Errorf("Summarize (%s): holders %+v", sum.Read, sum.Holders)
		}
		sums = append(sums, sum)
	}
	if !reflect.DeepEqual(sums[0], sums[1]) {
		t.Errorf("counted by the store %+v, by the fallbacks %+v", sums[0], sums[1])
	}
}
