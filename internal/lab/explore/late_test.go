package explore

import (
	"context"
	"strings"
	"testing"
)

// TestLateRecordsLandWithinTheGrace: in sched-2x1-supervisor-late, to
// depth 10 after its planted start, every state (one in five, replayed
// from the start) with a supervisor's record in flight is before the
// record's bound, and no advance it allows goes to or past it; the
// record is bounded once the newer term began, and it lands, in some
// paths, after that term began (late, as the configuration is for).
func TestLateRecordsLandWithinTheGrace(t *testing.T) {
	c, _ := Lookup("sched-2x1-supervisor-late")
	c.MaxDepth = 10
	bounded, lateLandings, count := 0, 0, 0
	c.visit = func(k key, p func() []Event) {
		if count++; count%5 != 0 {
			return
		}
		cc := c
		w := newWorld(&cc, nil)
		var out strings.Builder
		for _, ev := range p() {
			out.Reset()
			if err := w.do(ev, &out); err != nil {
				t.Fatalf("replay: %v", err)
			}
			if ev.Kind == evRecord && w.elected > 1 {
				lateLandings++
			}
		}
		for _, r := range w.records {
			if r.by < 0 {
				continue
			}
			bounded++
			if w.now >= r.by {
				t.Fatalf("a record in flight at %v, its bound %v", w.now, r.by)
			}
			for _, ev := range w.enabled() {
				if ev.Kind == evAdvance && ev.To >= r.by {
					t.Fatalf("at %v, an advance to %v with a record in flight bound by %v", w.now, ev.To, r.by)
				}
			}
		}
	}
	r, err := Explore(context.Background(), c)
	if err != nil || r.Violation != nil {
		t.Fatalf("%v %v", r, err)
	}
	if bounded == 0 || lateLandings == 0 {
		t.Fatalf("%d states with a bounded record in flight, %d landings after the newer term won: want some of each", bounded, lateLandings)
	}
	t.Logf("%v: %d states with a bounded record in flight, %d late landings", r, bounded, lateLandings)
}

// TestStartMustBeEnabled: a planted start whose event is not enabled is
// refused, not explored from a state the machines do not reach.
func TestStartMustBeEnabled(t *testing.T) {
	c, _ := Lookup("sched-2x1-supervisor-late")
	c.Start = append(c.Start[:1:1], Event{Kind: evDeliver, Node: 0})
	if _, err := Explore(context.Background(), c); err == nil || !strings.Contains(err.Error(), "deliver n=0 i=0 is not enabled") {
		t.Fatalf("err = %v", err)
	}
}
