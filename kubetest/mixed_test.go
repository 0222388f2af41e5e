package kubetest

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

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
	if err != nil || got.HolderIdentity != "n1" || got.LeaseDurationSeconds != 3 || got.LeaderTransitions != 5 {
		t.Fatalf("client-go reads baton's write as %+v, %v; want holder n1, 3 s, transitions 5", got, err)
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
