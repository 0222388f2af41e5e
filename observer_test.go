package baton_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store/memstore"
)

// recorder is an Observer that writes down what it is told.
type recorder struct {
	mu     sync.Mutex
	events []string
	counts map[string]int
}

func (r *recorder) add(ev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.events = append(r.events, ev)
	r.counts[ev]++
}

func (r *recorder) count(ev string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[ev]
}

func cause(err error) string {
	switch {
	case errors.Is(err, baton.ErrResigned):
		return "resigned"
	case errors.Is(err, baton.ErrLeaseExpired):
		return "lease-expired"
	}
	return "other"
}

func (r *recorder) Campaigning(name string, lease time.Duration) {
	r.add(fmt.Sprintf("campaigning %s %v", name, lease))
}
func (r *recorder) Idle(name string) { r.add("idle " + name) }
func (r *recorder) StoreCall(name string, _ time.Time, err error) {
	if err != nil {
		r.add("store-error " + name)
	}
}
func (r *recorder) Elected(name string, token uint64) {
	r.add(fmt.Sprintf("elected %s %d", name, token))
}
func (r *recorder) Renewal(name string, latency time.Duration) {
	if latency >= 0 {
		r.add("renewal " + name)
	}
}
func (r *recorder) Extended(name string, left time.Duration) {
	if left > 0 && left <= lease {
		r.add("extended " + name)
	}
}
func (r *recorder) Lost(name string, err error) { r.add("lost " + name + " " + cause(err)) }
func (r *recorder) GroupElected()               { r.add("group-elected") }
func (r *recorder) GroupLost(err error)         { r.add("group-lost " + cause(err)) }
func (r *recorder) GroupStoreError(error)       { r.add("group-store-error") }
func (r *recorder) SessionRenewal(latency time.Duration) {
	if latency >= 0 {
		r.add("session-renewal")
	}
}

var _ baton.Observer = (*recorder)(nil)

// An Elector reports its campaign, its term, each renewal and the term's
// end to its Observer, in that order; store failures as errors.
func TestObserverElector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		var r recorder
		e := newElector(t, st.Client("a"), "a", baton.WithObserver(&r))
		term := mustCampaign(t, e)
		time.Sleep(5 * renew)
		synctest.Wait()
		if n := r.count("renewal billing"); n < 4 {
			t.Fatalf("%d renewals reported in 5 renew intervals", n)
		}
		if n := r.count("extended billing"); n < 4 {
			t.Fatalf("%d extensions reported in 5 renew intervals", n)
		}
		st.SetUnreachable("a", true)
		time.Sleep(renew + poll)
		synctest.Wait()
		if r.count("store-error billing") == 0 {
			t.Fatal("no store error reported while unreachable")
		}
		st.SetUnreachable("a", false)
		time.Sleep(renew)
		if err := term.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		want := []string{fmt.Sprintf("campaigning billing %v", lease), fmt.Sprintf("elected billing %d", term.Token())}
		if len(r.events) < 2 || r.events[0] != want[0] || r.events[1] != want[1] {
			t.Fatalf("first events %q, want %q", r.events, want)
		}
		if r.counts["lost billing resigned"] != 1 || r.counts["idle billing"] == 0 {
			t.Fatalf("after Resign: %v", r.counts)
		}
	})
}

// A Group reports in aggregate: a term won and lost per name, and the
// session's renewals.
func TestObserverGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r recorder
		g, err := baton.NewGroup(memstore.New(), baton.WithNode("a"), baton.WithLease(lease), baton.WithRenew(renew),
			baton.WithClockMargin(margin), baton.WithPoll(poll), baton.WithObserver(&r))
		if err != nil {
			t.Fatal(err)
		}
		names := shardNames(50)
		if err := g.Hold(t.Context(), names, nil); err != nil {
			t.Fatal(err)
		}
		waitHeld(t, g, len(names), lease)
		time.Sleep(3 * renew)
		synctest.Wait()
		if n := r.count("group-elected"); n != 50 {
			t.Fatalf("%d group terms won reported, want 50", n)
		}
		if n := r.count("session-renewal"); n < 2 {
			t.Fatalf("%d session renewals reported in 3 renew intervals", n)
		}
		if err := g.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := r.count("group-lost resigned"); n != 50 {
			t.Fatalf("%d group terms resigned reported after Close, want 50", n)
		}
	})
}
