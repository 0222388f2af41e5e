package baton_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/store/memstore"
)

// Renewed wakes its caller at every renewal, with the new Deadline
// readable then, and at the end of the term; an ended term's channel is
// closed from the start.
func TestRenewedFollowsEveryDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		e := newElector(t, st.Client("a"), "a")
		term := mustCampaign(t, e)
		last := term.Deadline()
		for i := range 3 {
			ch := term.Renewed()
			began := time.Now()
			<-ch
			d := term.Deadline()
			if !d.After(last) {
				t.Fatalf("renewal %d: deadline %v not after %v", i, d, last)
			}
			// A renewal sent at s makes the term valid until s + lease.
			if waited := time.Since(began); waited > renew {
				t.Fatalf("renewal %d: woken %v after the call, want within the renew interval %v", i, waited, renew)
			}
			if d.After(time.Now().Add(lease)) {
				t.Fatalf("renewal %d: deadline %v later than now + lease", i, d.Sub(time.Now()))
			}
			last = d
		}
		// The store becomes unreachable: no renewal wakes the caller, the
		// end of the term at its deadline does.
		st.SetUnreachable("a", true)
		ch := term.Renewed()
		d := term.Deadline()
		<-ch
		if term.Err() == nil || time.Now().Before(d) || term.Deadline() != d {
			t.Fatalf("woken at %v before the deadline %v, or with the term going on (%v)", time.Now(), d, term.Err())
		}
		select {
		case <-term.Renewed():
		default:
			t.Fatal("Renewed of an ended term is not closed")
		}
	})
}
