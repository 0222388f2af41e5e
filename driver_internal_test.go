package baton

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store/memstore"
)

// A timer that comes due while the driver steps a large batch (here a
// change feed's report of 2,500 writes) is stepped before the rest of the
// batch: the session's renewal does not wait behind it.
func TestDriverTicksBetweenParts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := newConfig([]Option{WithNode("a"), WithIncarnation("a.1"), WithLease(3 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		d := newDriver(memstore.New(), cfg, election.NewGroup(cfg.machine(), true))
		var stepped []election.Event
		elected := false
		d.announce = func(now time.Time, ev election.Event, acts []election.Action) {
			stepped = append(stepped, ev)
			for _, a := range acts {
				if _, ok := a.(election.Elected); ok {
					elected = true
				}
			}
		}
		replies := make(chan []election.Event, 64)
		d.step([]election.Event{election.Start{Name: "x", Hold: true}}, replies)
		for !elected {
			synctest.Wait()
			select {
			case r := <-replies:
				d.step(r, replies)
			default:
				t.Fatal("no reply, and x not elected")
			}
		}
		time.Sleep(time.Until(d.g.Next()) + time.Millisecond) // the session's renewal is due
		stepped = nil
		evs := make([]election.Event, 2500)
		for i := range evs {
			evs[i] = election.Changed{Name: "other-" + string(rune('a'+i%26)), Version: int64(i + 1)}
		}
		d.step(evs, replies)
		tick := -1
		for i, ev := range stepped {
			if _, ok := ev.(election.Tick); ok {
				tick = i
				break
			}
		}
		if tick < 0 || tick > election.DefaultTakeStep {
			t.Fatalf("the due timer was stepped at position %d of %d events, want right after the first %d", tick, len(stepped), election.DefaultTakeStep)
		}
		synctest.Wait()
		for len(replies) > 0 {
			<-replies
		}
	})
}
