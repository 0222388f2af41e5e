package vcluster

import (
	"math"
	"math/bits"
	"slices"
	"time"
)

type evKind int32

// event is one queued event, kept small: the queue moves them around.
type event struct {
	at   time.Duration
	kind evKind
	node int32
	inc  int32
	gen  int32
	ev   any           // election.Event or a *batch (evReply), a call (evCall: see send), scheduler.Event (evWorkReply)
	arg  time.Duration // trigger instant (evTrigger, evNodeTrigger), fault index (evFault)
	next int32         // the next slot in its bucket, or in the free list (see queue; 0: none)
}

// queue holds the events by time; at one instant faults come first, then
// the order of pushing.
//
// The faults and the events known before the run (preload) are in fixed,
// sorted, from next on; a fault pushed during the run is put in its place
// there. The events the run makes are in a radix heap: no event is pushed
// earlier than the last one popped (the run's clock never goes back), so
// an event waits in the bucket of the highest bit in which its instant
// differs from last, the heap's last minimum (bucket 0: the events at
// last). A pop takes bucket 0's first event, or else makes the earliest
// instant of the lowest bucket that holds any (kept in least) last and
// spreads that bucket over the buckets below, in its order. Every bucket thus keeps its events
// in the order of pushing, which is their order at one instant. Fixed
// events come before the heap's at one instant: those preloaded were
// pushed first, and the heap holds no fault.
//
// An event stays in its slot of evs from its push until the pop after
// the one that returned it; a bucket is a list of slots linked through
// their events' next, so that spreading one moves no event.
type queue struct {
	fixed   []event
	next    int
	fixedAt time.Duration // fixed[next]'s instant (none: math.MaxInt64)

	last        time.Duration
	full        uint64            // bit i set: bucket i holds an event
	first, tail [64]int32         // each bucket's first and last slot (0: empty), by bits.Len64 of at^last (at is never negative)
	least       [64]time.Duration // each bucket's earliest instant
	n           int               // events in the buckets

	evs  []event // by slot, from 1
	free int32   // the first free slot, linked through next (0: none)
	held int32   // the slot of the event pop returned last, freed at the next pop (0: none)
}

// fixedLess orders the fixed events: by instant, faults first, the
// order of pushing kept by a stable sort.
func fixedLess(a, b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.kind == evFault && b.kind != evFault
}

// preload sets the events known before the run, in the order they would
// be pushed.
func (q *queue) preload(evs []event) {
	slices.SortStableFunc(evs, func(a, b event) int {
		switch {
		case fixedLess(&a, &b):
			return -1
		case fixedLess(&b, &a):
			return 1
		}
		return 0
	})
	q.fixed, q.next = evs, 0
	q.fixedAt = q.fixedNext()
}

// fixedNext is fixed[next]'s instant, math.MaxInt64 if none.
func (q *queue) fixedNext() time.Duration {
	if q.next < len(q.fixed) {
		return q.fixed[q.next].at
	}
	return math.MaxInt64
}

// popFixed takes fixed[next].
func (q *queue) popFixed() *event {
	q.next++
	q.fixedAt = q.fixedNext()
	return &q.fixed[q.next-1]
}

func (q *queue) len() int { return q.n + len(q.fixed) - q.next }

func (q *queue) push(ev event) {
	if ev.kind == evFault {
		q.pushFixed(ev)
		return
	}
	if ev.at < q.last {
		panic("vcluster: an event pushed before the last one popped")
	}
	ev.next = 0
	s := q.free
	if s != 0 {
		q.free = q.evs[s].next
		q.evs[s] = ev
	} else {
		if len(q.evs) == 0 {
			q.evs = make([]event, 1, 64) // slot 0: none
		}
		s = int32(len(q.evs))
		q.evs = append(q.evs, ev)
	}
	q.append(bits.Len64(uint64(ev.at^q.last)), s, ev.at)
	q.n++
}

// append puts slot s, linked to none, of instant at, last in bucket i.
func (q *queue) append(i int, s int32, at time.Duration) {
	if t := q.tail[i]; t != 0 {
		q.evs[t].next = s
		q.least[i] = min(q.least[i], at)
	} else {
		q.first[i] = s
		q.least[i] = at
		q.full |= 1 << i
	}
	q.tail[i] = s
}

// pushFixed puts a fault pushed during the run in fixed, after every
// fixed event it does not come before. The events before next do not
// move: the one pop returned last stays valid.
func (q *queue) pushFixed(ev event) {
	i := q.next
	for i < len(q.fixed) && !fixedLess(&ev, &q.fixed[i]) {
		i++
	}
	q.fixed = slices.Insert(q.fixed, i, ev)
	q.fixedAt = q.fixedNext()
}

// pop takes the first event and returns it in place, valid until the
// next pop: in fixed, or in its slot of evs, which is freed only at the
// next pop (the pushes of its dispatch take other slots; one that grows
// evs leaves the event where it is, in the array it was in).
func (q *queue) pop() *event {
	if h := q.held; h != 0 {
		q.evs[h].next, q.free, q.held = q.free, h, 0 // its payload kept until a push overwrites it
	}
	if q.full&1 == 0 {
		if q.full == 0 {
			return q.popFixed()
		}
		b := bits.TrailingZeros64(q.full)
		s, m := q.first[b], q.least[b]
		if q.fixedAt <= m {
			return q.popFixed()
		}
		q.last = m
		q.first[b], q.tail[b] = 0, 0
		q.full &^= 1 << b
		for s != 0 {
			l := &q.evs[s]
			x := l.next
			l.next = 0
			q.append(bits.Len64(uint64(l.at^m)), s, l.at)
			s = x
		}
	} else if q.fixedAt <= q.last {
		return q.popFixed()
	}
	s := q.first[0]
	ev := &q.evs[s]
	if q.first[0] = ev.next; ev.next == 0 {
		q.tail[0] = 0
		q.full &^= 1
	}
	q.n--
	q.held = s
	return ev
}
