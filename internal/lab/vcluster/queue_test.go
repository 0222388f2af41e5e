package vcluster

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestQueueOrder holds the queue to its order, events by time, at one
// instant faults first, then the order of pushing (the preloaded events
// pushed first), with events pushed as a run pushes them: never before
// the last one popped, often at it, some far later, faults among them.
func TestQueueOrder(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 1))
		type want struct {
			at    time.Duration
			fault bool
			seq   int
		}
		var pending []want
		seq := 0
		mk := func(at time.Duration, fault bool) event {
			seq++
			pending = append(pending, want{at, fault, seq})
			ev := event{at: at, kind: evTick, arg: time.Duration(seq)}
			if fault {
				ev.kind = evFault
			}
			return ev
		}
		step := func() time.Duration {
			switch r.IntN(4) {
			case 0:
				return 0
			case 1:
				return time.Duration(r.IntN(4))
			case 2:
				return time.Duration(r.IntN(1 << 20))
			}
			return time.Duration(r.Int64N(1 << 40))
		}
		var q queue
		var fixed []event
		for range r.IntN(50) {
			fixed = append(fixed, mk(step(), r.IntN(2) == 0))
		}
		q.preload(fixed)
		now := time.Duration(0)
		for range r.IntN(20) {
			q.push(mk(now+step(), false))
		}
		for popped := 0; q.len() > 0; popped++ {
			ev := q.pop()
			slices.SortStableFunc(pending, func(a, b want) int {
				switch {
				case a.at != b.at:
					return int(min(max(a.at-b.at, -1), 1))
				case a.fault != b.fault:
					if a.fault {
						return -1
					}
					return 1
				}
				return a.seq - b.seq
			})
			w := pending[0]
			pending = pending[1:]
			if ev.at != w.at || ev.arg != time.Duration(w.seq) {
				t.Fatalf("seed %d, pop %d: got the event pushed %d at %v, want the one pushed %d at %v", seed, popped, ev.arg, ev.at, w.seq, w.at)
			}
			now = ev.at
			for range r.IntN(3) * min(1, max(0, 400-popped)) {
				q.push(mk(now+step(), r.IntN(20) == 0))
			}
			if len(pending) != q.len() {
				t.Fatalf("seed %d: len %d, want %d", seed, q.len(), len(pending))
			}
		}
	}
}
