package explore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Result is what one exploration found.
type Result struct {
	Config   string
	Mutation string
	// States is the number of distinct states reached (the visited set),
	// Edges the events executed from them, Depth the longest shortest path
	// from the initial state to a state (events).
	States, Edges, Depth int
	// Bounded says that states at MaxDepth had events left unexplored:
	// the exploration is complete up to that depth only.
	Bounded  bool
	MaxDepth int
	// Start is the number of events of the settled start (Config.Settle)
	// the depths count from: every path begins with them.
	Start   int
	Elapsed time.Duration
	// Violation is the first invariant broken, on a shortest path (Path).
	Violation error
	Path      []Event
}

// StatesPerSecond is States over Elapsed.
func (r Result) StatesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.States) / r.Elapsed.Seconds()
}

// String is the result on one line.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", r.Config)
	if r.Mutation != "" {
		fmt.Fprintf(&b, " --mutate %s", r.Mutation)
	}
	fmt.Fprintf(&b, ": %d states, %d edges, depth %d", r.States, r.Edges, r.Depth)
	if r.Start > 0 {
		fmt.Fprintf(&b, " after a settled start of %d events", r.Start)
	}
	if r.Bounded {
		fmt.Fprintf(&b, " (bounded: depth limit %d reached, not complete)", r.MaxDepth)
	} else if r.Violation == nil {
		b.WriteString(" (complete)")
	}
	fmt.Fprintf(&b, ", %.2fs, %.0f states/s", r.Elapsed.Seconds(), r.StatesPerSecond())
	if r.Violation != nil {
		fmt.Fprintf(&b, ", VIOLATION after %d events: %v", len(r.Path), r.Violation)
	} else {
		b.WriteString(", 0 violations")
	}
	return b.String()
}

// entry is a visited state: how it was first reached.
type entry struct {
	parent int32
	ev     Event
}

// Explore visits every state of c reachable from its initial state,
// breadth first, and stops at the first violation, whose path is then a
// shortest one.
func Explore(ctx context.Context, c Config) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	start := time.Now()
	res := Result{Config: c.Name, Mutation: c.Mutate.Name, MaxDepth: c.MaxDepth}
	w0 := newWorld(&c, nil)
	var prefix []Event
	if c.Settle {
		var err error
		if prefix, err = w0.settleStart(); err != nil {
			res.Violation, res.Path, res.States, res.Elapsed = err, prefix, 1, time.Since(start)
			return res, nil
		}
	}
	for _, ev := range c.Start {
		if !slices.Contains(w0.enabled(), ev) {
			return res, fmt.Errorf("explore: %s's start: %s is not enabled after %d events", c.Name, ev.line(), len(prefix))
		}
		prefix = append(prefix, ev)
		if err := w0.do(ev, nil); err != nil {
			res.Violation, res.Path, res.States, res.Elapsed = err, prefix, 1, time.Since(start)
			return res, nil
		}
	}
	res.Start = len(prefix)
	entries := []entry{{parent: -1}}
	x := &hasher{}
	seen := map[key]int32{w0.key(x): 0}
	type item struct {
		w  *world
		id int32
	}
	level := []item{{w0, 0}}
	var live *liveGraph
	if c.Live > 0 {
		live = &liveGraph{}
		live.state(w0)
	}
	for depth := 0; len(level) > 0; depth++ {
		res.Depth = depth
		if c.MaxDepth > 0 && depth == c.MaxDepth {
			for _, it := range level {
				if len(it.w.enabled()) > 0 {
					res.Bounded = true
					break
				}
			}
			break
		}
		var next []item
		for _, it := range level {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			evs := it.w.enabled()
			if len(evs) == 0 && c.Work != nil && c.Work.Live && it.w.now < c.End {
				// The period liveness check judges the states at the
				// horizon: it needs every path to reach it.
				return res, fmt.Errorf("explore: %s: a state at %v has no event, so its path never reaches the horizon %v the period liveness check judges", c.Name, it.w.now, c.End)
			}
			for _, ev := range evs {
				nw := it.w.clone()
				err := nw.do(ev, nil)
				res.Edges++
				if err != nil {
					res.Violation = err
					res.Path = append(append(slices.Clone(prefix), path(entries, it.id)...), ev)
					res.States = len(entries)
					res.Elapsed = time.Since(start)
					return res, nil
				}
				k := nw.key(x)
				if id, ok := seen[k]; ok {
					if live != nil && nw.faults() == it.w.faults() {
						live.edge(it.id, id)
					}
					continue
				}
				id := int32(len(entries))
				seen[k] = id
				if live != nil {
					live.state(nw)
					if nw.faults() == it.w.faults() {
						live.edge(it.id, id)
					}
				}
				entries = append(entries, entry{parent: it.id, ev: ev})
				if c.visit != nil {
					c.visit(k, func() []Event { return append(slices.Clone(prefix), path(entries, id)...) })
				}
				if c.reach != nil {
					c.reach(it.id, id, ev, it.w, nw)
				}
				next = append(next, item{nw, id})
			}
		}
		level = next
	}
	res.States = len(entries)
	if live != nil && !res.Bounded {
		if id := live.stuck(c.End - c.Live); id >= 0 {
			p := append(slices.Clone(prefix), path(entries, id)...)
			w := newWorld(&c, nil)
			for _, ev := range p {
				if err := w.do(ev, nil); err != nil {
					return res, fmt.Errorf("explore: the replay of the path to state %d broke an invariant: %v", id, err)
				}
			}
			err := w.liveFrom(nil)
			if err == nil {
				return res, fmt.Errorf("explore: state %d cannot reach a leader in the explored graph, yet its replay can", id)
			}
			res.Violation, res.Path = err, append(p, Event{Kind: evLive})
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func path(entries []entry, id int32) []Event {
	var p []Event
	for ; id > 0; id = entries[id].parent {
		p = append(p, entries[id].ev)
	}
	for i, j := 0, len(p)-1; i < j; i, j = i+1, j-1 {
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// settle takes, from w, the first enabled event that is a timer, a
// store call applied or an answer delivered, until none is left at this
// instant (Config.Settle), and returns them: the exploration starts from
// the state they reach, a deterministic one of time 0.
func (w *world) settle() ([]Event, error) { return w.settleExcept(nil) }

// settleExcept is settle, leaving the events skip picks (nil: none).
func (w *world) settleExcept(skip func(Event) bool) ([]Event, error) {
	var p []Event
	for {
		var next *Event
		for _, ev := range w.enabled() {
			switch ev.Kind {
			case evTick, evWorkTick, evApply, evDeliver, evCandTick, evNote:
				if skip == nil || !skip(ev) {
					next = &ev
				}
			}
			if next != nil {
				break
			}
		}
		if next == nil {
			return p, nil
		}
		p = append(p, *next)
		if err := w.do(*next, nil); err != nil {
			return p, err
		}
	}
}
