package kubetest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/kube"
)

// testClientGoLease: client-go's LeaseLock (what its leaderelection
// package writes with) and the Lease store on one Lease, write by write,
// with no timing: each sees the other's holder and duration, a client-go
// renewal changes the record's version (so a baton contender's swap at
// the version it read before conflicts), and the token never goes below
// leaseTransitions nor below what baton wrote, whatever client-go writes.
// It is the foundation of a mixed fleet, not the mixed-fleet test of
// issue #46 (real electors, pauses and kills).
func (e *env) testClientGoLease(t *testing.T) {
	ns := e.namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := kube.Open(ctx, e.srv.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: "mixed", Namespace: ns},
		Client:     e.cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "cg-1"},
	}
	now := metav1.NewTime(time.Now())
	ler := resourcelock.LeaderElectionRecord{HolderIdentity: "cg-1", LeaseDurationSeconds: 2, AcquireTime: now, RenewTime: now, LeaderTransitions: 4}
	if err := lock.Create(ctx, ler); err != nil {
		t.Fatal(err)
	}
	first, err := st.Get(ctx, "mixed")
	if err != nil || first.Holder != "cg-1" || first.Lease != 2*time.Second || first.Token != 4 {
		t.Fatalf("client-go's Lease reads as %+v, %v; want holder cg-1, lease 2s, token 4 (its leaseTransitions)", first, err)
	}

	// client-go renews: the record's version moves, and a takeover at
	// the version read before the renewal conflicts.
	ler.RenewTime = metav1.NewTime(time.Now().Add(time.Second))
	if err := lock.Update(ctx, ler); err != nil {
		t.Fatal(err)
	}
	renewed, err := st.Get(ctx, "mixed")
	if err != nil || renewed.Version <= first.Version || renewed.Holder != "cg-1" {
		t.Fatalf("after client-go's renewal: %+v, %v; want cg-1 at a version above %d", renewed, err, first.Version)
	}
	// A baton write that is not an election swap (a candidate row) keeps
	// client-go's spec, and so its record's version: it is no renewal.
	if err := st.Heartbeat(ctx, store.Candidate{Name: "mixed", Node: "n2", Incarnation: "n2-1", Every: time.Second}); err != nil {
		t.Fatal(err)
	}
	if again, err := st.Get(ctx, "mixed"); err != nil || again.Version != renewed.Version {
		t.Fatalf("after a candidate row: %+v, %v; want client-go's record at version %d still", again, err, renewed.Version)
	}
	take := store.Swap{Expect: first.Version, Record: store.Record{Name: "mixed", Holder: "n1", Incarnation: "n1-1", Token: 5, Lease: 3 * time.Second}, Event: store.TakenOver}
	if _, err := st.Swap(ctx, take); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a takeover at the version before client-go's renewal: %v, want ErrConflict", err)
	}

	// baton takes over at the version it read: client-go reads baton's
	// holder, duration and transitions.
	take.Expect = renewed.Version
	mine, err := st.Swap(ctx, take)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := lock.Get(ctx)
	if err != nil || got.HolderIdentity != "n1" || got.LeaseDurationSeconds != 4 || got.LeaderTransitions != 5 {
		t.Fatalf("client-go reads baton's write as %+v, %v; want holder n1, 4 s (the lease + 1 s), transitions 5", got, err)
	}

	// client-go takes it back (transitions + 1, as its elector does), then
	// an outside writer lowers leaseTransitions: the token never goes down.
	ler = *got
	ler.HolderIdentity, ler.LeaderTransitions = "cg-1", got.LeaderTransitions+1
	if err := lock.Update(ctx, ler); err != nil {
		t.Fatal(err)
	}
	back, err := st.Get(ctx, "mixed")
	if err != nil || back.Holder != "cg-1" || back.Token != 6 || back.Version <= mine.Version {
		t.Fatalf("after client-go took it back: %+v, %v; want cg-1, token 6, a version above %d", back, err, mine.Version)
	}
	ler.LeaderTransitions = 0
	if err := lock.Update(ctx, ler); err != nil {
		t.Fatal(err)
	}
	low, err := st.Get(ctx, "mixed")
	if err != nil || low.Token < mine.Token {
		t.Fatalf("after leaseTransitions was set to 0: %+v, %v; the token went below baton's %d", low, err, mine.Token)
	}
	if _, err := st.Swap(ctx, store.Swap{Expect: low.Version, Record: store.Record{Name: "mixed", Holder: "n1", Incarnation: "n1-2", Token: mine.Token - 1, Lease: 3 * time.Second}}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a swap below baton's token %d: %v, want ErrInvalid", mine.Token, err)
	}
}

// cgTimings are the client-go elector's timings in the mixed-fleet tests:
// a 2 s lease, as store/kube writes for a baton lease of 1 s.
const (
	cgLease = 2 * time.Second
	cgRenew = 1500 * time.Millisecond
	cgRetry = 250 * time.Millisecond
)

// cgCandidate is one client-go leaderelection candidate on a Lease: its
// real LeaderElector over a LeaseLock, with the times of its writes as
// holder and its leadership's start and end seen from outside.
type cgCandidate struct {
	id          string
	lastWrite   atomic.Int64 // unix ns of its last write of the Lease as holder
	transitions atomic.Int32 // leaseTransitions of its last write
	started     chan time.Time
	stopped     chan time.Time
	done        chan struct{}
}

// recordingLock is a LeaseLock that records each write it made.
type recordingLock struct {
	resourcelock.Interface
	c *cgCandidate
}

func (l *recordingLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, ler)
	l.wrote(ler, err)
	return err
}

func (l *recordingLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, ler)
	l.wrote(ler, err)
	return err
}

func (l *recordingLock) wrote(ler resourcelock.LeaderElectionRecord, err error) {
	if err == nil && ler.HolderIdentity == l.c.id {
		l.c.lastWrite.Store(time.Now().UnixNano())
		l.c.transitions.Store(int32(ler.LeaderTransitions))
	}
}

// startClientGo runs a client-go candidate id on the Lease name until ctx
// ends or its leadership does; it does not release the Lease on the way
// out (a crash, as far as the Lease shows).
func startClientGo(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name, id string) *cgCandidate {
	t.Helper()
	return runClientGo(ctx, t, cs, ns, name, id, false)
}

// runClientGo is startClientGo, releasing the Lease when ctx ends if
// release is set (client-go's ReleaseOnCancel).
func runClientGo(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name, id string, release bool) *cgCandidate {
	t.Helper()
	c := &cgCandidate{id: id, started: make(chan time.Time, 1), stopped: make(chan time.Time, 1), done: make(chan struct{})}
	lock := &recordingLock{c: c, Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: ns},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: cgLease, RenewDeadline: cgRenew, RetryPeriod: cgRetry, Name: name, ReleaseOnCancel: release,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { c.started <- time.Now() },
			OnStoppedLeading: func() { c.stopped <- time.Now() },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		le.Run(ctx)
	}()
	return c
}

// clientGoLeads starts the client-go candidate cg-1 on the Lease "shared"
// of ns (releasing it when stopped if release is set: ReleaseOnCancel),
// waits until it leads, and opens a Lease store on ns; stop ends the
// candidate.
func (e *env) clientGoLeads(ctx context.Context, t *testing.T, ns string, release bool) (cg *cgCandidate, stop context.CancelFunc, st *kube.Store) {
	t.Helper()
	cgCtx, stop := context.WithCancel(ctx)
	cg = runClientGo(cgCtx, t, e.cs, ns, "shared", "cg-1", release)
	select {
	case <-cg.started:
	case <-time.After(3 * cgLease):
		stop()
		t.Fatal("client-go did not start leading on a free Lease")
	}
	st, err := kube.Open(ctx, e.srv.Config, ns)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	return cg, stop, st
}

// testGroupBesideClientGo: a name a baton Group holds through its session
// says so on its own Lease for the store's session hold (an hour here),
// so a client-go candidate on that Lease never starts leading while the
// Group's term is valid; once the Group resigns, client-go takes the
// Lease at once, with leaseTransitions the Group's token + 1. (With the
// name's Lease written only at its acquisition and a duration of the
// lease plus a second, client-go took it after its 2 s.)
func (e *env) testGroupBesideClientGo(t *testing.T) {
	ns := e.namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := kube.Open(ctx, e.srv.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	g, err := baton.NewGroup(st, baton.WithNode("b1"), baton.WithLease(time.Second), baton.WithClockMargin(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	term, err := g.Campaign(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	cgCtx, cgStop := context.WithCancel(ctx)
	defer cgStop()
	cg := startClientGo(cgCtx, t, e.cs, ns, "shared", "cg-1")

	// Three of client-go's leases: it must not lead while the term holds.
	clientGoWaitsForGroup(ctx, t, cg, g, term, 3*cgLease)
}

// clientGoWaitsForGroup checks that client-go candidate cg does not start
// leading for wait while g's term holds the name, and that it takes the
// Lease at once, with the term's token + 1, when g resigns.
func clientGoWaitsForGroup(ctx context.Context, t *testing.T, cg *cgCandidate, g *baton.Group, term *baton.Term, wait time.Duration) {
	t.Helper()
	select {
	case at := <-cg.started:
		t.Fatalf("client-go started leading %s at %s while the Group's term was valid until %s (valid now: %v)", term.Name(), at.Format(time.RFC3339Nano), term.Deadline().Format(time.RFC3339Nano), term.Valid())
	case <-term.Done():
		t.Fatalf("the Group's term ended: %v", term.Err())
	case <-time.After(wait):
	}
	token := term.Token()
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cg.started:
	case <-time.After(3 * cgLease):
		t.Fatal("client-go did not take the Lease the Group released")
	}
	if got := cg.transitions.Load(); uint64(got) != token+1 {
		t.Fatalf("client-go took the Lease with leaseTransitions %d, want the Group's token %d + 1", got, token)
	}
}

// testBatonWaitsForClientGo: a baton Elector does not take a Lease that a
// client-go leader renews, and once that leader stops (without releasing)
// takes it no sooner than the Lease's leaseDurationSeconds plus twice its
// clock margin after client-go's last write, with leaseTransitions + 1 as
// its token.
func (e *env) testBatonWaitsForClientGo(t *testing.T) {
	ns := e.namespace(t)
	delay := testenv.MeasureDelay(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cg, cgStop, st := e.clientGoLeads(ctx, t, ns, false)
	defer cgStop()
	const margin = 100 * time.Millisecond
	// Three candidates: their candidate rows are writes to the Lease that
	// must not look like renewals of client-go's record.
	won := make(chan *baton.Term, 3)
	for i := 1; i <= 3; i++ {
		el, err := baton.New(st, "shared", baton.WithNode(fmt.Sprintf("b%d", i)), baton.WithLease(time.Second), baton.WithClockMargin(margin), baton.WithPoll(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer el.Close(context.Background())
		go func() {
			if term, err := el.Campaign(ctx); err == nil {
				won <- term
			}
		}()
	}
	select {
	case term := <-won:
		t.Fatalf("baton's %s took the Lease (token %d) while client-go renewed it", term.Node(), term.Token())
	case <-time.After(3 * cgLease):
	}
	cgStop()
	<-cg.done
	last := time.Unix(0, cg.lastWrite.Load())
	var term *baton.Term
	select {
	case term = <-won:
	case <-time.After(10 * cgLease):
		t.Fatal("no baton candidate took the Lease client-go stopped renewing")
	}
	took := time.Now()
	if wait, least := took.Sub(last), cgLease+2*margin; wait < least {
		t.Fatalf("baton took the Lease %s after client-go's last write, before its %s lease + 2e", wait, least)
	} else if most := cgLease + 2*margin + 200*time.Millisecond + delay.Slack(time.Second, last, took); wait > most {
		t.Fatalf("baton took the Lease %s after client-go's last write, later than %s", wait, most)
	} else {
		t.Logf("baton took the Lease %s after client-go's last write (lease %s + 2e %s)", wait, cgLease, 2*margin)
	}
	if want := uint64(cg.transitions.Load()) + 1; term.Token() != want {
		t.Fatalf("baton's token %d, want client-go's leaseTransitions + 1 = %d", term.Token(), want)
	}
}

// testBatonAfterClientGoReleases: a client-go leader that stops with
// ReleaseOnCancel leaves the Lease free (holderIdentity empty), and a
// waiting baton candidate takes it at once (its log says acquired, not
// taken over after expiry), with leaseTransitions + 1 as its token: the
// graceful step of a rolling update from client-go to baton has no gap.
func (e *env) testBatonAfterClientGoReleases(t *testing.T) {
	ns := e.namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cg, cgStop, st := e.clientGoLeads(ctx, t, ns, true)
	defer cgStop()
	el, err := baton.New(st, "shared", baton.WithNode("b1"), baton.WithLease(time.Second), baton.WithClockMargin(100*time.Millisecond), baton.WithPoll(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer el.Close(context.Background())
	won := make(chan *baton.Term, 1)
	go func() {
		if term, err := el.Campaign(ctx); err == nil {
			won <- term
		}
	}()
	select {
	case term := <-won:
		t.Fatalf("baton took the Lease (token %d) while client-go renewed it", term.Token())
	case <-time.After(2 * cgLease):
	}
	cgStop()
	<-cg.done
	released := time.Now()
	l, err := e.cs.CoordinationV1().Leases(ns).Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h != nil && *h != "" && *h != "b1" {
		t.Fatalf("after client-go's release the Lease's holder is %q, want none (or baton's b1)", *h)
	}
	select {
	case term := <-won:
		if want := uint64(cg.transitions.Load()) + 1; term.Token() != want {
			t.Fatalf("baton's token %d, want client-go's leaseTransitions + 1 = %d", term.Token(), want)
		}
		// At once: baton acquired a free record; it did not wait the
		// Lease out (that would be logged as a takeover after expiry).
		evs, err := st.History(ctx, "shared", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 || evs[len(evs)-1].Kind != store.Acquired || evs[len(evs)-1].Token != term.Token() {
			t.Fatalf("election log %+v; want its last event baton's acquisition of the free Lease at token %d", evs, term.Token())
		}
		t.Logf("baton acquired the Lease client-go released %v after its stop, token %d", time.Since(released).Round(time.Millisecond), term.Token())
	case <-time.After(10 * cgLease):
		t.Fatal("no baton candidate took the Lease client-go released")
	}
}

// testClientGoSeesSeconds forces the case that the Lease's extra second
// covers: client-go compares its records with times in whole seconds, so
// a baton renewal in the same second as the write client-go last saw
// looks like no renewal to it. baton acquires a Lease just after a
// second begins, a client-go candidate sees it, and baton renews it once
// just before that second ends, then stops: client-go must not lead
// before that renewal's sending plus baton's lease (1 s), when baton's
// term ends. With leaseDurationSeconds the lease rounded up (1 s)
// client-go led about 0.8 s early.
func (e *env) testClientGoSeesSeconds(t *testing.T) {
	ns := e.namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st, err := kube.Open(ctx, e.srv.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	// A loaded machine may miss the second's end: up to three tries,
	// each on a Lease of its own.
	for try := 1; try <= 3; try++ {
		if e.sameSecond(ctx, t, st, ns, fmt.Sprintf("sec%d", try)) {
			return
		}
	}
	t.Fatal("three times the renewal fell in another second than the acquisition: the machine is too slow for this test")
}

// sameSecond runs testClientGoSeesSeconds's case on the Lease name; it
// returns false if the renewal did not fall in the acquisition's second.
func (e *env) sameSecond(ctx context.Context, t *testing.T, st *kube.Store, ns, name string) bool {
	t.Helper()
	// Sleep until frac into the next second (or this one, if still ahead).
	untilIn := func(frac time.Duration) time.Time {
		now := time.Now()
		at := now.Truncate(time.Second).Add(frac)
		if !at.After(now) {
			at = at.Add(time.Second)
		}
		time.Sleep(time.Until(at))
		return at.Truncate(time.Second)
	}
	second := untilIn(20 * time.Millisecond)
	rec, err := st.Swap(ctx, store.Swap{Record: store.Record{Name: name, Holder: "b1", Incarnation: "b1-1", Token: 1, Lease: time.Second}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	cgCtx, cgStop := context.WithCancel(ctx)
	defer cgStop()
	cg := startClientGo(cgCtx, t, e.cs, ns, name, "cg-1")
	if again := untilIn(930 * time.Millisecond); !again.Equal(second) {
		t.Logf("the acquisition and the renewal fell in different seconds (%s, %s)", second, again)
		return false
	}
	sent := time.Now()
	if _, err := st.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
		t.Fatal(err)
	}
	l, err := e.cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if renewed := l.Spec.RenewTime.Time.Truncate(time.Second); !renewed.Equal(second) {
		t.Logf("the renewal was written at %s, in another second than the acquisition", l.Spec.RenewTime.Time)
		return false
	}
	select {
	case at := <-cg.started:
		if end := sent.Add(time.Second); at.Before(end) {
			t.Fatalf("client-go led at %s, %s before baton's term could end (%s): it did not see the renewal of the same second", at.Format("15:04:05.000"), end.Sub(at), end.Format("15:04:05.000"))
		}
		t.Logf("client-go led %s after baton's last renewal was sent (baton's lease 1 s, the Lease's %d s)", at.Sub(sent), *l.Spec.LeaseDurationSeconds)
	case <-time.After(10 * time.Second):
		t.Fatal("client-go did not take the Lease baton stopped renewing")
	}
	return true
}
