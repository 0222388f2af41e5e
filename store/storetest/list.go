package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// testNames checks Names: every name with an election record or a
// registered job, sorted, each once, without session records.
func testNames(t *testing.T, open func() store.Store) {
	s := open()
	names, err := s.Names(ctx(t))
	if err != nil || len(names) != 0 {
		t.Fatalf("Names of an empty store: %q, %v", names, err)
	}
	mustSwap(t, s, store.Swap{Record: acquire("b/election", "n1", 1), Event: store.Acquired})
	mustSwap(t, s, store.Swap{Record: acquire("a job", "n1", 1), Event: store.Acquired})
	mustSwap(t, s, store.Swap{Record: store.Record{Name: store.SessionPrefix + "n1/i/1", Holder: "n1", Incarnation: "i", Lease: time.Second}})
	for _, j := range []string{"a job", "c-job"} {
		if _, err := s.EnsureJob(ctx(t), store.Job{Name: j, Schedule: "every 1h"}); err != nil {
			t.Fatal(err)
		}
	}
	names, err = s.Names(ctx(t))
	if want := []string{"a job", "b/election", "c-job"}; err != nil || !slices.Equal(names, want) {
		t.Fatalf("Names: %q, %v; want %q", names, err, want)
	}
}

// testNamesPage checks NamesPage: pages that follow each other by
// cursor, filtered by prefix, without session records unless the prefix
// asks for them.
func testNamesPage(t *testing.T, open func() store.Store) {
	s := open()
	page := func(q store.NameQuery) []string {
		t.Helper()
		names, err := s.NamesPage(ctx(t), q)
		if err != nil {
			t.Fatalf("NamesPage(%+v): %v", q, err)
		}
		return names
	}
	for _, limit := range []int{0, -1, store.MaxPage + 1} {
		if _, err := s.NamesPage(ctx(t), store.NameQuery{Limit: limit}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("NamesPage with limit %d: %v; want ErrInvalid", limit, err)
		}
	}
	if got := page(store.NameQuery{Limit: 10}); len(got) != 0 {
		t.Fatalf("a page of an empty store: %q", got)
	}
	// Names sort before and after the session records ("@session/..."),
	// a job without a record, a record that is also a job, a prefix that
	// is itself a name.
	var want []string
	for i := range 7 {
		want = append(want, fmt.Sprintf("a%d", i), fmt.Sprintf("Z%d", i))
	}
	want = append(want, "b", "b/1", "b/2", "bb", "ü-1", "0-first")
	for _, n := range want {
		mustSwap(t, s, store.Swap{Record: acquire(n, "n1", 1), Event: store.Acquired})
	}
	for _, n := range []string{"b/3-job", "a0"} {
		if _, err := s.EnsureJob(ctx(t), store.Job{Name: n, Schedule: "every 1h"}); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, "b/3-job")
	for i := range 3 {
		mustSwap(t, s, store.Swap{Record: store.Record{Name: fmt.Sprintf("%sn%d/i/1", store.SessionPrefix, i), Holder: "n", Incarnation: "i", Lease: time.Second}})
	}
	all := page(store.NameQuery{Limit: store.MaxPage})
	if !slices.Equal(sorted(all), sorted(want)) {
		t.Fatalf("one page of all: %q; want %q", all, sorted(want))
	}
	for _, limit := range []int{1, 2, 3, 5} {
		var got []string
		after := ""
		for range len(want) + 1 {
			p := page(store.NameQuery{After: after, Limit: limit})
			if len(p) > limit {
				t.Fatalf("a page of %d names for limit %d", len(p), limit)
			}
			got = append(got, p...)
			if len(p) < limit {
				break
			}
			after = p[len(p)-1]
		}
		if !slices.Equal(got, all) {
			t.Fatalf("pages of %d: %q; want %q (the order of the single page)", limit, got, all)
		}
	}
	for prefix, want := range map[string][]string{
		"b":                        {"b", "b/1", "b/2", "b/3-job", "bb"},
		"b/":                       {"b/1", "b/2", "b/3-job"},
		"ü":                        {"ü-1"},
		"c":                        nil,
		"a1":                       {"a1"},
		"@session":                 nil,
		store.SessionPrefix:        {store.SessionPrefix + "n0/i/1", store.SessionPrefix + "n1/i/1", store.SessionPrefix + "n2/i/1"},
		store.SessionPrefix + "n1": {store.SessionPrefix + "n1/i/1"},
	} {
		got := page(store.NameQuery{Prefix: prefix, Limit: 100})
		if !slices.Equal(sorted(got), want) {
			t.Errorf("prefix %q: %q; want %q", prefix, got, want)
		}
		if len(want) > 1 {
			first := page(store.NameQuery{Prefix: prefix, Limit: 1})
			rest := page(store.NameQuery{Prefix: prefix, After: first[0], Limit: 100})
			if !slices.Equal(append(first, rest...), got) {
				t.Errorf("prefix %q paged by one: %q then %q; want %q", prefix, first, rest, got)
			}
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// testCountHolders checks CountHolders: the election records grouped by
// holder, incarnation and session, silent ones counted, and the jobs
// without a record.
func testCountHolders(t *testing.T, open func() store.Store) {
	s := open()
	groups, jobs, err := s.CountHolders(ctx(t), time.Now())
	if err != nil || len(groups) != 0 || jobs != 0 {
		t.Fatalf("CountHolders of an empty store: %+v, %d, %v", groups, jobs, err)
	}
	sess := store.SessionPrefix + "n2/i/1"
	mustSwap(t, s, store.Swap{Record: store.Record{Name: sess, Holder: "n2", Incarnation: "i", Lease: 2 * time.Second}})
	for i := range 3 {
		mustSwap(t, s, store.Swap{Record: acquire(fmt.Sprintf("direct-%d", i), "n1", 1), Event: store.Acquired})
		r := acquire(fmt.Sprintf("via-%d", i), "n2", 1)
		r.Incarnation, r.Session = "i", sess
		mustSwap(t, s, store.Swap{Record: r, Event: store.Acquired})
	}
	mustSwap(t, s, store.Swap{Record: store.Record{Name: "free", Token: 4}})
	for _, j := range []string{"direct-0", "job-only", "job-only-2"} {
		if _, err := s.EnsureJob(ctx(t), store.Job{Name: j, Schedule: "every 1h"}); err != nil {
			t.Fatal(err)
		}
	}
	groups, jobs, err = s.CountHolders(ctx(t), time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if jobs != 2 {
		t.Errorf("jobs without a record: %d; want 2", jobs)
	}
	got := map[string]int{}
	for _, g := range groups {
		got[g.Holder+"/"+g.Incarnation+"/"+g.Session] = g.Names
		if g.Silent != 0 {
			t.Errorf("group %+v: silent an hour before it was written", g)
		}
	}
	want := map[string]int{"n1/n1-1/": 3, "n2/i/" + sess: 3, "//": 1}
	if !maps.Equal(got, want) {
		t.Errorf("CountHolders: %v; want %v (session records left out)", got, want)
	}
	// An hour on, every record is silent (written more than its lease
	// ago); a second after now, none of the 3s leases has run out.
	for at, silent := range map[time.Duration]bool{time.Hour: true, time.Second: false} {
		groups, _, err = s.CountHolders(ctx(t), time.Now().Add(at))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			if want := map[bool]int{true: g.Names, false: 0}[silent]; g.Silent != want && g.Holder != "" {
				t.Errorf("at now+%v: group %+v has %d silent; want %d", at, g, g.Silent, want)
			}
		}
	}
}
