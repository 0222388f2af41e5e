package baton_test

import (
	"context"
	"errors"
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

// The tests' timings and helpers, shared with batonprom's tests.
const (
	lease  = electortest.Lease
	renew  = electortest.Renew
	margin = electortest.Margin
	poll   = electortest.Poll
)

type won = electortest.Won

var (
	newElector   = electortest.NewElector
	campaign     = electortest.Campaign
	mustCampaign = electortest.MustCampaign
)

func TestCampaignOnFreeRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		e := newElector(t, st, "a")
		start := time.Now()
		term := mustCampaign(t, e)
		if term.Token() != 1 || !term.Valid() || term.Node() != "a" || term.Name() != "billing" {
			t.Fatalf("term: token %d valid %v node %s", term.Token(), term.Valid(), term.Node())
		}
		if got := term.Deadline().Sub(start); got != lease {
			t.Fatalf("deadline %v after the acquisition was sent, want %v", got, lease)
		}
		time.Sleep(10 * lease) // renewals keep it
		if !term.Valid() || term.Err() != nil {
			t.Fatalf("term lapsed while the store was healthy: %v", term.Err())
		}
		rec, _ := e.Leader(t.Context())
		if rec.Holder != "a" || rec.Token != 1 {
			t.Fatalf("record %+v", rec)
		}
		if _, err := e.Campaign(t.Context()); !errors.Is(err, baton.ErrCampaigning) {
			t.Fatalf("second Campaign while leading: %v", err)
		}
		if err := term.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// The leader's store calls fail: it steps down exactly at the start of its
// last successful renewal plus the lease, and a contender takes over only
// after it saw the record unchanged for lease + 2e, never earlier.
func TestTakeoverAfterLeasePlusTwoMargins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		a := newElector(t, st.Client("a"), "a")
		b := newElector(t, st.Client("b"), "b")
		ta := mustCampaign(t, a)
		bc := campaign(t.Context(), b)
		time.Sleep(5 * time.Second) // b watches a renewing
		synctest.Wait()
		select {
		case w := <-bc:
			t.Fatalf("b elected while a renews: %+v", w)
		default:
		}
		// a renews at whole seconds; cut it off just after a renewal.
		time.Sleep(10 * time.Millisecond)
		lastRenewal := time.Now().Truncate(time.Second)
		st.SetUnreachable("a", true)

		<-ta.Done()
		if got := time.Since(lastRenewal); got != lease {
			t.Fatalf("a stepped down %v after its last renewal started, want exactly %v", got, lease)
		}
		if !errors.Is(ta.Err(), baton.ErrLeaseExpired) || ta.Valid() {
			t.Fatalf("a after its deadline: err %v valid %v", ta.Err(), ta.Valid())
		}
		w := <-bc
		if w.Err != nil {
			t.Fatal(w.Err)
		}
		// b first saw a's last version when it read at or after lastRenewal.
		wait := w.At.Sub(lastRenewal)
		if wait < lease+2*margin || wait > lease+2*margin+poll {
			t.Fatalf("b took over %v after a's last write, want within [%v, %v]", wait, lease+2*margin, lease+2*margin+poll)
		}
		if w.Term.Token() != ta.Token()+1 {
			t.Fatalf("token %d after %d", w.Term.Token(), ta.Token())
		}
		evs, _ := st.History(t.Context(), "billing", 0, 0)
		if last := evs[len(evs)-1]; last.Kind != store.TakenOver || last.Holder != "b" || last.Token != 2 {
			t.Fatalf("last event %+v", last)
		}
		w.Term.Resign(t.Context())
	})
}

// Valid reads the clock at every call: a process that wakes past its
// deadline sees false before any timer fires.
func TestValidReadsTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &jumpClock{}
		st := memstore.New()
		e := newElector(t, st.Client("a"), "a", baton.WithClock(clk))
		term := mustCampaign(t, e)
		st.SetUnreachable("a", true)
		if !term.Valid() {
			t.Fatal("fresh term not valid")
		}
		clk.jump(lease) // as if the process slept through its deadline
		if term.Valid() {
			t.Fatal("Valid() true past the deadline")
		}
		// Seeing the deadline pass ended the term: no renewal can bring it
		// back, and its context says why.
		if !errors.Is(term.Err(), baton.ErrLeaseExpired) {
			t.Fatalf("term after Valid() saw its deadline pass: %v", term.Err())
		}
		st.SetUnreachable("a", false)
		time.Sleep(lease)
		if term.Valid() {
			t.Fatal("Valid() true again after a renewal")
		}
	})
}

// jumpClock is the real (synctest) clock plus an offset that can jump
// forward without firing timers, like a process resumed after a pause.
type jumpClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *jumpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}
func (c *jumpClock) NewTimer(d time.Duration) baton.Timer { return baton.RealClock{}.NewTimer(d) }
func (c *jumpClock) jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// Another writer changes the record: the leader's next renewal conflicts
// and the term ends at once, not at the deadline.
func TestConflictEndsLeadershipAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		e := newElector(t, st, "a")
		term := mustCampaign(t, e)
		rec, _ := st.Get(t.Context(), "billing")
		rec.Holder, rec.Incarnation, rec.Token = "intruder", "x", rec.Token+1
		if _, err := st.Swap(t.Context(), store.Swap{Expect: rec.Version, Record: rec, Event: store.TakenOver}); err != nil {
			t.Fatal(err)
		}
		changed := time.Now()
		<-term.Done()
		if !errors.Is(term.Err(), baton.ErrDeposed) {
			t.Fatalf("cause %v", term.Err())
		}
		if got := time.Since(changed); got > renew {
			t.Fatalf("deposed leader noticed after %v, want by its next renewal (%v)", got, renew)
		}
		got, _ := st.Get(t.Context(), "billing")
		if got.Holder != "intruder" {
			t.Fatalf("the deposed leader overwrote the record: %+v", got)
		}
	})
}

// observer records whether the releasing leader's context was already
// cancelled when its release reached the store.
type observer struct {
	store.Store
	mu         sync.Mutex
	term       *baton.Term
	releasedOK bool
	released   bool
}

func (o *observer) Swap(ctx context.Context, s store.Swap) (store.Record, error) {
	if s.Event == store.Released {
		o.mu.Lock()
		o.released = true
		o.releasedOK = o.term != nil && o.term.Err() != nil
		o.mu.Unlock()
	}
	return o.Store.Swap(ctx, s)
}

func TestResignStopsWorkThenReleasesForImmediateHandover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		obs := &observer{Store: st.Client("a")}
		a := newElector(t, obs, "a")
		b := newElector(t, st.Client("b"), "b")
		ta := mustCampaign(t, a)
		obs.mu.Lock()
		obs.term = ta
		obs.mu.Unlock()
		bc := campaign(t.Context(), b)
		time.Sleep(2 * time.Second)
		resigned := time.Now()
		if err := ta.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(ta.Err(), baton.ErrResigned) {
			t.Fatalf("cause %v", ta.Err())
		}
		obs.mu.Lock()
		if !obs.released || !obs.releasedOK {
			t.Fatalf("release written %v; context cancelled before it: %v", obs.released, obs.releasedOK)
		}
		obs.mu.Unlock()
		w := <-bc
		if w.Err != nil {
			t.Fatal(w.Err)
		}
		if d := w.At.Sub(resigned); d > poll {
			t.Fatalf("handover after a release took %v, want at most one poll (%v)", d, poll)
		}
		if w.Term.Token() != 2 {
			t.Fatalf("token %d", w.Term.Token())
		}
	})
}

// staleRead holds a read's reply, taken before the gate opens, until the
// gate opens: the reply predates whatever was written meanwhile.
type staleRead struct {
	store.Store
	armed  atomic.Bool
	inRead chan struct{}
	gate   chan struct{}
}

func (s *staleRead) Get(ctx context.Context, name string) (store.Record, error) {
	rec, err := s.Store.Get(ctx, name)
	if s.armed.CompareAndSwap(true, false) {
		s.inRead <- struct{}{}
		<-s.gate
	}
	return rec, err
}

// A release that lands while the contender's read is in flight, the reply
// still showing the record held: the change feed's report of it makes the
// contender read again at once, not at its next poll.
func TestReleaseDuringContenderRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		a := newElector(t, st.Client("a"), "a")
		sb := &staleRead{Store: st.Client("b"), inRead: make(chan struct{}), gate: make(chan struct{})}
		b := newElector(t, sb, "b")
		ta := mustCampaign(t, a)
		bc := campaign(t.Context(), b)
		time.Sleep(2 * time.Second)
		sb.armed.Store(true)
		<-sb.inRead // b's next poll has read the record held by a
		resigned := time.Now()
		if err := ta.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the feed's report of the release reached b
		close(sb.gate)
		w := <-bc
		if w.Err != nil {
			t.Fatal(w.Err)
		}
		if d := w.At.Sub(resigned); d >= poll/2 {
			t.Fatalf("handover after a release during a read took %v; want at once, not at the next poll (%v)", d, poll)
		}
	})
}

func TestTransfer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		a := newElector(t, st, "a")
		b := newElector(t, st, "b")
		c := newElector(t, st, "c")
		ta := mustCampaign(t, a)
		cc := campaign(t.Context(), c)
		bc := campaign(t.Context(), b)
		time.Sleep(time.Second)

		err := baton.Transfer(t.Context(), st, "billing", "b", ta.Token()+1)
		if !errors.Is(err, baton.ErrTokenAhead) || errors.Is(err, baton.ErrStaleToken) {
			t.Fatalf("transfer with a token no term has had: %v, want ErrTokenAhead, not ErrStaleToken", err)
		}
		err = baton.Transfer(t.Context(), st, "billing", "b", ta.Token()-1)
		if !errors.Is(err, baton.ErrStaleToken) {
			t.Fatalf("transfer with an old token: %v, want ErrStaleToken", err)
		}
		if ta.Err() != nil {
			t.Fatal("a refused transfer ended the term")
		}
		if err := baton.Transfer(t.Context(), st, "billing", "b", ta.Token()); err != nil {
			t.Fatal(err)
		}
		asked := time.Now()
		w := <-bc
		if w.Err != nil {
			t.Fatal(w.Err)
		}
		if d := w.At.Sub(asked); d > renew+poll {
			t.Fatalf("transfer took %v", d)
		}
		if !errors.Is(ta.Err(), baton.ErrDeposed) || w.Term.Token() != 2 {
			t.Fatalf("a: %v; b token %d", ta.Err(), w.Term.Token())
		}
		select {
		case w := <-cc:
			t.Fatalf("c was elected instead of the transfer target: %+v", w)
		default:
		}
		evs, _ := st.History(t.Context(), "billing", 0, 0)
		var kinds []store.EventKind
		for _, ev := range evs {
			kinds = append(kinds, ev.Kind)
		}
		want := []store.EventKind{store.Acquired, store.TransferRequested, store.Transferred, store.Transferred}
		if len(kinds) != len(want) {
			t.Fatalf("history %v, want %v", kinds, want)
		}
		for i := range want {
			if kinds[i] != want[i] {
				t.Fatalf("history %v, want %v", kinds, want)
			}
		}
		w.Term.Resign(t.Context())
	})
}

// A restarted process is a new incarnation: it waits out its previous
// incarnation's lease like any other contender and gets a new token.
func TestRestartNeverInherits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		old := newElector(t, st.Client("old"), "a")
		told := mustCampaign(t, old)
		st.SetUnreachable("old", true) // the process died
		died := time.Now()
		again := newElector(t, st.Client("new"), "a")
		tnew := mustCampaign(t, again)
		if d := time.Since(died); d < lease+2*margin {
			t.Fatalf("the restarted process led after %v, before its old lease could end", d)
		}
		if tnew.Token() != told.Token()+1 {
			t.Fatalf("token %d after %d", tnew.Token(), told.Token())
		}
	})
}

func TestCampaignCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		a := newElector(t, st, "a")
		b := newElector(t, st, "b")
		ta := mustCampaign(t, a)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := b.Campaign(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Campaign after its ctx ended: %v", err)
		}
		ta.Resign(t.Context())
		tb := mustCampaign(t, b) // campaigning again works
		if tb.Token() != 2 {
			t.Fatalf("token %d", tb.Token())
		}
	})
}

func TestRunRecampaignsAfterLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		e := newElector(t, st.Client("a"), "a")
		ctx, cancel := context.WithCancel(t.Context())
		var tokens []uint64
		done := make(chan error, 1)
		go func() {
			done <- e.Run(ctx, func(ctx context.Context, term *baton.Term) error {
				tokens = append(tokens, term.Token())
				if len(tokens) == 1 {
					st.SetUnreachable("a", true)
					<-ctx.Done()
					st.SetUnreachable("a", false)
					return ctx.Err()
				}
				cancel()
				<-ctx.Done()
				return nil
			})
		}()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
		if len(tokens) != 2 || tokens[1] <= tokens[0] {
			t.Fatalf("tokens %v", tokens)
		}
	})
}

func TestOptionsValidated(t *testing.T) {
	st := memstore.New()
	for _, tc := range []struct {
		name string
		opt  baton.Option
	}{
		{"zero lease", baton.WithLease(0)},
		{"renew not below lease", baton.WithRenew(DefaultLeaseForTest)},
		{"negative margin", baton.WithClockMargin(-time.Second)},
		{"zero poll", baton.WithPoll(0)},
		{"zero retry", baton.WithRetry(0)},
		{"nil clock", baton.WithClock(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := baton.New(st, "x", tc.opt); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := baton.New(st, ""); err == nil {
		t.Fatal("empty name accepted")
	}
	if _, err := baton.New(nil, "x"); err == nil {
		t.Fatal("nil store accepted")
	}
}

const DefaultLeaseForTest = baton.DefaultLease
