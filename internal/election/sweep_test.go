package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// sweepWorld drives Groups on one in-memory store at one virtual clock:
// every call is answered at the instant it is made and, with feed, every
// write is notified to every Group (Changed), as a change feed does.
type sweepWorld struct {
	t      *testing.T
	now    time.Time
	st     *memstore.Store
	feed   bool
	groups []*election.Group
	down   []bool
	gets   []map[string]int // per group: reads per record
	swaps  []int            // per group: the most swaps one step asked for
}

func newSweepWorld(t *testing.T, feed bool) *sweepWorld {
	w := &sweepWorld{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), feed: feed}
	w.st = memstore.New(memstore.WithTime(func() time.Time { return w.now }))
	return w
}

func (w *sweepWorld) add(node string) int {
	cfg := election.Config{Node: node, Incarnation: node + ".1", Lease: 3 * time.Second, Renew: time.Second,
		Margin: 100 * time.Millisecond, Poll: 250 * time.Millisecond, Retry: 250 * time.Millisecond,
		Check: election.CheckLeases * 3 * time.Second}
	if err := cfg.Validate(); err != nil {
		w.t.Fatal(err)
	}
	w.groups = append(w.groups, election.NewGroup(cfg, true))
	w.down = append(w.down, false)
	w.gets = append(w.gets, map[string]int{})
	w.swaps = append(w.swaps, 0)
	i := len(w.groups) - 1
	if w.feed {
		w.step(i, election.Feed{Live: true})
	}
	return i
}

type sweepEvent struct {
	g  int
	ev election.Event
}

// step feeds group i one event and runs everything it leads to.
func (w *sweepWorld) step(i int, ev election.Event) {
	ctx := context.Background()
	queue := []sweepEvent{{i, ev}}
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		if w.down[e.g] {
			continue
		}
		acts := w.groups[e.g].Step(w.now, e.ev)
		swaps := 0
		for _, a := range acts {
			if _, ok := a.(election.Swap); ok {
				swaps++
			}
		}
		w.swaps[e.g] = max(w.swaps[e.g], swaps)
		for _, a := range acts {
			switch a := a.(type) {
			case election.Get:
				w.gets[e.g][a.Name]++
				rec, err := w.st.Get(ctx, a.Name)
				queue = append(queue, sweepEvent{e.g, election.GetReply{Name: a.Name, Record: rec, Err: err}})
			case election.Swap:
				rec, err := w.st.Swap(ctx, a.Swap)
				queue = append(queue, sweepEvent{e.g, election.SwapReply{Name: a.Swap.Record.Name, Record: rec, Err: err}})
				if err == nil && w.feed {
					for j := range w.groups {
						queue = append(queue, sweepEvent{j, election.Changed{Name: rec.Name, Version: rec.Version}})
					}
				}
			}
		}
	}
}

// run ticks the groups until end.
func (w *sweepWorld) run(end time.Time) {
	for {
		next, who := time.Time{}, -1
		for i, g := range w.groups {
			if at := g.Next(); !w.down[i] && !at.IsZero() && (next.IsZero() || at.Before(next)) {
				next, who = at, i
			}
		}
		if who < 0 || next.After(end) {
			w.now = end
			return
		}
		if next.After(w.now) {
			w.now = next
		}
		w.step(who, election.Tick{})
	}
}

func (w *sweepWorld) leads(i int, name string) bool {
	m := w.groups[i].Machine(name)
	return m != nil && m.Leading()
}

// The check sweep re-reads the held names at most CheckRate a second,
// however many there are: 6,000 names re-read once a lease (3 s) would be
// 2,000 reads a second.
func TestCheckSweepIsBounded(t *testing.T) {
	w := newSweepWorld(t, false)
	a := w.add("a")
	const n = 6000
	for i := range n {
		w.step(a, election.Start{Name: "name-" + itoa(i), Hold: true})
	}
	w.run(w.now.Add(2 * time.Second))
	for i := range n {
		if !w.leads(a, "name-"+itoa(i)) {
			t.Fatalf("name-%d not held", i)
		}
	}
	clear(w.gets[a])
	const span = 20 * time.Second
	w.run(w.now.Add(span))
	reads := 0
	for name, k := range w.gets[a] {
		if !store.IsSession(name) {
			reads += k
		}
	}
	if max := int(election.CheckRate*span/time.Second) + election.CheckRate; reads > max || reads < int(election.CheckRate*span/time.Second)/2 {
		t.Fatalf("%d re-reads of %d held names in %v, want about %d a second (at most %d)", reads, n, span, election.CheckRate, max)
	}
}

// With a live feed, a contender awaiting another process's session reads
// that session only when a change is notified and when its wait runs out,
// not every poll; a name freed while the session lives is taken at once
// (notified); and when the holder crashes, the name is taken lease + 2e
// after its last renewal, as when polling.
func TestAwaitWithFeed(t *testing.T) {
	w := newSweepWorld(t, true)
	a, b := w.add("a"), w.add("b")
	w.step(a, election.Start{Name: "x"}) // not held: a resigns it below
	w.step(a, election.Start{Name: "y", Hold: true})
	w.run(w.now.Add(time.Second))
	w.step(b, election.Start{Name: "x", Hold: true})
	w.step(b, election.Start{Name: "y", Hold: true})
	w.run(w.now.Add(time.Second))
	if !w.leads(a, "x") || !w.leads(a, "y") || w.leads(b, "x") {
		t.Fatal("a does not hold x and y")
	}
	sess, _ := w.groups[a].Session()
	clear(w.gets[b])
	const span = 30 * time.Second
	w.run(w.now.Add(span))
	// One read a renewal (30), not one a poll (120); the names
	// themselves a few times (the sweep, once per Check = 12 s each).
	if got := w.gets[b][sess]; got > 35 {
		t.Fatalf("b read a's session %d times in %v, want about one a renewal (30)", got, span)
	}
	if got := w.gets[b]["x"] + w.gets[b]["y"]; got > 8 {
		t.Fatalf("b read the awaited names %d times in %v, want a few (sweep)", got, span)
	}
	// a resigns x while its session lives: b takes it at once.
	w.step(a, election.Resign{Name: "x"})
	if !w.leads(b, "x") {
		rec, _ := w.st.Get(context.Background(), "x")
		t.Fatalf("b did not take x at once after a resigned it: a %s, b %s, record %+v", w.groups[a].Machine("x").Phase(), w.groups[b].Machine("x").Phase(), rec)
	}
	// a crashes: b takes y lease + 2e after a's last renewal, not
	// before, and not a poll later.
	w.run(w.now.Add(500 * time.Millisecond))
	w.down[a] = true
	rec, err := w.st.Get(context.Background(), sess)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500 && !w.leads(b, "y"); i++ {
		w.run(w.now.Add(10 * time.Millisecond))
	}
	floor := 3*time.Second + 2*100*time.Millisecond
	if took := w.now.Sub(rec.Updated); !w.leads(b, "y") || took < floor || took > floor+10*time.Millisecond {
		t.Fatalf("y taken %v after a's last renewal (held: %v), want lease + 2e (%v)", took, w.leads(b, "y"), floor)
	}
}

// Without a feed, a name freed while its holder's session lives is seen
// by the sweep: within a lease (Check applies only with a live feed).
func TestAwaitWithoutFeed(t *testing.T) {
	w := newSweepWorld(t, false)
	a, b := w.add("a"), w.add("b")
	w.step(a, election.Start{Name: "x"})
	w.step(a, election.Start{Name: "y", Hold: true}) // keeps a's session
	w.run(w.now.Add(time.Second))
	w.step(b, election.Start{Name: "x", Hold: true})
	w.run(w.now.Add(5 * time.Second))
	w.step(a, election.Resign{Name: "x"})
	start := w.now
	for i := 0; i < 100 && !w.leads(b, "x"); i++ {
		w.run(w.now.Add(50 * time.Millisecond))
	}
	if took := w.now.Sub(start); !w.leads(b, "x") || took > 3*time.Second+time.Second {
		t.Fatalf("b took x %v after a resigned it (leads: %v), want within a lease and a sweep interval", took, w.leads(b, "x"))
	}
}

// A crash takeover of many names is asked for DefaultTakeStep swaps a step, the
// steps all at the instant the session was found dead: the runtime can
// send the first batch before the last is planned, and no name waits
// longer for it.
func TestTakeoverInSteps(t *testing.T) {
	w := newSweepWorld(t, true)
	a, b := w.add("a"), w.add("b")
	const n = 2*election.DefaultTakeStep + election.DefaultTakeStep/2
	for i := range n {
		w.step(a, election.Start{Name: "name-" + itoa(i), Hold: true})
	}
	w.run(w.now.Add(2 * time.Second))
	for i := range n {
		w.step(b, election.Start{Name: "name-" + itoa(i), Hold: true})
	}
	w.run(w.now.Add(time.Second))
	w.swaps[b] = 0
	w.down[a] = true
	for i := 0; i < 10000 && !w.leads(b, "name-0"); i++ {
		w.run(w.now.Add(time.Millisecond))
	}
	first := w.now
	for i := range n {
		if !w.leads(b, "name-"+itoa(i)) {
			t.Fatalf("at %v, b took name-0 but not name-%d", first, i)
		}
	}
	if w.swaps[b] > election.DefaultTakeStep || w.swaps[b] < election.DefaultTakeStep/2 {
		t.Fatalf("b asked for up to %d swaps in one step to take %d names, want at most DefaultTakeStep (%d)", w.swaps[b], n, election.DefaultTakeStep)
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{digits[i%10]}, b...)
	}
	return string(b)
}
