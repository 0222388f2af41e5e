package baton_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// callStore counts a node's candidacy writes and reads; down cuts the
// node off from the store (every call fails, as for a crashed node).
type callStore struct {
	store.Store
	beats, reads atomic.Int64
	down         atomic.Bool
}

func (s *callStore) Heartbeat(ctx context.Context, c store.Candidate) error {
	if s.down.Load() {
		return store.ErrUnavailable
	}
	s.beats.Add(1)
	return s.Store.Heartbeat(ctx, c)
}

func (s *callStore) Candidates(ctx context.Context, name string) ([]store.Candidate, error) {
	if s.down.Load() {
		return nil, store.ErrUnavailable
	}
	s.reads.Add(1)
	return s.Store.Candidates(ctx, name)
}

func (s *callStore) Get(ctx context.Context, name string) (store.Record, error) {
	if s.down.Load() {
		return store.Record{}, store.ErrUnavailable
	}
	return s.Store.Get(ctx, name)
}

func (s *callStore) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	if s.down.Load() {
		return store.Record{}, store.ErrUnavailable
	}
	return s.Store.Swap(ctx, sw)
}

// preferNode is one node of a name with a preference: an Elector running
// work that reports a safe point between units of unit each.
type preferNode struct {
	id   string
	st   *callStore
	e    *baton.Elector
	stop context.CancelFunc
	done chan struct{}

	mu     sync.Mutex
	cut    int             // units whose context ended before they finished
	causes []error         // the causes of its terms
	units  map[uint64]int  // units finished, by term
	leads  []time.Duration // when each term began, since the test's start
	ends   []time.Duration // when each term's work returned
}

func newPreferNode(t *testing.T, ms *memstore.Store, id string, weight int, opts ...baton.Option) *preferNode {
	t.Helper()
	st := &callStore{Store: ms.Client(id)}
	e, err := baton.New(st, "billing", append([]baton.Option{baton.WithNode(id), baton.WithLease(lease), baton.WithRenew(renew),
		baton.WithClockMargin(margin), baton.WithPoll(poll), baton.WithCandidate(baton.Candidacy{Weight: weight})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &preferNode{id: id, st: st, e: e, units: map[uint64]int{}}
}

// run runs n until stopped: while it leads, units of unit each, at a safe
// point only between them.
func (n *preferNode) run(t0 time.Time, unit time.Duration) *preferNode {
	ctx, cancel := context.WithCancel(context.Background())
	n.stop, n.done = cancel, make(chan struct{})
	go func() {
		defer close(n.done)
		n.e.Run(ctx, func(ctx context.Context, term *baton.Term) error {
			n.mu.Lock()
			n.leads = append(n.leads, time.Since(t0))
			n.mu.Unlock()
			defer func() {
				n.mu.Lock()
				n.causes = append(n.causes, context.Cause(term.Context()))
				n.ends = append(n.ends, time.Since(t0))
				n.mu.Unlock()
			}()
			for {
				if err := term.SafePoint(false); err != nil {
					return err
				}
				select {
				case <-time.After(unit):
					n.mu.Lock()
					n.units[term.Token()]++
					n.mu.Unlock()
				case <-ctx.Done():
					n.mu.Lock()
					n.cut++
					n.mu.Unlock()
					return ctx.Err()
				}
				if err := term.SafePoint(true); err != nil {
					return err
				}
				select {
				case <-time.After(unit / 2):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		})
	}()
	return n
}

func (n *preferNode) halt() {
	if n.stop != nil {
		n.stop()
		<-n.done
		n.stop = nil
	}
}

func holder(t *testing.T, ms *memstore.Store) store.Record {
	t.Helper()
	r, err := ms.Get(context.Background(), "billing")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Three nodes of weights 1, 5 and 10 start worst first under
// highest-weight: the lead reaches the weight-10 node within two
// hysteresis intervals of its start, each handover at a safe point (no
// unit of work is cut off), at most one a hysteresis; when the weight-10
// node stops, another takes over, and when it comes back the lead moves
// back to it.
func TestPreferenceMovesTheLeadAtSafePoints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		const hyst = 2 * lease
		pref := baton.WithPreference("highest-weight", hyst)
		t0 := time.Now()
		unit := 700 * time.Millisecond
		n1 := newPreferNode(t, ms, "w1", 1, pref).run(t0, unit)
		time.Sleep(lease)
		n5 := newPreferNode(t, ms, "w5", 5, pref).run(t0, unit)
		time.Sleep(lease)
		n10 := newPreferNode(t, ms, "w10", 10, pref).run(t0, unit)
		started := time.Now()
		for holder(t, ms).Holder != "w10" {
			if time.Since(started) > 2*hyst {
				t.Fatalf("w10 does not lead %v after it started (holder %s)", time.Since(started), holder(t, ms).Holder)
			}
			time.Sleep(poll)
		}
		time.Sleep(3 * hyst) // and it stays there
		if r := holder(t, ms); r.Holder != "w10" {
			t.Fatalf("the lead left w10: %+v", r)
		}
		n10.halt()
		time.Sleep(lease + 2*margin + 2*renew)
		if r := holder(t, ms); r.Holder == "" || r.Holder == "w10" {
			t.Fatalf("nobody took over from w10: %+v", r)
		}
		back := time.Now()
		n10b := newPreferNode(t, ms, "w10", 10, pref).run(t0, unit)
		for holder(t, ms).Holder != "w10" {
			if time.Since(back) > 2*hyst {
				t.Fatalf("the lead did not come back to w10 %v after it restarted (holder %s)", time.Since(back), holder(t, ms).Holder)
			}
			time.Sleep(poll)
		}
		for _, n := range []*preferNode{n1, n5, n10b, n10} {
			n.halt()
		}
		evs, err := ms.History(context.Background(), "billing", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		transfers := 0
		for _, ev := range evs {
			if ev.Kind == store.Transferred && ev.Holder == "" { // the release towards the target; its take follows
				transfers++
			}
		}
		var handovers []time.Duration
		for _, n := range []*preferNode{n1, n5, n10, n10b} {
			handed := 0
			for i, c := range n.causes {
				if errors.Is(c, baton.ErrHandedOver) {
					handed++
					handovers = append(handovers, n.ends[i])
					if held := n.ends[i] - n.leads[i]; held < hyst {
						t.Errorf("%s handed over %v into its term, within the hysteresis %v", n.id, held, hyst)
					}
				}
			}
			// A unit is cut off only by the end of the test or a stop,
			// never by a handover: a node that handed over was at a safe
			// point.
			if n.cut > 1 {
				t.Errorf("%s: %d units cut off (terms ended: %v)", n.id, n.cut, n.causes)
			}
			t.Logf("%s: terms began at %v, ended at %v by %v (%d handovers)", n.id, n.leads, n.ends, n.causes, handed)
		}
		if len(handovers) < 2 || transfers != len(handovers) {
			t.Errorf("%d handovers, %d transfers in the log; want at least 2 (to w10, and back to it), one transfer each", len(handovers), transfers)
		}
		slices.Sort(handovers)
		for i := 1; i < len(handovers); i++ {
			if d := handovers[i] - handovers[i-1]; d < hyst {
				t.Errorf("two handovers %v apart, within the hysteresis %v", d, hyst)
			}
		}
	})
}

// Work that never reports a safe point is never handed over.
func TestPreferenceWaitsForASafePoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		pref := baton.WithPreference("highest-weight", lease)
		low := newPreferNode(t, ms, "low", 1, pref)
		term := mustCampaign(t, low.e)
		high := newPreferNode(t, ms, "high", 2, pref).run(time.Now(), time.Second)
		defer high.halt()
		time.Sleep(10 * lease)
		if term.Err() != nil || holder(t, ms).Holder != "low" {
			t.Fatalf("handed over without a safe point: %v, %+v", term.Err(), holder(t, ms))
		}
		if err := term.SafePoint(true); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * renew)
		if !errors.Is(term.Err(), baton.ErrHandedOver) {
			t.Fatalf("at a safe point, the term ended with %v, want ErrHandedOver", term.Err())
		}
		if err := term.SafePoint(false); !errors.Is(err, baton.ErrHandedOver) {
			t.Fatalf("SafePoint(false) after the handover: %v", err)
		}
		time.Sleep(renew)
		if r := holder(t, ms); r.Holder != "high" || r.Token != 2 {
			t.Fatalf("after the handover: %+v", r)
		}
	})
}

// Without a policy a leader writes no candidacy row and reads none, and a
// waiting node refreshes its row every CandidateEvery polls, as before
// preferences existed; with one, every renew interval, leading or not.
func TestPreferenceWriteRates(t *testing.T) {
	for _, tc := range []struct {
		opts                     []baton.Option
		leaderBeats, waiterBeat  int64
		leaderReads, waiterReads int64
	}{
		{nil, 2, int64(10 * lease / (baton.CandidateEvery * poll)), 0, 0}, // the leader's: at its campaign, and deleted when it won
		{[]baton.Option{baton.WithPreference("highest-weight", lease)}, int64(10*lease/renew) + 1, int64(10 * lease / renew), int64(10*lease/renew) + 1, int64(10 * lease / renew)}, // the leader's rows and reads: at its campaign, then every renew interval; the waiter's every renew interval
	} {
		synctest.Test(t, func(t *testing.T) {
			ms := memstore.New()
			a := newPreferNode(t, ms, "a", 0, tc.opts...)
			term := mustCampaign(t, a.e)
			b := newPreferNode(t, ms, "b", 0, tc.opts...)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); b.e.Campaign(ctx) }()
			time.Sleep(10*lease - time.Nanosecond)
			synctest.Wait()
			if got := a.st.beats.Load(); got != tc.leaderBeats {
				t.Errorf("%d options: the leader wrote its row %d times in 10 leases, want %d", len(tc.opts), got, tc.leaderBeats)
			}
			if got := a.st.reads.Load(); got != tc.leaderReads {
				t.Errorf("%d options: the leader read the rows %d times in 10 leases, want %d", len(tc.opts), got, tc.leaderReads)
			}
			if got := b.st.beats.Load(); got != tc.waiterBeat {
				t.Errorf("%d options: the waiting node wrote its row %d times in 10 leases, want %d", len(tc.opts), got, tc.waiterBeat)
			}
			if got := b.st.reads.Load(); got != tc.waiterReads {
				t.Errorf("%d options: the waiting node read the rows %d times in 10 leases, want %d", len(tc.opts), got, tc.waiterReads)
			}
			cancel()
			<-done
			term.Resign(context.Background())
			a.e.Close(context.Background())
			b.e.Close(context.Background())
		})
	}
}

// Bad preferences and attributes are refused by New, naming the flag.
func TestPreferenceOptionsValidated(t *testing.T) {
	for _, tc := range []struct {
		option string
		opts   []baton.Option
	}{
		{"prefer", []baton.Option{baton.WithPreference("heaviest", lease)}},
		{"prefer-hysteresis", []baton.Option{baton.WithPreference("highest-weight", 0)}},
		{"prefer-hysteresis", []baton.Option{baton.WithLease(lease), baton.WithPreference("highest-weight", lease/2)}},
		{"weight", []baton.Option{baton.WithCandidate(baton.Candidacy{Weight: baton.MaxWeight + 1})}},
		{"candidate-version", []baton.Option{baton.WithCandidate(baton.Candidacy{Version: "1.x"})}},
		{"candidate-label", []baton.Option{baton.WithCandidate(baton.Candidacy{Labels: map[string]string{"zone": "eu 1"}})}},
		{"candidate-label", []baton.Option{baton.WithCandidate(baton.Candidacy{Labels: map[string]string{"weight": "3"}})}},
	} {
		_, err := baton.New(memstore.New(), "billing", append([]baton.Option{baton.WithNode("a")}, tc.opts...)...)
		var oe *baton.OptionError
		if !errors.As(err, &oe) || oe.Option != tc.option {
			t.Errorf("New with %s: %v, want an OptionError naming %s", tc.option, err, tc.option)
		}
	}
	if _, err := baton.NewGroup(memstore.New(), baton.WithPreference("highest-weight", lease)); err == nil {
		t.Error("NewGroup with WithPreference: no error")
	}
	e, err := baton.New(memstore.New(), "billing", baton.WithLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetPreference("label:zone=eu-1", lease/2); err == nil {
		t.Error("SetPreference with a hysteresis below the lease: no error")
	}
	if err := e.SetPreference("label:zone=eu-1", 2*lease); err != nil {
		t.Fatal(err)
	}
	if p, h := e.Preference(); p != "label:zone=eu-1" || h != 2*lease {
		t.Errorf("Preference() = %s, %v", p, h)
	}
}

// A failover under highest-weight goes to the best live candidate: when
// the weight-10 leader is cut off, the weight-1 node, which may take the
// name over as soon as the weight-5 one, defers its takeover (the
// library's waiting nodes read the candidacies every renew interval with
// a policy), and the weight-5 node takes it; the weight-1 node never
// leads.
func TestPreferenceFailoverDefers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		pref := baton.WithPreference("highest-weight", lease)
		top := newPreferNode(t, ms, "top", 10, pref)
		term := mustCampaign(t, top.e)
		low := newPreferNode(t, ms, "low", 1, pref).run(time.Now(), time.Second)
		defer low.halt()
		time.Sleep(poll / 2)
		mid := newPreferNode(t, ms, "mid", 5, pref).run(time.Now(), time.Second)
		defer mid.halt()
		time.Sleep(3 * lease)
		if r := holder(t, ms); r.Holder != "top" {
			t.Fatalf("before the cut: %+v", r)
		}
		top.st.down.Store(true)
		time.Sleep(4 * lease)
		if r := holder(t, ms); r.Holder != "mid" || r.Token != 2 {
			t.Errorf("after the failover: %+v, want mid with token 2", r)
		}
		low.mu.Lock()
		if len(low.leads) != 0 {
			t.Errorf("the weight-1 node led %d terms", len(low.leads))
		}
		low.mu.Unlock()
		<-term.Done()
		top.st.down.Store(false)
		top.e.Close(context.Background())
	})
}
