package baton_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/electortest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// countingStore is a memstore handle that counts the election writes that
// reach it and can be cut off (every call fails as unavailable).
type countingStore struct {
	*memstore.Store
	writes  atomic.Int64 // write calls (Swap, SwapMany)
	records atomic.Int64 // records written
	tried   atomic.Int64 // name records sent to be written, cut off or not
	// After this handle's first succession write (a session record
	// ended with a successor): name records read since.
	passed     atomic.Bool
	readPassed atomic.Int64
	cut        atomic.Bool
	unordered  bool // FeedInOrder says false: the store's feed promises no order
}

// FeedInOrder implements store.OrderedFeed as memstore's does, or says
// false when unordered.
func (c *countingStore) FeedInOrder() bool { return !c.unordered }

func (c *countingStore) reads(names ...string) {
	for _, n := range names {
		if !store.IsSession(n) && c.passed.Load() {
			c.readPassed.Add(1)
		}
	}
}

func (c *countingStore) wrote(swaps ...store.Swap) {
	for _, sw := range swaps {
		if store.IsSession(sw.Record.Name) && sw.Record.Successor != "" {
			c.passed.Store(true)
		}
	}
}

func (c *countingStore) down() error {
	if c.cut.Load() {
		return store.ErrUnavailable
	}
	return nil
}

func (c *countingStore) Get(ctx context.Context, name string) (store.Record, error) {
	c.reads(name)
	if err := c.down(); err != nil {
		return store.Record{}, err
	}
	return c.Store.Get(ctx, name)
}

func (c *countingStore) GetMany(ctx context.Context, names []string) ([]store.GetResult, error) {
	c.reads(names...)
	if err := c.down(); err != nil {
		return nil, err
	}
	return c.Store.GetMany(ctx, names)
}

func (c *countingStore) Swap(ctx context.Context, s store.Swap) (store.Record, error) {
	if !store.IsSession(s.Record.Name) {
		c.tried.Add(1)
	}
	if err := c.down(); err != nil {
		return store.Record{}, err
	}
	c.writes.Add(1)
	c.records.Add(1)
	c.wrote(s)
	return c.Store.Swap(ctx, s)
}

func (c *countingStore) SwapMany(ctx context.Context, s []store.Swap) ([]store.SwapResult, error) {
	for _, sw := range s {
		if !store.IsSession(sw.Record.Name) {
			c.tried.Add(1)
		}
	}
	if err := c.down(); err != nil {
		return nil, err
	}
	c.writes.Add(1)
	c.records.Add(int64(len(s)))
	c.wrote(s...)
	return c.Store.SwapMany(ctx, s)
}

func newGroup(t *testing.T, st store.Store, node string) *baton.Group {
	t.Helper()
	g, err := baton.NewGroup(st, baton.WithNode(node), baton.WithLease(lease), baton.WithRenew(renew),
		baton.WithClockMargin(margin), baton.WithPoll(poll))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	return g
}

var (
	shardNames = electortest.ShardNames
	waitHeld   = electortest.WaitHeld
)

func TestGroupRenewsOnceWhateverTheNumberOfNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &countingStore{Store: memstore.New()}
		g := newGroup(t, st, "a")
		names := shardNames(2000)
		if err := g.Hold(t.Context(), names, nil); err != nil {
			t.Fatal(err)
		}
		waitHeld(t, g, len(names), lease)
		st.writes.Store(0)
		st.records.Store(0)
		time.Sleep(10 * renew)
		synctest.Wait()
		// Ten renew intervals: the session is renewed ten times and no
		// name record is written; the held names' re-reads are reads.
		if w, r := st.writes.Load(), st.records.Load(); w > 11 || r > 11 {
			t.Fatalf("10 renew intervals with %d names held: %d writes of %d records, want about 10", len(names), w, r)
		}
		if s := g.Stats(); s.Held != len(names) || s.Lost != 0 || s.Elected != uint64(len(names)) {
			t.Fatalf("stats %+v", s)
		}
	})
}

func TestGroupBulkTakeoverAfterLeasePlusTwoMargins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New()
		sa := &countingStore{Store: mem}
		a := newGroup(t, sa, "a")
		b := newGroup(t, &countingStore{Store: mem}, "b")
		names := shardNames(1000)
		if err := a.Hold(t.Context(), names, nil); err != nil {
			t.Fatal(err)
		}
		waitHeld(t, a, len(names), lease)
		if err := b.Hold(t.Context(), names, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * renew)
		if h := b.Stats().Held; h != 0 {
			t.Fatalf("b took %d names from a live holder", h)
		}
		// a is cut off from the store: its last renewal was at most one
		// renew interval ago.
		sa.cut.Store(true)
		took := waitTakeover(t, a, b, names)
		if took < lease-renew {
			t.Fatalf("b took over %v after the cut, before a's lease could have run out", took)
		}
		if a.Stats().Held != 0 {
			t.Fatalf("a still holds %d names after its session expired", a.Stats().Held)
		}
		rec, err := mem.Get(t.Context(), names[0])
		if err != nil || rec.Holder != "b" || rec.Token != 2 {
			t.Fatalf("record after takeover = %+v, %v", rec, err)
		}
		evs, _ := mem.History(t.Context(), names[0], 0, 0)
		if len(evs) != 2 || evs[1].Kind != store.TakenOver {
			t.Fatalf("log after takeover = %+v", evs)
		}
	})
}

// When the session's deadline passes, every term held through it ends at
// once, also when the work sees it first (Valid, after a pause, before the
// group's timer fired): nothing is written name by name.
func TestGroupTermsPastTheSessionDeadlineEndTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &countingStore{Store: memstore.New()}
		clock := &jumpClock{}
		g, err := baton.NewGroup(st, baton.WithNode("a"), baton.WithLease(lease), baton.WithRenew(renew),
			baton.WithClockMargin(margin), baton.WithPoll(poll), baton.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close(context.Background()) })
		names := shardNames(500)
		var terms []*baton.Term
		var mu sync.Mutex
		if err := g.Hold(t.Context(), names, func(tm *baton.Term) {
			mu.Lock()
			terms = append(terms, tm)
			mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
		waitHeld(t, g, len(names), lease)
		st.cut.Store(true)
		st.tried.Store(0)
		clock.jump(lease) // the process was paused: no timer has fired
		mu.Lock()
		defer mu.Unlock()
		for _, tm := range terms {
			if tm.Valid() {
				t.Fatalf("%v is valid a lease after the store was cut off", tm)
			}
		}
		synctest.Wait()
		if s := g.Stats(); s.Held != 0 || s.Lost != uint64(len(names)) {
			t.Fatalf("stats %+v after the session's deadline", s)
		}
		if n := st.tried.Load(); n != 0 {
			t.Fatalf("%d name records written one by one after the session's deadline", n)
		}
	})
}

func TestGroupCloseHandsEveryNameOverAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New()
		a := newGroup(t, mem, "a")
		b := newGroup(t, mem, "b")
		names := shardNames(500)
		if err := a.Hold(t.Context(), names, nil); err != nil {
			t.Fatal(err)
		}
		waitHeld(t, a, len(names), lease)
		if err := b.Hold(t.Context(), names, nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		start := time.Now()
		if err := a.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		// One write gave the session up; b's change feed says so and b
		// takes every name without waiting for a lease.
		if took := waitHeld(t, b, len(names), lease); took+time.Since(start) > 2*poll {
			t.Fatalf("b took %v to hold the names a gave up", took)
		}
	})
}

func TestGroupAndElectorContendForOneName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New()
		sa := &countingStore{Store: mem}
		g := newGroup(t, sa, "a")
		if err := g.Hold(t.Context(), []string{"billing"}, nil); err != nil {
			t.Fatal(err)
		}
		waitHeld(t, g, 1, lease)
		e := newElector(t, mem, "b")
		ch := campaign(t.Context(), e)
		time.Sleep(2 * renew)
		select {
		case w := <-ch:
			t.Fatalf("elector won %v while the group's session lives", w)
		default:
		}
		sa.cut.Store(true)
		cutAt := time.Now()
		w := <-ch
		if w.Err != nil {
			t.Fatal(w.Err)
		}
		if took := w.At.Sub(cutAt); took > lease+2*margin+2*poll {
			t.Fatalf("elector took over %v after the group was cut off", took)
		}
		if gt := g.Term("billing"); gt != nil && gt.Valid() {
			t.Fatal("the group's term is still valid after the elector took over")
		}
	})
}

func TestGroupHonoursTransferRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New()
		a := newGroup(t, mem, "a")
		names := shardNames(20)
		var stopped atomic.Int64
		if err := a.Hold(t.Context(), names, func(tm *baton.Term) {
			go func() { <-tm.Done(); stopped.Add(1) }()
		}); err != nil {
			t.Fatal(err)
		}
		waitHeld(t, a, len(names), lease)
		tok := a.Term(names[3]).Token()
		e3, err := baton.New(mem, names[3], baton.WithNode("b"), baton.WithLease(lease), baton.WithRenew(renew), baton.WithClockMargin(margin), baton.WithPoll(poll))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e3.Close(context.Background()) })
		ch3 := campaign(t.Context(), e3)
		synctest.Wait()
		start := time.Now()
		if err := baton.Transfer(t.Context(), mem, names[3], "b", tok); err != nil {
			t.Fatal(err)
		}
		w := <-ch3
		if w.Err != nil || w.Term.Token() != tok+1 {
			t.Fatalf("transfer target's campaign = %+v", w)
		}
		if took := w.At.Sub(start); took > 2*poll {
			t.Fatalf("handover took %v", took)
		}
		// The transferred term ended before its release was written; its
		// watcher may not have run yet (CI: 0 stopped).
		synctest.Wait()
		if stopped.Load() != 1 {
			t.Fatalf("%d terms of a stopped, want the transferred one", stopped.Load())
		}
	})
}

func TestGroupRefusesBadNames(t *testing.T) {
	g, err := baton.NewGroup(memstore.New(), baton.WithNode("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	for _, name := range []string{"", store.SessionPrefix + "x", "a\nb"} {
		if err := g.Hold(context.Background(), []string{"ok", name}, nil); err == nil {
			t.Errorf("Hold(%q) = nil", name)
		}
	}
	if err := g.Hold(context.Background(), []string{"x", "x"}, nil); !errors.Is(err, baton.ErrCampaigning) {
		t.Errorf("Hold of a name twice = %v", err)
	}
	if s := g.Stats(); s.Campaigning != 0 {
		t.Errorf("refused Holds left %d names campaigning", s.Campaigning)
	}
}

// WithSuccession: b takes over a's 1,000 names with the one write that
// ends a's session and writes none of them; a name that a held and b does
// not campaign for is released at once. On a store whose feed is in
// order (store.OrderedFeed) b reads none of them either: each takes its
// term from the read it made while it waited, which the feed shows
// unchanged; on one whose feed promises no order, it reads each again.
func TestGroupSuccessionTakesOverWithoutWritingNames(t *testing.T) {
	for _, unordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("unordered=%v", unordered), func(t *testing.T) {
			testSuccessionTakeover(t, unordered)
		})
	}
}

func testSuccessionTakeover(t *testing.T, unordered bool) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New()
		sa := &countingStore{Store: mem}
		sb := &countingStore{Store: mem, unordered: unordered}
		a := newGroup(t, sa, "a")
		b, err := baton.NewGroup(sb, baton.WithNode("b"), baton.WithLease(lease), baton.WithRenew(renew),
			baton.WithClockMargin(margin), baton.WithPoll(poll), baton.WithSuccession())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(context.Background()) })
		names := shardNames(1000)
		if err := a.Hold(t.Context(), append([]string{"orphan"}, names...), nil); err != nil {
			t.Fatal(err)
		}
		waitHeld(t, a, len(names)+1, lease)
		if err := b.Hold(t.Context(), names, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * renew)
		sa.cut.Store(true)
		sb.tried.Store(0)
		waitTakeover(t, a, b, names)
		synctest.Wait()
		if n := sb.tried.Load(); n != 0 {
			t.Fatalf("b wrote %d name records in the takeover, want none", n)
		}
		want := int64(0)
		if unordered {
			want = int64(len(names))
		}
		if n := sb.readPassed.Load(); n != want {
			t.Fatalf("b read %d name records after its succession, want %d", n, want)
		}
		time.Sleep(poll) // the names b does not campaign for are listed a poll later
		synctest.Wait()
		if n := sb.tried.Load(); n != 1 {
			t.Fatalf("b wrote %d name records in the takeover, want 1 (the orphan's release)", n)
		}
		rec, err := mem.Get(t.Context(), names[0])
		if err != nil || rec.Holder != "b" || rec.Token != 2 || rec.Via == "" {
			t.Fatalf("record after the succession = %+v, %v", rec, err)
		}
		if tb := b.Term(names[0]); tb == nil || tb.Token() != 2 {
			t.Fatalf("b's term of %s = %v, want token 2", names[0], tb)
		}
		evs, _ := mem.History(t.Context(), names[0], 0, 0)
		if len(evs) != 2 || evs[1].Kind != store.TakenOver || evs[1].Holder != "b" || evs[1].Token != 2 {
			t.Fatalf("log after the succession = %+v", evs)
		}
		orphan, err := mem.Get(t.Context(), "orphan")
		if err != nil || !orphan.Free() || orphan.Token != 2 {
			t.Fatalf("the name b does not campaign for = %+v, %v; want released at token 2", orphan, err)
		}
	})
}

func TestGroupSuccessionRefusedWhereItCannotWork(t *testing.T) {
	for _, tc := range []struct {
		what string
		st   store.Store
		opts []baton.Option
	}{
		{"with balance", memstore.New(), []baton.Option{baton.WithSuccession(), baton.WithBalance()}},
		{"on a store without successions", storeWithout{memstore.New()}, []baton.Option{baton.WithSuccession()}},
	} {
		if g, err := baton.NewGroup(tc.st, tc.opts...); err == nil {
			g.Close(context.Background())
			t.Errorf("NewGroup %s: no error", tc.what)
		}
	}
	if _, err := baton.New(memstore.New(), "x", baton.WithSuccession()); err == nil {
		t.Error("New with WithSuccession: no error")
	}
	if _, err := baton.New(memstore.New(), "x", baton.WithoutSuccession()); err == nil {
		t.Error("New with WithoutSuccession: no error")
	}
}

// Succession is a Group's default where it can work, and only there.
func TestGroupSuccessionByDefault(t *testing.T) {
	for _, tc := range []struct {
		what string
		st   store.Store
		opts []baton.Option
		want bool
	}{
		{"by default", memstore.New(), nil, true},
		{"WithSuccession", memstore.New(), []baton.Option{baton.WithSuccession()}, true},
		{"WithoutSuccession", memstore.New(), []baton.Option{baton.WithoutSuccession()}, false},
		{"with balance", memstore.New(), []baton.Option{baton.WithBalance()}, false},
		{"on a store without successions", storeWithout{memstore.New()}, nil, false},
	} {
		g, err := baton.NewGroup(tc.st, tc.opts...)
		if err != nil {
			t.Fatalf("NewGroup %s: %v", tc.what, err)
		}
		if got := g.Succession(); got != tc.want {
			t.Errorf("NewGroup %s: Succession() = %v, want %v", tc.what, got, tc.want)
		}
		g.Close(context.Background())
	}
}

// storeWithout hides memstore's store.Succeeder (and every other
// optional capability).
type storeWithout struct{ store.Store }

func (storeWithout) Capabilities() store.Capabilities { return 0 }

// waitTakeover waits, from now (a was just cut off), until b holds every
// name, failing if a and b ever hold one of the first 50 with valid terms
// at once or if it takes longer than lease + 2e + 5 polls; it returns how
// long it took.
func waitTakeover(t *testing.T, a, b *baton.Group, names []string) time.Duration {
	t.Helper()
	cutAt := time.Now()
	for b.Stats().Held < len(names) {
		for _, name := range names[:50] {
			ta, tb := a.Term(name), b.Term(name)
			if ta != nil && tb != nil && ta.Valid() && tb.Valid() {
				t.Fatalf("%s: two valid terms (a token %d, b token %d)", name, ta.Token(), tb.Token())
			}
		}
		time.Sleep(poll / 4)
		if took := time.Since(cutAt); took > lease+2*margin+5*poll {
			t.Fatalf("b holds %d of %d names %v after a was cut off", b.Stats().Held, len(names), took)
		}
	}
	return time.Since(cutAt)
}
