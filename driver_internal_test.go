package baton

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
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

// slowFirstStore is a store whose first batched writes are slow (holding
// the store longer than adapt allows) and the rest quick; it records the
// size of every batched write and applies none.
type slowFirstStore struct {
	*memstore.Store
	mu    sync.Mutex
	sizes []int
	slow  int // how many batched writes are still slow
}

func (s *slowFirstStore) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	s.mu.Lock()
	s.sizes = append(s.sizes, len(swaps))
	slow := s.slow > 0
	s.slow--
	s.mu.Unlock()
	if slow {
		time.Sleep(200 * time.Millisecond)
	} else {
		time.Sleep(time.Millisecond)
	}
	return make([]store.SwapResult, len(swaps)), nil
}

// The batch size that slow writes halved grows back for the swaps already
// queued: a bulk takeover's later steps, asked for while the store was
// slow, are not written in small batches once it is quick again (a
// 100,000-name takeover on SQLite ran in batches of 50, each with its
// commit, for seconds after two slow batches: BENCHMARKS.md).
func TestDriverBatchRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := newConfig([]Option{WithNode("a"), WithIncarnation("a.1"), WithLease(3 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		st := &slowFirstStore{Store: memstore.New(), slow: 2}
		d := newDriver(st, cfg, election.NewGroup(cfg.machine(), true))
		swaps := func(n int) []store.Swap {
			out := make([]store.Swap, n)
			for i := range out {
				out[i] = store.Swap{Record: store.Record{Name: fmt.Sprint("n", i)}}
			}
			return out
		}
		replies := make(chan []election.Event, 1024)
		d.sendSwaps(swaps(2*maxBatch), replies) // both batches slow: the size halves twice
		time.Sleep(time.Second)
		synctest.Wait()
		if got := d.batch.Load(); got != maxBatch/4 {
			t.Fatalf("batch size after two slow batches: %d, want %d", got, maxBatch/4)
		}
		const later = 20 * maxBatch
		d.sendSwaps(swaps(later), replies) // a later step, asked for at the small size
		time.Sleep(time.Second)
		synctest.Wait()
		st.mu.Lock()
		sizes := st.sizes[2:]
		st.mu.Unlock()
		sent, full := 0, 0
		for _, n := range sizes {
			sent += n
			if n == maxBatch {
				full++
			}
		}
		if sent != later {
			t.Fatalf("%d swaps written, want %d", sent, later)
		}
		// 250, 500, then 1,000 a batch (two in flight may each double).
		if len(sizes) > later/maxBatch+4 || full < later/maxBatch-3 {
			t.Fatalf("%d swaps in %d batches %v: want the size back at %d after a few", later, len(sizes), sizes, maxBatch)
		}
	})
}
