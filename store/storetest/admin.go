package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// putRuns writes rows of job with keys p00..p(n-1), in the given states
// (cycled), unfenced. Every fourth row is Manual when manual is true.
func putRuns(t *testing.T, s store.Store, job string, n int, states ...store.RunState) {
	t.Helper()
	for i := 0; i < n; i++ {
		r := store.Run{Job: job, Period: fmt.Sprintf("p%02d", i), State: states[i%len(states)], Holder: "a", Attempt: 1}
		if _, err := s.SwapRun(ctx(t), store.RunSwap{Run: r}); err != nil {
			t.Fatalf("SwapRun %s: %v", r.Period, err)
		}
	}
}

func periods(rs []store.Run) string {
	out := ""
	for _, r := range rs {
		out += r.Period + " "
	}
	return out
}

func testRecentRuns(t *testing.T, open func() store.Store) {
	s := open()
	putRuns(t, s, "job", 5, store.Done)
	putRuns(t, s, "other", 2, store.Done)
	for _, tc := range []struct {
		before string
		limit  int
		want   string
	}{
		{"", 0, "p04 p03 p02 p01 p00 "},
		{"", 2, "p04 p03 "},
		{"p03", 0, "p02 p01 p00 "},
		{"p03", 1, "p02 "},
		{"p00", 0, ""},
	} {
		got, err := s.RecentRuns(ctx(t), "job", tc.before, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if periods(got) != tc.want {
			t.Errorf("RecentRuns(before %q, limit %d) = %q, want %q", tc.before, tc.limit, periods(got), tc.want)
		}
		for _, r := range got {
			if r.Job != "job" || r.State != store.Done || r.Version == 0 {
				t.Errorf("row %+v", r)
			}
		}
	}
}

func testPruneRuns(t *testing.T, open func() store.Store) {
	s := open()
	// p00 done, p01 failed, p02 skipped, p03 done, ... p09 done; p10 is
	// manual and pending.
	putRuns(t, s, "job", 10, store.Done, store.Failed, store.Skipped)
	manual := store.Run{Job: "job", Period: "p10", State: store.Done, Manual: true}
	if _, err := s.SwapRun(ctx(t), store.RunSwap{Run: manual}); err != nil {
		t.Fatal(err)
	}
	done := []store.RunState{store.Done, store.Skipped}
	if _, err := s.PruneRuns(ctx(t), store.Prune{Job: "job", Before: "p99", States: []store.RunState{store.Running}, Limit: 5}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("prune of running rows: %v, want ErrInvalid", err)
	}
	if _, err := s.PruneRuns(ctx(t), store.Prune{Job: "job", Before: "p99", States: done}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("prune without a limit: %v, want ErrInvalid", err)
	}
	// Batches: at most Limit rows, oldest first, only the states asked.
	n, err := s.PruneRuns(ctx(t), store.Prune{Job: "job", Before: "p05", States: done, Limit: 2})
	if err != nil || n != 2 {
		t.Fatalf("prune: %d, %v; want 2", n, err)
	}
	rest, _ := s.Runs(ctx(t), "job", "", 0)
	if got := periods(rest); got != "p01 p03 p04 p05 p06 p07 p08 p09 p10 " {
		t.Fatalf("after a batch of 2: %s", got)
	}
	// Fenced: the token must be the election's.
	mustSwap(t, s, store.Swap{Record: acquire("job", "a", 4), Event: store.Acquired})
	_, err = s.PruneRuns(ctx(t), store.Prune{Job: "job", Before: "p99", States: done, Limit: 100, Fenced: true, Token: 3})
	if !errors.Is(err, store.ErrStaleToken) {
		t.Fatalf("stale fenced prune: %v, want store.ErrStaleToken", err)
	}
	// Everything before p99 that is done or skipped, manual rows too,
	// except the newest scheduled row (p09), which planning resumes from.
	n, err = s.PruneRuns(ctx(t), store.Prune{Job: "job", Before: "p99", States: done, Limit: 100, Fenced: true, Token: 4})
	if err != nil || n != 5 {
		t.Fatalf("fenced prune: %d, %v; want 5", n, err)
	}
	rest, _ = s.Runs(ctx(t), "job", "", 0)
	if got := periods(rest); got != "p01 p04 p07 p09 " {
		t.Fatalf("after pruning done and skipped rows: %s", got)
	}
	// Keep: only rows beyond the Keep newest may go (p01 p04 p07 p09 are
	// left; with Keep 2, p01 and p04 are past it, and only failed rows
	// are asked for).
	n, err = s.PruneRuns(ctx(t), store.Prune{Job: "job", States: []store.RunState{store.Failed}, Limit: 100, Keep: 2})
	if err != nil || n != 2 {
		t.Fatalf("prune keeping 2 rows: %d, %v; want 2", n, err)
	}
	rest, _ = s.Runs(ctx(t), "job", "", 0)
	if got := periods(rest); got != "p07 p09 " {
		t.Fatalf("after pruning beyond the 2 newest: %s", got)
	}
	if n, err := s.PruneRuns(ctx(t), store.Prune{Job: "job", States: []store.RunState{store.Failed}, Limit: 100, Keep: 5}); err != nil || n != 0 {
		t.Fatalf("prune keeping more rows than there are: %d, %v", n, err)
	}
	if _, err := s.PruneRuns(ctx(t), store.Prune{Job: "job", States: []store.RunState{store.Failed}, Limit: 100, Keep: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("prune with a negative keep: %v, want ErrInvalid", err)
	}
	n, err = s.PruneRuns(ctx(t), store.Prune{Job: "job", Before: "p99", States: []store.RunState{store.Failed}, Limit: 100})
	if err != nil || n != 1 {
		t.Fatalf("prune of failed rows: %d, %v; want 1", n, err)
	}
	rest, _ = s.Runs(ctx(t), "job", "", 0)
	if got := periods(rest); got != "p09 " {
		t.Fatalf("after pruning failed rows: %s (the newest scheduled row stays)", got)
	}
}

func testUpdateJob(t *testing.T, open func() store.Store) {
	s := open()
	c := ctx(t)
	if _, err := s.UpdateJob(c, store.JobUpdate{Name: "job", Expect: "a", Schedule: "b"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of a missing job: %v, want ErrNotFound", err)
	}
	j, err := s.EnsureJob(c, store.Job{Name: "job", Schedule: "a"})
	if err != nil {
		t.Fatal(err)
	}
	// No election record yet: the job changes, no event.
	got, err := s.UpdateJob(c, store.JobUpdate{Name: "job", Expect: "a", Schedule: "b"})
	if err != nil || got.Schedule != "b" || !got.Created.Equal(j.Created) {
		t.Fatalf("UpdateJob = %+v, %v", got, err)
	}
	if _, err := s.UpdateJob(c, store.JobUpdate{Name: "job", Expect: "a", Schedule: "c"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("update expecting an old schedule: %v, want ErrConflict", err)
	}
	rec := mustSwap(t, s, store.Swap{Record: acquire("job", "a", 1), Event: store.Acquired})
	got, err = s.UpdateJob(c, store.JobUpdate{Name: "job", Expect: "b", Schedule: "c"})
	if err != nil || got.Schedule != "c" {
		t.Fatalf("UpdateJob = %+v, %v", got, err)
	}
	if again, _ := open().EnsureJob(c, store.Job{Name: "job", Schedule: "x"}); again.Schedule != "c" {
		t.Errorf("stored schedule %q, want c", again.Schedule)
	}
	now, err := s.Get(c, "job")
	if err != nil {
		t.Fatal(err)
	}
	if now.Version == rec.Version || now.Holder != rec.Holder || now.Token != rec.Token || now.Incarnation != rec.Incarnation {
		t.Errorf("record after a reschedule %+v, before %+v: want a new version and the same values", now, rec)
	}
	// The holder's renewal with the old version conflicts.
	if _, err := s.Swap(c, store.Swap{Expect: rec.Version, Record: rec}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("renewal after a reschedule: %v, want ErrConflict", err)
	}
	evs, err := s.History(c, "job", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[1].Kind != store.Rescheduled || evs[1].Detail != "b -> c" || evs[1].Seq != 2 || evs[1].Token != 1 || evs[1].Holder != "a" {
		t.Fatalf("history %+v", evs)
	}
	if evs[0].Detail != "" {
		t.Errorf("an election event has detail %q", evs[0].Detail)
	}
	// The log goes on from there.
	rel := now
	rel.Holder, rel.Incarnation = "", ""
	mustSwap(t, s, store.Swap{Expect: now.Version, Record: rel, Event: store.Released})
	if evs, _ := s.History(c, "job", 2, 0); len(evs) != 1 || evs[0].Seq != 3 || evs[0].Kind != store.Released {
		t.Fatalf("history after the reschedule %+v", evs)
	}
}

func testCandidates(t *testing.T, open func() store.Store) {
	s := open()
	c := ctx(t)
	if cs, err := s.Candidates(c, "job"); err != nil || len(cs) != 0 {
		t.Fatalf("Candidates of a new name: %v, %v", cs, err)
	}
	if err := s.Heartbeat(c, store.Candidate{Name: "job"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("heartbeat without a node: %v, want ErrInvalid", err)
	}
	for _, n := range []string{"b", "a"} {
		if err := s.Heartbeat(c, store.Candidate{Name: "job", Node: n, Incarnation: n + "1", Every: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Heartbeat(c, store.Candidate{Name: "other", Node: "z", Incarnation: "z1", Every: time.Second}); err != nil {
		t.Fatal(err)
	}
	first, err := s.Candidates(c, "job")
	if err != nil || len(first) != 2 || first[0].Node != "a" || first[1].Node != "b" {
		t.Fatalf("Candidates = %+v, %v", first, err)
	}
	a := first[0]
	if a.Name != "job" || a.Incarnation != "a1" || a.Every != time.Second || a.Since.IsZero() || a.Seen.Before(a.Since) || a.Age < 0 {
		t.Errorf("candidate %+v", a)
	}
	time.Sleep(20 * time.Millisecond) // store times are real: let them move
	// A refresh by the same incarnation keeps Since; a new incarnation
	// starts again.
	if err := open().Heartbeat(c, store.Candidate{Name: "job", Node: "a", Incarnation: "a1", Every: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := s.Heartbeat(c, store.Candidate{Name: "job", Node: "b", Incarnation: "b2", Every: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	cs, _ := s.Candidates(c, "job")
	if len(cs) != 2 || !cs[0].Since.Equal(a.Since) || !cs[0].Seen.After(a.Seen) {
		t.Errorf("refreshed %+v, first seen %+v", cs[0], a)
	}
	if cs[1].Incarnation != "b2" || !cs[1].Since.After(first[1].Since) || cs[1].Every != 2*time.Second {
		t.Errorf("new incarnation %+v, before %+v", cs[1], first[1])
	}
	if cs[0].Stale() {
		t.Errorf("a fresh candidate is stale: %+v", cs[0])
	}
	if !(store.Candidate{Every: time.Second, Age: 4 * time.Second}).Stale() {
		t.Error("a candidate four intervals old is not stale")
	}
	if err := s.Heartbeat(c, store.Candidate{Name: "job", Node: "a", Gone: true}); err != nil {
		t.Fatal(err)
	}
	if cs, _ := s.Candidates(c, "job"); len(cs) != 1 || cs[0].Node != "b" {
		t.Errorf("after a withdrawal: %+v", cs)
	}
}

// testCandidateAttrs: a candidate's attributes are kept as they were
// written, whatever bytes they hold (the store judges nothing: its readers
// parse them), replaced by each refresh, and refused above
// store.MaxAttrs.
func testCandidateAttrs(t *testing.T, open func() store.Store) {
	s := open()
	c := ctx(t)
	beat := func(node, attrs string) error {
		return s.Heartbeat(c, store.Candidate{Name: "job", Node: node, Incarnation: node + "1", Every: time.Second, Attrs: attrs})
	}
	damaged := "weight=\x1b[31m10 zone=\u202eeu-1\n"
	for node, attrs := range map[string]string{"a": "version=1.4.2 weight=10 zone=eu-1", "b": damaged, "c": ""} {
		if err := beat(node, attrs); err != nil {
			t.Fatalf("heartbeat of %s with %q: %v", node, attrs, err)
		}
	}
	cs, err := open().Candidates(c, "job")
	if err != nil || len(cs) != 3 {
		t.Fatalf("Candidates = %+v, %v", cs, err)
	}
	if cs[0].Attrs != "version=1.4.2 weight=10 zone=eu-1" || cs[1].Attrs != damaged || cs[2].Attrs != "" {
		t.Errorf("attributes read back: %q, %q, %q", cs[0].Attrs, cs[1].Attrs, cs[2].Attrs)
	}
	// A refresh replaces them, by the same incarnation or another.
	if err := beat("a", "version=1.5.0 weight=10 zone=eu-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Heartbeat(c, store.Candidate{Name: "job", Node: "b", Incarnation: "b2", Every: time.Second}); err != nil {
		t.Fatal(err)
	}
	cs, _ = s.Candidates(c, "job")
	if len(cs) != 3 || cs[0].Attrs != "version=1.5.0 weight=10 zone=eu-1" || cs[1].Attrs != "" {
		t.Errorf("after the refreshes: %+v", cs)
	}
	for _, bad := range []string{"zone=a\x00", "zone=\xff"} {
		if err := beat("d", bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("heartbeat with the attributes %q: %v, want ErrInvalid", bad, err)
		}
	}
	long := strings.Repeat("k", store.MaxAttrs+1)
	if err := beat("d", long); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("heartbeat with %d bytes of attributes: %v, want ErrInvalid", len(long), err)
	}
	if err := beat("d", long[1:]); err != nil {
		t.Errorf("heartbeat with store.MaxAttrs bytes of attributes: %v", err)
	}
	if cs, _ := s.Candidates(c, "job"); len(cs) != 4 || cs[3].Attrs != long[1:] {
		t.Errorf("the longest attributes were not kept: %d rows", len(cs))
	}
}
