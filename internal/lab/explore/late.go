package explore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// This file is the supervisor's late record (Work.LateRecords): baton
// run's supervisor records a run's success when it sees the run end
// (scheduler.CompleteSeen), but its write may land later: its process
// frozen, or blocked behind the store's write lock that a frozen process
// holds (the simulator's ArmFreezeLocked). Package scheduler's doc says
// what the shipping machine relies on: a record of a run seen ending
// inside its term is fenced by the row alone, so it counts when it lands
// after a newer term began, as long as that term has not taken the row
// over, which it does only Config.TakeoverGrace after it began; a record
// that lands after the grace is not covered (the period runs again).
//
// So a record here is in flight from the run's end, and the store applies
// it at any later event (evRecord), but before the first instant at which
// the wall clock of a node whose newer term began meanwhile reaches that
// term's start plus Work.TakeoverGrace: time does not advance past it
// while the record is in flight. (A run seen ending inside its term has
// no newer term yet, so every record the bound matters for gets it; one
// of a run not seen so, fenced by the token, gets it too if a newer term
// begins after it is sent, and none if one began before.) Within that bound every landing instant
// the explorer distinguishes is explored. The check is the simulator's
// (vcluster.EndedRowTakeover): no claim or skip commits over the row still
// running under an attempt whose run ended inside its term.

// record is a supervisor's record in flight.
type record struct {
	node, inc int
	starts    int // the node's term starts at the run's end: its machine is told only in that term
	a         scheduler.StartEffect
	inTerm    bool          // its supervisor saw the run end inside its term
	seen      time.Time     // the node's wall clock then
	by        time.Duration // true time: it lands before; -1: no newer term yet
}

// sendRecord puts node i's supervisor's record of its run e in flight
// and, when the run ended inside its term and no newer term exists in the
// store, notes the attempt for the takeover check (vcluster's
// inTermEnds).
func (w *world) sendRecord(i int, e effect, out *strings.Builder) {
	n := &w.nodes[i]
	inTerm := n.m.Token() == e.a.Run.Token && w.valid(i)
	if inTerm && w.rec.Token == e.a.Run.Token {
		w.ended = append(slices.DeleteFunc(slices.Clone(w.ended), func(r store.Run) bool { return r.Period == e.a.Run.Period }), e.a.Run)
	}
	w.records = append(w.records, record{node: i, inc: n.inc, starts: n.starts, a: e.a, inTerm: inTerm, seen: w.wall(i), by: -1})
	slices.SortStableFunc(w.records, func(x, y record) int { return x.node - y.node }) // by node: one state whatever the order
	w.say(out, "node-%d: its supervisor's record of %s is on its way (seen inside its term: %v)", i, e.a.Period.Key, inTerm)
}

// boundRecords bounds the records in flight of runs older than the term
// node i began with token: each lands before the grace has passed on the
// node's wall clock.
func (w *world) boundRecords(i int, token uint64) {
	if len(w.records) == 0 {
		return
	}
	g := w.c.Work.TakeoverGrace
	by := w.trueAt(i, w.local(i, w.now).Add(g)) // the wall clock less its step, as a work timer's instant
	for k := range w.records {
		if r := &w.records[k]; r.a.Run.Token < token && (r.by < 0 || by < r.by) {
			r.by = by
		}
	}
}

// recordIdx returns the index in w.records of node i's idx-th record in
// flight, or -1.
func (w *world) recordIdx(i, idx int) int {
	k := 0
	for j, r := range w.records {
		if r.node == i {
			if k == idx {
				return j
			}
			k++
		}
	}
	return -1
}

// landRecord applies node i's idx-th record in flight (evRecord) and then
// tells its machine that its run ended, if the term that started it is
// still the node's.
func (w *world) landRecord(i, idx int, out *strings.Builder) error {
	j := w.recordIdx(i, idx)
	if j < 0 {
		return fmt.Errorf("explore: record n=%d i=%d: no such record in flight", i, idx)
	}
	r := w.records[j]
	w.records = slices.Delete(w.records, j, j+1)
	verr := w.writeRecord(i, r.a, r.inTerm, r.seen, out)
	n := &w.nodes[i]
	if n.up && n.inc == r.inc && n.starts == r.starts && n.s != nil {
		w.tell(attemptOf(r.a.Run)) // its machine is told that it ran to its end
		if err := w.stepWork(i, scheduler.EffectDone{}, out); verr == nil {
			verr = err
		}
	}
	return verr
}

// recordEvents lists the records in flight as events.
func (w *world) recordEvents() []Event {
	var evs []Event
	count := make([]int, len(w.nodes))
	for _, r := range w.records {
		evs = append(evs, Event{Kind: evRecord, Node: int8(r.node), Idx: int8(count[r.node])})
		count[r.node]++
	}
	return evs
}

// recordsBefore reports whether time may advance to t with the records in
// flight: each must land before its bound.
func (w *world) recordsBefore(t time.Duration) bool {
	for _, r := range w.records {
		if r.by >= 0 && t >= r.by {
			return false
		}
	}
	return true
}

// recordInstants considers the last instant before each record in flight
// must have landed.
func (w *world) recordInstants(consider func(time.Duration)) {
	for _, r := range w.records {
		if r.by >= 0 {
			consider(r.by - 1)
		}
	}
}

// takeover is the simulator's check of a claim or skip by node that
// committed over cur (had: the period had a row): it must not take over
// the row of an attempt whose run ended inside its term.
func (w *world) takeover(node string, a scheduler.SwapRun, cur store.Run, had bool) string {
	if !w.c.Work.LateRecords {
		return ""
	}
	k := slices.IndexFunc(w.ended, func(r store.Run) bool { return r.Period == a.Swap.Run.Period })
	if k < 0 {
		return ""
	}
	return vcluster.EndedRowTakeover(node, a, cur, had, w.ended[k], true)
}
