package explore

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file is the liveness check (Config.Live): once faults stop, some
// node can lead again. The explored graph is finite and acyclic (true
// time only grows, and every fault spends budget), so "leads again" is
// an existence check: from every state reached at or before End - Live,
// some path of events that are not faults (no crash, pause, failed or
// lost answer; restarts, resumes, store answers and time moving on are
// not faults) must reach a state in which a running node holds a term
// valid on its own clock (leads). The exploration keeps, for that, each
// state's true time and whether it leads, and every edge that is not a
// fault; once the exploration completes it marks, backwards from the
// states that lead, every state that can reach one, and reports the
// first state reached that cannot (one of the shallowest) with the path
// to it. A replay checks the same thing from that state alone
// (world.liveFrom: the states reachable from it without a fault, breadth
// first), which is what a counterexample's last step, "live", runs.

// leads reports whether a running node holds a valid term.
func (w *world) leads() bool {
	for i := range w.nodes {
		if w.live(i) && w.valid(i) {
			return true
		}
	}
	return false
}

// liveGraph is what an exploration keeps for the liveness check, by
// state id (the order states are first reached in).
type liveGraph struct {
	now      []time.Duration
	leads    []bool
	from, to []int32 // the edges that are not faults
}

func (g *liveGraph) state(w *world) {
	g.now = append(g.now, w.now)
	g.leads = append(g.leads, w.leads())
}

func (g *liveGraph) edge(from, to int32) {
	g.from = append(g.from, from)
	g.to = append(g.to, to)
}

// stuck returns the first state reached at or before limit from which
// no path of edges kept reaches a state that leads, or -1.
func (g *liveGraph) stuck(limit time.Duration) int32 {
	n := len(g.now)
	// The edges reversed, grouped by their head.
	start := make([]int32, n+1)
	for _, t := range g.to {
		start[t+1]++
	}
	for i := 0; i < n; i++ {
		start[i+1] += start[i]
	}
	rev := make([]int32, len(g.to))
	fill := slices.Clone(start[:n])
	for k, t := range g.to {
		rev[fill[t]] = g.from[k]
		fill[t]++
	}
	reach := make([]bool, n)
	var stack []int32
	for i, l := range g.leads {
		if l {
			reach[i] = true
			stack = append(stack, int32(i))
		}
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range rev[start[s]:start[s+1]] {
			if !reach[p] {
				reach[p] = true
				stack = append(stack, p)
			}
		}
	}
	for i := 0; i < n; i++ {
		if !reach[i] && g.now[i] <= limit {
			return int32(i)
		}
	}
	return -1
}

// liveFrom explores, breadth first, the states reachable from w without
// a fault, and returns nil as soon as one leads (saying so to out), or
// the liveness violation: none does, however the store's answers, the
// restarts, the resumes and time come. w is left as it is.
func (w *world) liveFrom(out *strings.Builder) error {
	if w.c.Live <= 0 {
		return fmt.Errorf("explore: live: configuration %s checks no liveness (Config.Live)", w.c.Name)
	}
	x := &hasher{}
	seen := map[key]bool{w.clone().key(x): true}
	level := []*world{w}
	for len(level) > 0 {
		var next []*world
		for _, s := range level {
			if s.leads() {
				w.say(out, "a node can lead again: one leads at %v in %d states reachable without a fault", s.now, len(seen))
				return nil
			}
			for _, ev := range s.enabled() {
				nw := s.clone()
				if err := nw.do(ev, nil); err != nil {
					return fmt.Errorf("explore: live: %s from a state at %v broke an invariant: %v", ev.line(), s.now, err)
				}
				if nw.faults() > s.faults() {
					continue
				}
				k := nw.key(x)
				if seen[k] {
					continue
				}
				seen[k] = true
				next = append(next, nw)
			}
		}
		level = next
	}
	return fmt.Errorf("liveness: no node can lead again: from this state at %v, none of the %d states reachable without a fault up to the horizon %v has a running node with a valid term", w.now, len(seen), w.c.End)
}
