package sqlite_test

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

// newSession writes a live session record of node.
func newSession(t *testing.T, s *sqlite.Store, node string) store.Record {
	t.Helper()
	rec, err := s.Swap(ctx(t), store.Swap{Record: store.Record{Name: store.SessionPrefix + node + "/i/1", Holder: node, Incarnation: node + "-i", Lease: 3 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// holdNames writes names held through sess at token 5, in one SwapMany.
func holdNames(t *testing.T, s *sqlite.Store, sess store.Record, names ...string) []store.Record {
	t.Helper()
	var swaps []store.Swap
	for _, n := range names {
		swaps = append(swaps, store.Swap{Record: store.Record{Name: n, Holder: sess.Holder, Incarnation: sess.Incarnation, Token: 5, Lease: sess.Lease, Session: sess.Name}, Event: store.Acquired})
	}
	res, err := s.SwapMany(ctx(t), swaps)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]store.Record, len(res))
	for i, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		out[i] = r.Record
	}
	return out
}

// succeed ends sess with successor as its successor.
func succeed(t *testing.T, s *sqlite.Store, sess, successor store.Record) store.Record {
	t.Helper()
	cur, err := s.Get(ctx(t), sess.Name)
	if err != nil {
		t.Fatal(err)
	}
	dead, err := s.Swap(ctx(t), store.Swap{Expect: cur.Version, Record: store.Record{Name: sess.Name, Lease: sess.Lease, Successor: successor.Name}})
	if err != nil {
		t.Fatal(err)
	}
	return dead
}

// The fast paths, a renewal (one UPDATE) and a batch of takes (one UPDATE
// for all), do not act on a name a succession passed on: the dead
// holder's renewal and a contender's takes prepared from reads made
// before the succession conflict, as the general path decides against
// the resolved record; takes at the resolved versions apply, at the
// resolved tokens, after the succession's log events.
func TestSuccessionFastPaths(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "baton.db"))
	s1, s2 := newSession(t, s, "n1"), newSession(t, s, "n2")
	names := []string{"a", "b", "c"}
	held := holdNames(t, s, s1, names...)
	succeed(t, s, s1, s2)

	// The dead holder renews a, as it read it.
	if _, err := s.Swap(ctx(t), store.Swap{Expect: held[0].Version, Record: held[0]}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the dead holder's renewal after the succession: %v, want ErrConflict", err)
	}
	// A contender takes all three from reads before the succession.
	s3 := newSession(t, s, "n3")
	take := func(expect func(i int) int64, token func(i int) uint64) []store.SwapResult {
		t.Helper()
		var swaps []store.Swap
		for i, r := range held {
			swaps = append(swaps, store.Swap{Expect: expect(i), Event: store.TakenOver,
				Record: store.Record{Name: r.Name, Holder: "n3", Incarnation: s3.Incarnation, Token: token(i), Lease: r.Lease, Session: s3.Name}})
		}
		res, err := s.SwapMany(ctx(t), swaps)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i, r := range take(func(i int) int64 { return held[i].Version }, func(i int) uint64 { return held[i].Token + 1 }) {
		if !errors.Is(r.Err, store.ErrConflict) {
			t.Errorf("a take of %s from a read before the succession: %+v, want ErrConflict", held[i].Name, r)
		}
	}
	// Once n2's session ends too (without a successor), a contender
	// takes them from its reads: resolved, at token 6, plus one.
	succeedNone := func(sess store.Record) {
		cur, _ := s.Get(ctx(t), sess.Name)
		if _, err := s.Swap(ctx(t), store.Swap{Expect: cur.Version, Record: store.Record{Name: sess.Name, Lease: sess.Lease}}); err != nil {
			t.Fatal(err)
		}
	}
	succeedNone(s2)
	read, err := s.GetMany(ctx(t), names)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range take(func(i int) int64 { return read[i].Record.Version }, func(i int) uint64 { return read[i].Record.Token + 1 }) {
		if r.Err != nil || r.Record.Token != 7 {
			t.Fatalf("a take of %s at its resolved version: %+v, want token 7", names[i], r)
		}
	}
	for _, n := range names {
		evs, err := s.History(ctx(t), n, 0, 0)
		if err != nil || len(evs) != 3 || evs[1].Detail != store.SuccessionDetail(s1.Name) || evs[1].Token != 6 || evs[1].Seq != 2 ||
			evs[2].Kind != store.TakenOver || evs[2].Holder != "n3" || evs[2].Token != 7 || evs[2].Seq != 3 {
			t.Fatalf("History(%s) = %+v, %v; want acquired, the succession at 6, taken over by n3 at 7", n, evs, err)
		}
		if got, err := s.Get(ctx(t), n); err != nil || got.Via != "" || got.Session != s3.Name || got.Token != 7 {
			t.Fatalf("Get(%s) after the take = %+v, %v", n, got, err)
		}
	}
	// n3 renews its names: the fast path, the stored records name its
	// session directly.
	got, _ := s.Get(ctx(t), "a")
	if r, err := s.Swap(ctx(t), store.Swap{Expect: got.Version, Record: got}); err != nil || r.Version <= got.Version {
		t.Fatalf("n3's renewal = %+v, %v", r, err)
	}
}

// The successor's renewal of a name it was passed on (the record it read)
// settles the name and applies; a batch that ends a session by succession
// and then renews a name held through it, prepared before, conflicts on
// that name.
func TestSuccessionRenewals(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "baton.db"))
	s1, s2 := newSession(t, s, "n1"), newSession(t, s, "n2")
	held := holdNames(t, s, s1, "a", "b")
	got, err := s.Get(ctx(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := s.Get(ctx(t), s1.Name)
	res, err := s.SwapMany(ctx(t), []store.Swap{
		{Expect: cur.Version, Record: store.Record{Name: s1.Name, Lease: s1.Lease, Successor: s2.Name}},
		{Expect: got.Version, Record: got},
	})
	if err != nil || res[0].Err != nil || res[0].Record.SuccessorHolder != "n2" || res[0].Record.SuccessorIncarnation != s2.Incarnation {
		t.Fatalf("the succession in a batch = %+v, %v", res, err)
	}
	if !errors.Is(res[1].Err, store.ErrConflict) {
		t.Fatalf("a renewal by the dead holder after the succession in its batch: %+v, want ErrConflict", res[1])
	}
	b, err := s.Get(ctx(t), "b")
	if err != nil || b.Via != s1.Name || b.Holder != "n2" || b.Token != held[1].Token+1 {
		t.Fatalf("Get(b) = %+v, %v", b, err)
	}
	r, err := s.Swap(ctx(t), store.Swap{Expect: b.Version, Record: b})
	if err != nil || r.Via != "" || r.Token != b.Token || r.Session != s2.Name {
		t.Fatalf("the successor's renewal of b = %+v, %v", r, err)
	}
	if evs, err := s.History(ctx(t), "b", 0, 0); err != nil || len(evs) != 2 || evs[1].Holder != "n2" {
		t.Fatalf("History(b) after the successor's renewal = %+v, %v", evs, err)
	}
}

// UpdateJob and SuspendJob, which write a name without a swap, settle it
// first: the succession's events come before theirs in the log, with the
// sequence numbers History showed them under.
func TestSuccessionSettledByJobWrites(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "baton.db"))
	s1, s2 := newSession(t, s, "n1"), newSession(t, s, "n2")
	holdNames(t, s, s1, "updated", "suspended")
	for _, n := range []string{"updated", "suspended"} {
		if _, err := s.EnsureJob(ctx(t), store.Job{Name: n, Schedule: "every 1h"}); err != nil {
			t.Fatal(err)
		}
	}
	succeed(t, s, s1, s2)
	before, err := s.History(ctx(t), "updated", 0, 0)
	if err != nil || len(before) != 2 {
		t.Fatalf("History before = %+v, %v", before, err)
	}
	if _, err := s.UpdateJob(ctx(t), store.JobUpdate{Name: "updated", Expect: "every 1h", Schedule: "every 2h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SuspendJob(ctx(t), store.JobSuspend{Name: "suspended", Suspend: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	for n, kind := range map[string]store.EventKind{"updated": store.Rescheduled, "suspended": store.Suspended} {
		evs, err := s.History(ctx(t), n, 0, 0)
		want := before[1]
		want.Name = n
		if err != nil || len(evs) != 3 || evs[1] != want || evs[2].Kind != kind || evs[2].Seq != 3 || evs[2].Holder != "n2" || evs[2].Token != 6 {
			t.Fatalf("History(%s) = %+v, %v; want the succession's event as shown before (%+v), then %s by n2 at 6", n, evs, err, want, kind)
		}
	}
	if got, err := s.Get(ctx(t), "updated"); err != nil || got.Via != "" || got.Session != s2.Name || got.Token != 6 {
		t.Fatalf("Get(updated) after UpdateJob = %+v, %v; want it settled on n2's session", got, err)
	}
}

// History's implied events take after and limit as stored ones do.
func TestSuccessionHistoryPages(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "baton.db"))
	s1, s2, s3 := newSession(t, s, "n1"), newSession(t, s, "n2"), newSession(t, s, "n3")
	holdNames(t, s, s1, "a")
	succeed(t, s, s1, s2)
	succeed(t, s, s2, s3)
	for _, c := range []struct {
		after  uint64
		limit  int
		tokens []uint64
	}{
		{0, 0, []uint64{5, 6, 7}},
		{0, 2, []uint64{5, 6}},
		{1, 1, []uint64{6}},
		{2, 0, []uint64{7}},
		{3, 0, nil},
	} {
		evs, err := s.History(ctx(t), "a", c.after, c.limit)
		var tokens []uint64
		for _, ev := range evs {
			tokens = append(tokens, ev.Token)
		}
		if err != nil || fmt.Sprint(tokens) != fmt.Sprint(c.tokens) {
			t.Errorf("History(a, %d, %d) tokens = %v, %v; want %v", c.after, c.limit, tokens, err, c.tokens)
		}
	}
}

// CountHolders counts the names a succession passed on as the
// successor's, silent by the resolved Updated.
func TestSuccessionCountHolders(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := now
	s := open(t, filepath.Join(t.TempDir(), "baton.db"), sqlite.WithTime(func() time.Time { return clock }))
	s1, s2 := newSession(t, s, "n1"), newSession(t, s, "n2")
	holdNames(t, s, s1, "a", "b")
	holdNames(t, s, s2, "c")
	clock = now.Add(time.Minute) // a, b and c were written a minute before the succession
	succeed(t, s, s1, s2)
	gs, _, err := s.CountHolders(ctx(t), now.Add(time.Minute+time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := []store.HolderCount{{Holder: "n2", Incarnation: s2.Incarnation, Session: s2.Name, Names: 3, Silent: 1}}
	if fmt.Sprint(gs) != fmt.Sprint(want) {
		t.Fatalf("CountHolders = %+v, want %+v (c silent, a and b passed on a second ago)", gs, want)
	}
}

// rawDB opens the file of a store for writes another program makes.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A store whose rows make a cycle of successions or a chain longer than
// store.MaxSuccession is refused (ErrInvalid), and one whose successor
// columns no baton writes is corrupt (ErrCorrupt), by reads and writes;
// no error carries the row's control characters.
func TestSuccessionHostileRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	s := open(t, path)
	db := rawDB(t, path)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	// chain writes n dead sessions, each the successor of the one before,
	// the last one's successor end, and a name held through the first.
	chain := func(name string, n int, end string) {
		for i := range n {
			succ := fmt.Sprintf("@session/%s-%d/i/1", name, i+1)
			if i == n-1 {
				succ = end
			}
			exec(`INSERT INTO baton_election (name, holder, incarnation, token, lease_ns, transfer, version, updated_ns, successor, successor_holder, successor_incarnation)
				VALUES (?, '', '', 0, 1, '', ?, 0, ?, 'h', 'i')`, fmt.Sprintf("@session/%s-%d/i/1", name, i), 100+i, succ)
		}
		exec(`INSERT INTO baton_election (name, holder, incarnation, token, lease_ns, transfer, version, updated_ns, session)
			VALUES (?, 'n1', 'i1', 1, 1, '', 1, 0, ?)`, name, fmt.Sprintf("@session/%s-0/i/1", name))
	}
	live := newSession(t, s, "live")
	chain("longest", store.MaxSuccession, live.Name)
	chain("toolong", store.MaxSuccession+1, live.Name)
	chain("cycle", 3, "@session/cycle-0/i/1")
	if got, err := s.Get(ctx(t), "longest"); err != nil || got.Token != 1+store.MaxSuccession || got.Session != live.Name {
		t.Fatalf("Get through %d successions = %+v, %v", store.MaxSuccession, got, err)
	}
	for _, n := range []string{"toolong", "cycle"} {
		if _, err := s.Get(ctx(t), n); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Get(%s) = %v, want ErrInvalid", n, err)
		}
		if _, err := s.GetMany(ctx(t), []string{"longest", n}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("GetMany(%s) = %v, want ErrInvalid", n, err)
		}
		res, err := s.SwapMany(ctx(t), []store.Swap{{Expect: 1, Record: store.Record{Name: n, Token: 2}, Event: store.Released}})
		if err != nil || !errors.Is(res[0].Err, store.ErrInvalid) {
			t.Errorf("a release of %s = %+v, %v; want ErrInvalid", n, res, err)
		}
		if _, err := s.History(ctx(t), n, 0, 0); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("History(%s) = %v, want ErrInvalid", n, err)
		}
	}
	// Successor columns on a held session and on a name.
	bad := "@session/x\x1b[31m/i/1"
	held := newSession(t, s, "held")
	exec(`UPDATE baton_election SET successor = ? WHERE name = ?`, bad, held.Name)
	holdNames(t, s, live, "name")
	exec(`UPDATE baton_election SET successor = ? WHERE name = 'name'`, live.Name)
	for _, n := range []string{held.Name, "name"} {
		_, err := s.Get(ctx(t), n)
		if !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("Get(%s) = %v, want ErrCorrupt", n, err)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\x1b") {
			t.Errorf("Get(%s)'s error carries a control character: %q", n, err)
		}
		if _, err := s.SwapMany(ctx(t), []store.Swap{{Expect: 1, Record: store.Record{Name: n}}}); !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("SwapMany(%s) = %v, want ErrCorrupt", n, err)
		}
	}
}

// A store of version 6 (testdata/schema-v6.sql, written by the version 6
// code) is read as it is by a read-only opener and upgraded in place by a
// writer: its records are as they were, and its sessions can be passed on.
func TestSchemaVersion6Upgrade(t *testing.T) {
	path := scriptStore(t, "schema-v6.sql")
	ro, err := sqlite.Open(ctx(t), path, sqlite.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	a, err := ro.Get(ctx(t), "a")
	if err != nil || a.Holder != "n1" || a.Session != store.SessionPrefix+"n1/i1/1" || a.Version != 3 {
		t.Fatalf("read-only Get(a) of a version 6 store = %+v, %v", a, err)
	}
	if _, err := ro.HeldThrough(ctx(t), a.Session, "", 0); err != nil {
		t.Fatalf("read-only HeldThrough of a version 6 store: %v", err)
	}
	ro.Close()

	s := open(t, path)
	if v := schemaOf(t, path); v != sqlite.SchemaVersion {
		t.Fatalf("schema version after a writer's open = %d, want %d", v, sqlite.SchemaVersion)
	}
	if got, err := s.Get(ctx(t), "a"); err != nil || got != a {
		t.Fatalf("Get(a) after the upgrade = %+v, %v; want %+v", got, err, a)
	}
	s1, _ := s.Get(ctx(t), store.SessionPrefix+"n1/i1/1")
	s2, _ := s.Get(ctx(t), store.SessionPrefix+"n2/i2/1")
	dead := succeed(t, s, s1, s2)
	if dead.Version != 8 {
		t.Errorf("the succession's version = %d, want 8 (the counter went on from 7)", dead.Version)
	}
	list, err := s.HeldThrough(ctx(t), s1.Name, "", 0)
	if err != nil || len(list) != 2 || list[0].Name != "a" || list[1].Holder != "n2" || list[1].Token != 2 {
		t.Fatalf("HeldThrough after the upgrade = %+v, %v", list, err)
	}
	if n, err := s.Settle(ctx(t), s1.Name, 0); n != 2 || err != nil {
		t.Fatalf("Settle = %d, %v", n, err)
	}
	if err := s.DeleteSession(ctx(t), s1.Name, dead.Version); err != nil {
		t.Fatalf("DeleteSession once settled: %v", err)
	}
}

// A baton of version 6 still running when the store is upgraded fails its
// next write instead of taking a name passed on by a succession at its
// stored token + 1: every write of its reads or raises the counter under
// its old key, change_counter, which the upgrade renamed.
func TestSchemaVersion6WriterFails(t *testing.T) {
	path := scriptStore(t, "schema-v6.sql")
	db := rawDB(t, path)
	db.SetMaxOpenConns(1)
	v6Write := func() error {
		var last int64
		return db.QueryRow(`SELECT value FROM baton_meta WHERE key = 'change_counter'`).Scan(&last)
	}
	v6Renew := func() error {
		_, err := db.Exec(`UPDATE baton_election SET
			version = max(version, (SELECT value FROM baton_meta WHERE key = 'change_counter')) + 1, updated_ns = 1
			WHERE name = 'a'`)
		return err
	}
	if err := v6Write(); err != nil {
		t.Fatalf("a version 6 write on a version 6 store: %v", err)
	}
	open(t, path)
	if err := v6Write(); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("a version 6 write after the upgrade: %v, want sql.ErrNoRows (no counter change_counter)", err)
	}
	if err := v6Renew(); err == nil || !strings.Contains(err.Error(), "NOT NULL") {
		t.Errorf("a version 6 renewal after the upgrade: %v, want a NOT NULL constraint failure", err)
	}
}
