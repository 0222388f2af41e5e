package vcluster

import (
	"slices"
	"time"
)

type evKind int32

// event is one queued event, kept small: the queue moves them around.
type event struct {
	at   time.Duration
	seq  int64
	kind evKind
	node int32
	inc  int32
	gen  int32
	ev   any           // election.Event or a *batch (evReply), a call (evCall: see send), scheduler.Event (evWorkReply)
	arg  time.Duration // trigger instant (evTrigger, evNodeTrigger), fault index (evFault)
}

// queue is a binary min-heap of events by time; at one instant faults
// come first, then the order of pushing. (Typed, not container/heap: an
// interface conversion per event costs more than the rest of a push.) The
// heap itself holds only the ordering keys and a slot index, no pointers:
// sifting moves 24 bytes with no write barriers, and the events, which
// carry an interface, stay in their slots until popped.
//
// The events known before the run (faults, triggers) are not in the heap
// but in fixed, sorted by the same order, from next on: pop takes
// whichever comes first, so the heap holds only the events the run makes.
type queue struct {
	h    []qent
	evs  []event
	free []int32

	fixed []event
	next  int

	held int32 // 1 + the slot of the event pop returned last, freed at the next pop (0: none)
}

// preload sets the events known before the run (their seq set).
func (q *queue) preload(evs []event) {
	slices.SortFunc(evs, func(a, b event) int {
		x, y := qent{at: a.at, key: key(&a)}, qent{at: b.at, key: key(&b)}
		switch {
		case x.less(y):
			return -1
		case y.less(x):
			return 1
		}
		return 0
	})
	q.fixed, q.next = evs, 0
}

// qent is an event's place in the heap: its instant, its order key (faults
// first, then push order: see key) and its slot in evs.
type qent struct {
	at   time.Duration
	key  uint64
	slot int32
}

// key orders the events of one instant as less did before: a fault
// before any other event, then by seq.
func key(ev *event) uint64 {
	k := uint64(ev.seq)
	if ev.kind != evFault {
		k |= 1 << 62
	}
	return k
}

func (a qent) less(b qent) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.key < b.key
}

func (q *queue) len() int { return len(q.h) + len(q.fixed) - q.next }

func (q *queue) push(ev event) {
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
		q.evs[slot] = ev
	} else {
		slot = int32(len(q.evs))
		q.evs = append(q.evs, ev)
	}
	x := qent{at: ev.at, key: key(&ev), slot: slot}
	q.h = append(q.h, x)
	h := q.h
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !x.less(h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

// pop takes the first event and returns it in place, valid until the
// next pop: in fixed, or in its slot of evs, which is freed only at the
// next pop (the pushes of its dispatch take other slots; one that grows
// evs leaves the event where it is, in the array it was in).
func (q *queue) pop() *event {
	if q.held != 0 {
		q.free = append(q.free, q.held-1) // its payload kept until a push overwrites it
		q.held = 0
	}
	if q.next < len(q.fixed) {
		f := &q.fixed[q.next]
		if len(q.h) == 0 || (qent{at: f.at, key: key(f)}).less(q.h[0]) {
			q.next++
			return f
		}
	}
	h := q.h
	top := h[0]
	last := len(h) - 1
	x := h[last]
	h = h[:last]
	if last > 0 {
		i := 0
		for {
			l := 2*i + 1
			if l >= last {
				break
			}
			m := l
			if r := l + 1; r < last && h[r].less(h[l]) {
				m = r
			}
			if !h[m].less(x) {
				break
			}
			h[i] = h[m]
			i = m
		}
		h[i] = x
	}
	q.h = h
	q.held = top.slot + 1
	return &q.evs[top.slot]
}
