package kubetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/kube"
)

// testSessionHold: a Group's renewal writes its session's Lease only, not
// the Lease of every name it holds (store/kube, "Names held through a
// session"): 40 names held at a lease of 1 s cost about one Lease update
// a renew interval, where writing every name would cost 40. With a
// session hold of 8 s (each name's Lease says 8 s, and is written again
// in the background from 2.5 s of age, before a renewal at 5 s must), a
// client-go candidate on one of the names never starts leading in 2.5
// holds; once the Group resigns it takes the Lease at once.
func (e *env) testSessionHold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	hold := func(t *testing.T, opts ...kube.Option) (*baton.Group, []*baton.Term, string) {
		ns := e.namespace(t)
		st, err := kube.Open(ctx, e.srv.Config, ns, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		g, err := baton.NewGroup(st, baton.WithNode("b1"), baton.WithLease(time.Second), baton.WithClockMargin(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close(context.Background()) })
		var terms []*baton.Term
		for i := range 40 {
			term, err := g.Campaign(ctx, fmt.Sprintf("n-%02d", i))
			if err != nil {
				t.Fatal(err)
			}
			terms = append(terms, term)
		}
		return g, terms, ns
	}

	t.Run("OneWriteARenewal", func(t *testing.T) {
		_, terms, _ := hold(t)
		const window = 6 * time.Second
		before := e.leaseRequests(t)
		time.Sleep(window)
		after := e.leaseRequests(t)
		for _, term := range terms {
			if !term.Valid() {
				t.Fatalf("a term of %s ended while held: %v", term.Name(), term.Err())
			}
		}
		// The Group renews every third of its 1 s lease: 18 renewals in
		// the window. The API server's own Leases add a few updates.
		renewals := window.Seconds() * 3
		puts := after["PUT"] - before["PUT"]
		t.Logf("%.0f Lease updates in %v while holding 40 names (%.1f a renew interval)", puts, window, puts/renewals)
		if puts > 2*renewals {
			t.Fatalf("%.0f Lease updates in %v, %.1f a renew interval: want about one (the session's), not one per name", puts, window, puts/renewals)
		}
	})

	t.Run("ClientGoWaits", func(t *testing.T) {
		const sessionHold = 8 * time.Second
		g, terms, ns := hold(t, kube.WithSessionHold(sessionHold))
		cgCtx, cgStop := context.WithCancel(ctx)
		defer cgStop()
		cg := startClientGo(cgCtx, t, e.cs, ns, "n-07", "cg-1")
		clientGoWaitsForGroup(ctx, t, cg, g, terms[7], sessionHold*5/2)
	})
}

// testGetManyByList: GetMany of many names lists their Leases by label,
// and finds a Lease only client-go wrote (no baton label) with its
// holder, a baton name with its record, and no record for a name with
// no Lease.
func (e *env) testGetManyByList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := e.namespace(t)
	st, err := kube.Open(ctx, e.srv.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	holder, secs, trans := "cg-1", int32(15), int32(4)
	now := metav1.NewMicroTime(time.Now())
	if _, err := e.cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "foreign"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, LeaseTransitions: &trans, RenewTime: &now, AcquireTime: &now},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := []string{"foreign", "absent"}
	var swaps []store.Swap
	for i := range 40 {
		name := fmt.Sprintf("Name/%02d", i) // not an object name: a Lease named by its digest
		names = append(names, name)
		swaps = append(swaps, store.Swap{Record: store.Record{Name: name, Holder: "b1", Incarnation: "b1-1", Token: uint64(i + 1), Lease: 3 * time.Second}, Event: store.Acquired})
	}
	if res, err := st.SwapMany(ctx, swaps); err != nil {
		t.Fatal(err)
	} else {
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	got, err := st.GetMany(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	if r := got[0]; r.Err != nil || r.Record.Holder != "cg-1" || r.Record.Token != 4 {
		t.Errorf("GetMany: client-go's Lease reads as %+v, want holder cg-1, token 4", r)
	}
	if r := got[1]; !errors.Is(r.Err, store.ErrNotFound) {
		t.Errorf("GetMany: a name with no Lease reads as %+v, want ErrNotFound", r)
	}
	for i, r := range got[2:] {
		if r.Err != nil || r.Record.Name != names[i+2] || r.Record.Token != uint64(i+1) {
			t.Errorf("GetMany: %s reads as %+v, want token %d", names[i+2], r, i+1)
		}
	}
}
