package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// testSuccessorRefused: a store never drops a successor silently (a
// process would take a succession for granted that nobody else sees): one
// that keeps no successions refuses it; a handle that only wraps one that
// does (and does not declare store.CapSuccession itself) keeps it.
func testSuccessorRefused(t *testing.T, open func() store.Store) {
	s := open()
	if _, ok := store.SucceederOf(s); ok {
		return // RunSuccession checks what such a store does
	}
	sess := mustSwap(t, s, store.Swap{Record: session("n1")})
	other := mustSwap(t, s, store.Swap{Record: session("n2")})
	dead := store.Record{Name: sess.Name, Lease: sess.Lease, Successor: other.Name}
	// In a batch first (a runtime batches an observer's write with others).
	res, err := s.SwapMany(ctx(t), []store.Swap{{Expect: sess.Version, Record: dead}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err == nil && res[0].Record.Successor != other.Name {
		t.Fatalf("SwapMany dropped a successor: %+v", res[0].Record)
	}
	if res[0].Err == nil {
		return // kept, as a wrapped store that keeps successions does
	}
	if !errors.Is(res[0].Err, store.ErrInvalid) {
		t.Fatalf("SwapMany of a successor: %v, want ErrInvalid", res[0].Err)
	}
	rec, err := s.Swap(ctx(t), store.Swap{Expect: sess.Version, Record: dead})
	if errors.Is(err, store.ErrInvalid) {
		return
	}
	if err != nil || rec.Successor != other.Name {
		t.Fatalf("a successor was neither refused nor kept: %+v, %v", rec, err)
	}
	if got, err := s.Get(ctx(t), sess.Name); err != nil || got.Successor != other.Name {
		t.Fatalf("a successor was taken and then lost: %+v, %v", got, err)
	}
}

// RunSuccession runs the conformance cases of store.Succeeder against the
// backend made by f, whose stores must declare store.CapSuccession and
// implement it. Run calls it for a backend that declares successions; a
// backend's tests need not.
func RunSuccession(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, h store.Succeeder)
	}{
		{"PassedOn", testSuccessionPassedOn},
		{"StaleWritesConflict", testSuccessionStaleWrites},
		{"FencedWithResolvedToken", testSuccessionFenced},
		{"LogOfSuccession", testSuccessionLog},
		{"DeleteKeepsReferenced", testSuccessionDelete},
		{"InvalidSuccessors", testSuccessionInvalid},
		{"Chain", testSuccessionChain},
		{"Settle", testSuccessionSettle},
		{"CountHolders", testSuccessionCountHolders},
		{"SuspendLogsAfterSuccession", testSuccessionSuspend},
		{"ReadDerived", testSuccessionReadDerived},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := f(t)()
			t.Cleanup(func() { s.Close() })
			h, ok := store.SucceederOf(s)
			if !ok {
				_, has := s.(store.Succeeder)
				t.Fatalf("%T does not keep successions: it declares %v (Capabilities), and implements store.Succeeder: %v", s, s.Capabilities(), has)
			}
			tc.fn(t, s, h)
		})
	}
}

// passOn makes n1's session hold name at token 5, n2's session live, and
// ends n1's session with n2's as its successor. It returns the name's
// stored record, n1's and n2's sessions, and the dead record.
func passOn(t *testing.T, s store.Store, name string) (held, s1, s2, dead store.Record) {
	t.Helper()
	s1 = mustSwap(t, s, store.Swap{Record: session("n1")})
	s2 = mustSwap(t, s, store.Swap{Record: session("n2")})
	held = mustSwap(t, s, store.Swap{Record: heldThrough(name, s1, 5), Event: store.Acquired})
	dead = mustSwap(t, s, store.Swap{Expect: s1.Version, Record: store.Record{Name: s1.Name, Lease: s1.Lease, Successor: s2.Name}})
	return held, s1, s2, dead
}

func testSuccessionPassedOn(t *testing.T, s store.Store, h store.Succeeder) {
	held, s1, s2, dead := passOn(t, s, "tenant-1")
	if dead.Successor != s2.Name || !dead.Free() {
		t.Fatalf("the dead session as stored = %+v", dead)
	}
	got, err := s.Get(ctx(t), "tenant-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Holder != "n2" || got.Session != s2.Name || got.Via != s1.Name || got.Token != 6 || got.Version <= held.Version {
		t.Fatalf("Get after the succession = %+v, want held by n2 through %s via %s at token 6, version above %d", got, s2.Name, s1.Name, held.Version)
	}
	many, err := s.GetMany(ctx(t), []string{"tenant-1"})
	if err != nil || many[0].Err != nil || many[0].Record != got {
		t.Fatalf("GetMany = %+v, %v; want %+v", many, err, got)
	}
	list, err := h.HeldThrough(ctx(t), s1.Name, "", 0)
	if err != nil || len(list) != 1 || list[0] != got {
		t.Fatalf("HeldThrough(%s) = %+v, %v; want [%+v]", s1.Name, list, err, got)
	}
	if list, err := h.HeldThrough(ctx(t), s1.Name, "tenant-1", 0); err != nil || len(list) != 0 {
		t.Fatalf("HeldThrough after the last name = %+v, %v", list, err)
	}
	// The successor writes the name: it is stored as it was read.
	next := got
	next.Via = ""
	w := mustSwap(t, s, store.Swap{Expect: got.Version, Record: next})
	if w.Session != s2.Name || w.Token != 6 || w.Via != "" {
		t.Fatalf("the successor's write = %+v", w)
	}
	if list, err := h.HeldThrough(ctx(t), s1.Name, "", 0); err != nil || len(list) != 0 {
		t.Fatalf("HeldThrough of the dead session after the rewrite = %+v, %v", list, err)
	}
}

func testSuccessionStaleWrites(t *testing.T, s store.Store, h store.Succeeder) {
	held, _, _, _ := passOn(t, s, "tenant-1")
	// The dead holder's late release, prepared from its own read.
	release := store.Record{Name: "tenant-1", Token: held.Token, Lease: held.Lease}
	if _, err := s.Swap(ctx(t), store.Swap{Expect: held.Version, Record: release, Event: store.Released}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the dead holder's release after the succession: %v, want ErrConflict", err)
	}
	// A contender's take from a read made before the succession.
	s3 := mustSwap(t, s, store.Swap{Record: session("n3")})
	take := heldThrough("tenant-1", s3, held.Token+1)
	if _, err := s.Swap(ctx(t), store.Swap{Expect: held.Version, Record: take, Event: store.TakenOver}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a take from a read before the succession: %v, want ErrConflict", err)
	}
	// At the resolved version, a write below the resolved token is refused.
	got, _ := s.Get(ctx(t), "tenant-1")
	if _, err := s.Swap(ctx(t), store.Swap{Expect: got.Version, Record: release, Event: store.Released}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a release at the resolved version with the stored token: %v, want ErrInvalid", err)
	}
	if after, _ := s.Get(ctx(t), "tenant-1"); after != got {
		t.Fatalf("refused writes changed the record: %+v, then %+v", got, after)
	}
}

func testSuccessionFenced(t *testing.T, s store.Store, h store.Succeeder) {
	passOn(t, s, "job")
	pending, err := s.SwapRun(ctx(t), store.RunSwap{Run: store.Run{Job: "job", Period: p1, State: store.Pending}})
	if err != nil {
		t.Fatal(err)
	}
	claim := pending
	claim.State, claim.Token, claim.Holder, claim.Attempt = store.Running, 5, "n1", 1
	if _, err := s.SwapRun(ctx(t), store.RunSwap{Expect: pending.Version, Run: claim, Fenced: true}); !errors.Is(err, store.ErrStaleToken) {
		t.Fatalf("a claim with the dead holder's token: %v, want ErrStaleToken", err)
	}
	claim.Token, claim.Holder = 6, "n2"
	if _, err := s.SwapRun(ctx(t), store.RunSwap{Expect: pending.Version, Run: claim, Fenced: true}); err != nil {
		t.Fatalf("a claim with the resolved token: %v", err)
	}
	if _, err := s.PruneRuns(ctx(t), store.Prune{Job: "job", Keep: 1, Limit: 1, States: []store.RunState{store.Done}, Fenced: true, Token: 5}); !errors.Is(err, store.ErrStaleToken) {
		t.Fatalf("a prune with the dead holder's token: %v, want ErrStaleToken", err)
	}
}

func testSuccessionLog(t *testing.T, s store.Store, h store.Succeeder) {
	_, s1, _, _ := passOn(t, s, "tenant-1")
	evs, err := s.History(ctx(t), "tenant-1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[1].Seq != 2 || evs[1].Kind != store.TakenOver || evs[1].Holder != "n2" || evs[1].Token != 6 || evs[1].Detail != store.SuccessionDetail(s1.Name) {
		t.Fatalf("History after the succession = %+v, want acquired then taken over by n2 at token 6 (%s)", evs, store.SuccessionDetail(s1.Name))
	}
	got, _ := s.Get(ctx(t), "tenant-1")
	free := store.Record{Name: "tenant-1", Token: got.Token, Lease: got.Lease}
	mustSwap(t, s, store.Swap{Expect: got.Version, Record: free, Event: store.Released})
	after, err := s.History(ctx(t), "tenant-1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 3 || after[1] != evs[1] || after[2].Seq != 3 || after[2].Kind != store.Released || after[2].Token != 6 {
		t.Fatalf("History after the successor's release = %+v, want the succession's event as shown before, then released at 6", after)
	}
}

func testSuccessionDelete(t *testing.T, s store.Store, h store.Succeeder) {
	_, _, s2, dead := passOn(t, s, "tenant-1")
	if err := s.DeleteSession(ctx(t), dead.Name, dead.Version); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("DeleteSession of a succeeded session a name points at: %v, want ErrConflict", err)
	}
	got, _ := s.Get(ctx(t), "tenant-1")
	if got.Holder != "n2" {
		t.Fatalf("after the refused delete: %+v", got)
	}
	next := got
	next.Via = ""
	mustSwap(t, s, store.Swap{Expect: got.Version, Record: next})
	if err := s.DeleteSession(ctx(t), dead.Name, dead.Version); err != nil {
		t.Fatalf("DeleteSession once nothing points at it: %v", err)
	}
	if got, _ := s.Get(ctx(t), "tenant-1"); got.Holder != "n2" || got.Session != s2.Name || got.Token != 6 {
		t.Fatalf("after deleting the dead session: %+v", got)
	}
}

func testSuccessionInvalid(t *testing.T, s store.Store, h store.Succeeder) {
	s1 := mustSwap(t, s, store.Swap{Record: session("n1")})
	s2 := mustSwap(t, s, store.Swap{Record: session("n2")})
	s3 := mustSwap(t, s, store.Swap{Record: session("n3")})
	mustSwap(t, s, store.Swap{Record: heldThrough("tenant-1", s1, 1), Event: store.Acquired})
	s3dead := mustSwap(t, s, store.Swap{Expect: s3.Version, Record: store.Record{Name: s3.Name, Lease: s3.Lease}})
	// A successor whose session ended first: a race the writer loses.
	for _, late := range []struct {
		what string
		sw   store.Swap
	}{
		{"a successor that is dead", store.Swap{Expect: s1.Version, Record: store.Record{Name: s1.Name, Lease: s1.Lease, Successor: s3.Name}}},
		{"a successor that does not exist", store.Swap{Expect: s1.Version, Record: store.Record{Name: s1.Name, Lease: s1.Lease, Successor: store.SessionPrefix + "nobody/i/1"}}},
	} {
		if _, err := s.Swap(ctx(t), late.sw); !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", late.what, err)
		}
	}
	for _, bad := range []struct {
		what string
		sw   store.Swap
	}{
		{"itself as successor", store.Swap{Expect: s1.Version, Record: store.Record{Name: s1.Name, Lease: s1.Lease, Successor: s1.Name}}},
		{"a name as successor", store.Swap{Expect: s1.Version, Record: store.Record{Name: s1.Name, Lease: s1.Lease, Successor: "tenant-1"}}},
		{"a successor on a held session", store.Swap{Expect: s1.Version, Record: store.Record{Name: s1.Name, Holder: "n1", Incarnation: "i1", Lease: s1.Lease, Successor: s2.Name}}},
		{"a successor on a new session", store.Swap{Record: store.Record{Name: store.SessionPrefix + "n4/i/1", Lease: s1.Lease, Successor: s2.Name}}},
		{"a successor on a name", store.Swap{Record: store.Record{Name: "tenant-2", Successor: s2.Name}}},
		{"a successor given to a dead session", store.Swap{Expect: s3dead.Version, Record: store.Record{Name: s3.Name, Lease: s3.Lease, Successor: s2.Name}}},
	} {
		if _, err := s.Swap(ctx(t), bad.sw); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", bad.what, err)
		}
	}
	if got, _ := s.Get(ctx(t), s1.Name); got != s1 {
		t.Fatalf("refused successions changed the session: %+v", got)
	}
}

func testSuccessionChain(t *testing.T, s store.Store, h store.Succeeder) {
	held, s1, s2, _ := passOn(t, s, "tenant-1")
	s3 := mustSwap(t, s, store.Swap{Record: session("n3")})
	cur, _ := s.Get(ctx(t), s2.Name)
	mustSwap(t, s, store.Swap{Expect: cur.Version, Record: store.Record{Name: s2.Name, Lease: s2.Lease, Successor: s3.Name}})
	got, err := s.Get(ctx(t), "tenant-1")
	if err != nil || got.Holder != "n3" || got.Session != s3.Name || got.Via != s2.Name || got.Token != held.Token+2 {
		t.Fatalf("Get through two successions = %+v, %v; want n3 through %s via %s (the last session passed) at token %d", got, err, s3.Name, s2.Name, held.Token+2)
	}
	// n3 succeeded s2 and lists what it was passed on: the name stored
	// under s1 came through s2. So does a listing of s1, and of s3, the
	// live end of the chain; another session's does not.
	mustSwap(t, s, store.Swap{Record: heldThrough("tenant-9", s3, 1), Event: store.Acquired})
	for _, tc := range []struct {
		session string
		want    []string
	}{
		{s1.Name, []string{"tenant-1"}},
		{s2.Name, []string{"tenant-1"}},
		{s3.Name, []string{"tenant-1", "tenant-9"}},
		{store.SessionPrefix + "nobody/i/1", nil},
	} {
		list, err := h.HeldThrough(ctx(t), tc.session, "", 0)
		var names []string
		for _, r := range list {
			names = append(names, r.Name)
		}
		if err != nil || !slices.Equal(names, tc.want) || (len(list) > 0 && list[0] != got) {
			t.Fatalf("HeldThrough(%s) through a chain = %+v, %v; want %v, the first as Get shows it", tc.session, list, err, tc.want)
		}
	}
	evs, err := s.History(ctx(t), "tenant-1", 1, 0)
	if err != nil || len(evs) != 2 || evs[0].Token != held.Token+1 || evs[0].Holder != "n2" || evs[1].Token != held.Token+2 || evs[1].Holder != "n3" {
		t.Fatalf("History through two successions = %+v, %v", evs, err)
	}
	// A chain ending at a dead session without a successor: the name is
	// free to take, above the last passed token.
	cur3, _ := s.Get(ctx(t), s3.Name)
	mustSwap(t, s, store.Swap{Expect: cur3.Version, Record: store.Record{Name: s3.Name, Lease: s3.Lease}})
	end, err := s.Get(ctx(t), "tenant-1")
	if err != nil || end.Session != s3.Name || end.Token != held.Token+2 || end.Holder != "n3" || end.Free() {
		t.Fatalf("Get through successions to a dead session = %+v, %v", end, err)
	}
}

// testSuccessionSettle: Settle rewrites the names a dead session passed on
// as they read (Via aside), their versions and logs included, a page at a
// time; a write prepared before it still applies; the dead session may
// then be deleted, first the head of a chain, then the next.
func testSuccessionSettle(t *testing.T, s store.Store, h store.Succeeder) {
	_, s1, s2, _ := passOn(t, s, "tenant-1")
	mustSwap(t, s, store.Swap{Record: heldThrough("tenant-2", s1, 9), Event: store.Acquired})
	mustSwap(t, s, store.Swap{Record: heldThrough("tenant-3", s2, 1), Event: store.Acquired})
	// tenant-2 was written after the succession, through the dead session:
	// it resolves as well (a store cannot tell how a record came to point
	// at a dead session).
	s3 := mustSwap(t, s, store.Swap{Record: session("n3")})
	cur2, _ := s.Get(ctx(t), s2.Name)
	dead2 := mustSwap(t, s, store.Swap{Expect: cur2.Version, Record: store.Record{Name: s2.Name, Lease: s2.Lease, Successor: s3.Name}})
	names := []string{"tenant-1", "tenant-2", "tenant-3"}
	before := map[string]store.Record{}
	logs := map[string][]store.Event{}
	for _, n := range names {
		rec, err := s.Get(ctx(t), n)
		if err != nil || rec.Holder != "n3" || rec.Session != s3.Name {
			t.Fatalf("Get(%s) before Settle = %+v, %v; want held by n3 through %s", n, rec, err, s3.Name)
		}
		before[n] = rec
		if logs[n], err = s.History(ctx(t), n, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing to settle: a held session, a missing one, a name.
	for _, none := range []string{s3.Name, store.SessionPrefix + "nobody/i/1", "tenant-1"} {
		if n, err := h.Settle(ctx(t), none, 0); n != 0 || err != nil {
			t.Fatalf("Settle(%s) = %d, %v; want 0, nil", none, n, err)
		}
	}
	// The chain's head cannot go while names point at it, nor the next
	// while the head names it.
	if err := s.DeleteSession(ctx(t), s2.Name, dead2.Version); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("DeleteSession of %s while %s names it and tenant-3 points at it: %v, want ErrConflict", s2.Name, s1.Name, err)
	}
	if n, err := h.Settle(ctx(t), s1.Name, 1); n != 1 || err != nil {
		t.Fatalf("Settle(%s, 1) = %d, %v; want 1", s1.Name, n, err)
	}
	if n, err := h.Settle(ctx(t), s1.Name, 0); n != 1 || err != nil {
		t.Fatalf("Settle(%s) of the rest = %d, %v; want 1", s1.Name, n, err)
	}
	if n, err := h.Settle(ctx(t), s1.Name, 0); n != 0 || err != nil {
		t.Fatalf("Settle(%s) once settled = %d, %v; want 0", s1.Name, n, err)
	}
	if list, err := h.HeldThrough(ctx(t), s1.Name, "", 0); err != nil || len(list) != 0 {
		t.Fatalf("HeldThrough(%s) once settled = %+v, %v", s1.Name, list, err)
	}
	d1, _ := s.Get(ctx(t), s1.Name)
	if err := s.DeleteSession(ctx(t), s1.Name, d1.Version); err != nil {
		t.Fatalf("DeleteSession(%s) once its names are settled: %v", s1.Name, err)
	}
	// Those two were settled through the whole chain, onto s3.
	if n, err := h.Settle(ctx(t), s2.Name, 0); n != 1 || err != nil {
		t.Fatalf("Settle(%s) = %d, %v; want 1 (tenant-3)", s2.Name, n, err)
	}
	if err := s.DeleteSession(ctx(t), s2.Name, dead2.Version); err != nil {
		t.Fatalf("DeleteSession(%s) once nothing points at it: %v", s2.Name, err)
	}
	for _, n := range names {
		got, err := s.Get(ctx(t), n)
		want := before[n]
		want.Via = ""
		if err != nil || got != want {
			t.Fatalf("Get(%s) after Settle = %+v, %v; want %+v", n, got, err, want)
		}
		evs, err := s.History(ctx(t), n, 0, 0)
		if err != nil || !slices.Equal(evs, logs[n]) {
			t.Fatalf("History(%s) after Settle = %+v, %v; want %+v", n, evs, err, logs[n])
		}
		// A write prepared from the read before Settle applies.
		free := store.Record{Name: n, Token: want.Token, Lease: want.Lease}
		if _, err := s.Swap(ctx(t), store.Swap{Expect: before[n].Version, Record: free, Event: store.Released}); err != nil {
			t.Fatalf("a release of %s prepared before Settle: %v", n, err)
		}
	}
}

// testSuccessionCountHolders: a summary counts a name passed on as its
// successor's, as Get shows it, and silent by the resolved record's
// Updated (the succession's, not only the record's own write).
func testSuccessionCountHolders(t *testing.T, s store.Store, h store.Succeeder) {
	_, _, s2, _ := passOn(t, s, "tenant-1")
	mustSwap(t, s, store.Swap{Record: heldThrough("tenant-2", s2, 1), Event: store.Acquired})
	got, err := s.Get(ctx(t), "tenant-1")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.HolderCount{{Holder: "n2", Incarnation: s2.Incarnation, Session: s2.Name, Names: 2}}
	groups, jobs, err := s.CountHolders(ctx(t), got.Updated)
	if err != nil || jobs != 0 || !slices.Equal(groups, want) {
		t.Fatalf("CountHolders after a succession = %+v, %d, %v; want %+v, 0", groups, jobs, err, want)
	}
	want[0].Silent = 2
	groups, _, err = s.CountHolders(ctx(t), got.Updated.Add(time.Hour))
	if err != nil || !slices.Equal(groups, want) {
		t.Fatalf("CountHolders an hour later = %+v, %v; want %+v", groups, err, want)
	}
}

// testSuccessionSuspend: an operator's suspension of a job whose name a
// succession passed on logs after the succession's event, leaves the
// record as it was (its version included), and the successor's next
// write logs after both.
func testSuccessionSuspend(t *testing.T, s store.Store, h store.Succeeder) {
	if _, err := s.EnsureJob(ctx(t), store.Job{Name: "job", Schedule: "@daily"}); err != nil {
		t.Fatal(err)
	}
	_, s1, _, _ := passOn(t, s, "job")
	got, err := s.Get(ctx(t), "job")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SuspendJob(ctx(t), store.JobSuspend{Name: "job", Suspend: true, By: "op", Reason: "audit"}); err != nil {
		t.Fatal(err)
	}
	// As before it, but for Via: a store may settle the record as it logs
	// (Settle's resolved form, at the same version).
	now, err := s.Get(ctx(t), "job")
	if err != nil {
		t.Fatal(err)
	}
	a, b := now, got
	a.Via, b.Via = "", ""
	if a != b || (now.Via != "" && now.Via != got.Via) {
		t.Fatalf("Get after the suspension = %+v; want %+v as before it (Via aside)", now, got)
	}
	kinds := func(evs []store.Event) string {
		var b []string
		for _, ev := range evs {
			b = append(b, fmt.Sprintf("%d:%s@%d", ev.Seq, ev.Kind, ev.Token))
		}
		return strings.Join(b, " ")
	}
	evs, err := s.History(ctx(t), "job", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := "1:acquired@5 2:taken-over-after-expiry@6 3:suspended@6"; kinds(evs) != want || evs[1].Detail != store.SuccessionDetail(s1.Name) {
		t.Fatalf("History after the suspension = %s (%+v); want %s", kinds(evs), evs, want)
	}
	free := store.Record{Name: "job", Token: got.Token, Lease: got.Lease}
	mustSwap(t, s, store.Swap{Expect: got.Version, Record: free, Event: store.Released})
	after, err := s.History(ctx(t), "job", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := "1:acquired@5 2:taken-over-after-expiry@6 3:suspended@6 4:released@6"; kinds(after) != want {
		t.Fatalf("History after the successor's release = %s; want %s", kinds(after), want)
	}
}

// testSuccessionReadDerived: the record a succession's write returns for
// the dead session (its version the write's, its successor's holder
// filled in) and a name's record as read before the succession give, by
// store.Resolve, exactly what a read of the name returns after it. A
// Group whose feed proves its last read current derives the record that
// way instead of reading it (election.Config.OrderedFeed), so a store
// must return the dead session as it stored it.
func testSuccessionReadDerived(t *testing.T, s store.Store, h store.Succeeder) {
	s1 := mustSwap(t, s, store.Swap{Record: session("n1")})
	s2 := mustSwap(t, s, store.Swap{Record: session("n2")})
	mustSwap(t, s, store.Swap{Record: heldThrough("derived", s1, 5), Event: store.Acquired})
	before, err := s.Get(ctx(t), "derived")
	if err != nil {
		t.Fatal(err)
	}
	// In a batch, as a Group's runtime sends an observer's write.
	res, err := s.SwapMany(ctx(t), []store.Swap{{Expect: s1.Version, Record: store.Record{Name: s1.Name, Lease: s1.Lease, Successor: s2.Name}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("the succession: %+v, %v", res, err)
	}
	dead := res[0].Record
	if dead.SuccessorHolder != "n2" || dead.SuccessorIncarnation != s2.Incarnation {
		t.Fatalf("the succession's write returned %+v: without its successor's holder (n2, %s)", dead, s2.Incarnation)
	}
	derived, err := store.Resolve(before, func(name string) (store.Record, bool) { return dead, name == dead.Name }, nil)
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Get(ctx(t), "derived")
	if err != nil {
		t.Fatal(err)
	}
	if derived != after {
		t.Fatalf("derived from the read before and the write's record:\n%+v\nread after:\n%+v", derived, after)
	}
}
