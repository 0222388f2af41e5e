package explore

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// This file is a node's runtime for preferred leaders (Config.Prefer,
// docs/prefer.md), the explorer's counterpart of package baton's
// (prefer.go) and of the simulator's (internal/lab/vcluster/prefer.go):
// the rule is election.Machine's (preferDue, deferTake), given the
// policy, the hysteresis and the node's own attributes in its Config;
// the runtime reads the name's candidacies every renew interval on the
// node's clock and steps them into the machine (election.Candidates),
// and a leader's runtime tells its machine whether its scheduler machine
// is at a safe point (election.SafePoint, scheduler.Machine.AtSafePoint)
// whenever that changes, and with every read, at the same instant. The
// checks are the simulator's (vcluster.Handover, vcluster.Takeover).
//
// A candidacy read is a store call like the others (applied, failed,
// answered or lost, in every order); a node has at most one out, and the
// next is due a renew interval after its answer (or its failure), as the
// library's loop reads them; a term's first read is due at once when
// none is out. A node renews its candidacy while its process runs (up
// and not paused): a read finds its row's age 0 then, and otherwise the
// time since it crashed or paused. The store's candidate rows are that,
// not a value of their own.

// Preference gives every node's election machine the name's preference
// policy (election.Config.Prefer and Hysteresis) and node i the
// candidacy Attrs[i] (election.Config.Self).
type Preference struct {
	Policy     election.Policy
	Hysteresis time.Duration
	Attrs      []election.Attrs
}

// prefNode is a node's preference runtime (hashed with the node).
type prefNode struct {
	next    time.Time // its next candidacy read, on its clock (zero: none due)
	reading bool      // a read of its is out
	// gone is when (true time) its process stopped renewing its
	// candidacy: it crashed or paused (-1: it renews).
	gone time.Duration
	// What its machine was last told of its safe point; when its term
	// began, on its clock and in true time (the handover check).
	safeTold bool
	token    uint64
	since    time.Time
	termAt   time.Duration
	// The last candidacies its machine was told, when on its clock, and
	// whether any was; fedSinceSwap: told since its last swap was sent
	// (the deferral check judges no takeover by a list newer than its
	// swap, as the simulator's).
	list         []election.Candidate
	fedAt        time.Time
	fed          bool
	fedSinceSwap bool
}

// preferConfig gives node i's machine configuration the preference.
func (c *Config) preferConfig(i int, cfg *election.Config) {
	p := c.Prefer
	cfg.Prefer, cfg.Hysteresis = p.Policy, p.Hysteresis
	if i < len(p.Attrs) {
		cfg.Self = p.Attrs[i]
	}
	cfg.Mutate.NoSafePoint = c.Mutate.Election.NoSafePoint
	cfg.Mutate.NoHysteresis = c.Mutate.Election.NoHysteresis
	cfg.Mutate.NoDefer = c.Mutate.Election.NoDefer
}

// validatePrefer checks the preference against every node's machine
// bounds.
func (c *Config) validatePrefer() error {
	if c.Group != nil || c.Planted() {
		return fmt.Errorf("explore: a preference configuration has no Group and no planted record: want Group nil, Plant zero")
	}
	if c.Prefer.Policy.Kind == election.PreferNone || len(c.Prefer.Attrs) != c.Nodes {
		return fmt.Errorf("explore: a preference of %s with %d candidacies for %d nodes: want a policy and one candidacy a node", c.Prefer.Policy, len(c.Prefer.Attrs), c.Nodes)
	}
	for i := 0; i < c.Nodes; i++ {
		if err := c.electionConfig(i, 1).Validate(); err != nil {
			return err
		}
	}
	return nil
}

// preferNeeds says, for each preference mutation, what a configuration
// with a preference must have for it to break something: a handover
// needs a safe point to be reported, which only a scheduler's runtime
// does here (an election-only runtime never calls Term.SafePoint).
var preferNeeds = map[string]func(*Config) bool{
	"prefer-no-safe-point": func(c *Config) bool { return c.Work != nil },
	"prefer-no-hysteresis": func(c *Config) bool { return c.Work != nil },
	"prefer-no-defer":      func(*Config) bool { return true },
}

// preferStart begins node i's candidacy reads for its incarnation: the
// first is due at once.
func (w *world) preferStart(i int) {
	w.nodes[i].pn = prefNode{next: w.local(i, w.now), gone: -1}
}

// preferKey hashes the preference runtime of w into x.
func (w *world) preferKey(x *hasher) {
	for _, n := range w.nodes {
		x.value(reflect.ValueOf(n.pn))
	}
	x.u64(uint64(w.lastPref))
	x.u64(uint64(w.recAt))
}

// candDue reports whether node i's candidacy read is due.
func (w *world) candDue(i int) bool {
	nx := w.nodes[i].pn.next
	return !nx.IsZero() && w.trueAt(i, nx) <= w.now
}

// preferInstants adds node i's next candidacy read (just before and at
// it) to the instants time may move to.
func (w *world) preferInstants(i int, consider func(time.Duration)) {
	if nx := w.nodes[i].pn.next; !nx.IsZero() {
		t := w.trueAt(i, nx)
		consider(t - 1)
		consider(t)
	}
}

// candTick sends node i's candidacy read.
func (w *world) candTick(i int, out *strings.Builder) {
	n := &w.nodes[i]
	n.pn.next, n.pn.reading = time.Time{}, true
	w.send(request{node: i, inc: n.inc, cand: true})
	w.say(out, "node-%d: read the candidacies", i)
}

// candidacies is the name's candidacies as a read at the store finds
// them now: every node's, its age 0 while its process runs.
func (w *world) candidacies() []election.Candidate {
	list := make([]election.Candidate, 0, len(w.nodes))
	for j := range w.nodes {
		var age time.Duration
		if g := w.nodes[j].pn.gone; g >= 0 && !w.live(j) {
			age = w.now - g
		}
		list = append(list, election.Candidate{Node: fmt.Sprintf("node-%d", j), Attrs: w.c.Prefer.Attrs[j], Age: age})
	}
	return list
}

func candText(list []election.Candidate) string {
	var b strings.Builder
	for k, c := range list {
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s [%s] age %v", c.Node, c.Attrs, c.Age)
	}
	return b.String()
}

// doCandRequest executes an event on the candidacy read at index j of
// w.reqs; cur says whether its process is still the node's.
func (w *world) doCandRequest(ev Event, j int, cur bool, out *strings.Builder) error {
	i := int(ev.Node)
	r := &w.reqs[j]
	switch ev.Kind {
	case evApply:
		r.applied = true
		r.cands = w.candidacies()
		w.say(out, "store: node-%d's candidacies: %s", i, candText(r.cands))
		if !cur {
			w.reqs = slices.Delete(w.reqs, j, j+1)
		}
		return nil
	case evFail, evLose:
		w.reqs = slices.Delete(w.reqs, j, j+1)
		if !cur {
			w.say(out, "store: the request of a crashed process is lost")
			return nil
		}
		w.losses++
		w.say(out, "node-%d: told unavailable", i)
		w.readDone(i)
		return nil
	case evDeliver:
		list := r.cands
		w.reqs = slices.Delete(w.reqs, j, j+1)
		w.say(out, "node-%d: told the candidacies", i)
		w.readDone(i)
		return w.candReply(i, list, out)
	}
	return fmt.Errorf("explore: %s: not a store event", ev.line())
}

// readDone schedules node i's next read a renew interval after the
// answer to its last.
func (w *world) readDone(i int) {
	n := &w.nodes[i]
	n.pn.reading, n.pn.next = false, w.local(i, w.now).Add(w.c.Renew)
}

// candReply steps a read's candidacies into node i's machine: a leader's
// right after its safe point as it stands now (vcluster's preferReply),
// a contender's alone (its deferral).
func (w *world) candReply(i int, list []election.Candidate, out *strings.Builder) error {
	n := &w.nodes[i]
	n.pn.list, n.pn.fedAt, n.pn.fed, n.pn.fedSinceSwap = list, w.local(i, w.now), true, true
	var verr error
	if n.m.Leading() && n.s != nil {
		safe := n.s.AtSafePoint()
		n.pn.safeTold = safe
		verr = w.step(i, election.SafePoint{Name: name, Safe: safe}, out)
	}
	if err := w.step(i, election.Candidates{Name: name, List: list}, out); verr == nil {
		verr = err
	}
	return verr
}

// safePoint tells node i's machine, after a step of its scheduler
// machine, that it came to a safe point or left one, at once (vcluster's
// safePoint).
func (w *world) safePoint(i int, out *strings.Builder) error {
	n := &w.nodes[i]
	if n.s == nil || !n.m.Leading() {
		return nil
	}
	safe := n.s.AtSafePoint()
	if safe == n.pn.safeTold {
		return nil
	}
	n.pn.safeTold = safe
	w.say(out, "node-%d: safe point %v", i, safe)
	return w.step(i, election.SafePoint{Name: name, Safe: safe}, out)
}

// preferAction is the runtime's part in node i's election action a: a
// term's start (its first read due at once when none is out), a
// preference handover (checked by the simulator's check before its work
// ends), a swap sent (the list its machine was told before it).
func (w *world) preferAction(i int, a election.Action) error {
	n := &w.nodes[i]
	switch a := a.(type) {
	case election.Elected:
		n.pn.token, n.pn.since, n.pn.termAt, n.pn.safeTold = a.Token, w.local(i, w.now), w.now, false
		if !n.pn.reading {
			n.pn.next = w.local(i, w.now)
		}
	case election.Swap:
		n.pn.fedSinceSwap = false
	case election.Lost:
		if !errors.Is(a.Cause, election.ErrHandedOver) {
			return nil
		}
		calls := 0
		for _, r := range w.reqs {
			if r.node == i && r.inc == n.inc {
				switch r.work.(type) {
				case scheduler.SwapRun, scheduler.GetRun:
					calls++
				}
			}
		}
		v := vcluster.Handover{
			Name: name, Node: fmt.Sprintf("node-%d", i), Token: n.pn.token, RunCalls: calls,
			EffectOut: n.eff.on, Running: n.eff.a.Run.Period, Ledger: w.rows,
			Held: w.local(i, w.now).Sub(n.pn.since), Hysteresis: w.c.Prefer.Hysteresis,
			TermAt: n.pn.termAt, LastPref: w.lastPref,
		}.Check()
		w.lastPref = w.now
		if v != "" {
			return errors.New(v)
		}
	}
	return nil
}

// deferred checks, with the simulator's check, a swap of node r.node
// that the store applied over prev: a takeover by a contender that its
// last candidacies, told before the swap was sent, showed a live
// candidate preferred to.
func (w *world) deferred(r *request, prev store.Record) error {
	i := r.node
	n := &w.nodes[i]
	if prev.Version == 0 || !n.up || r.inc != n.inc || !n.pn.fed || n.pn.fedSinceSwap {
		return nil
	}
	id := fmt.Sprintf("node-%d", i)
	_, v := vcluster.Takeover{
		Name: name, Node: id, Self: w.c.Prefer.Attrs[i], Policy: w.c.Prefer.Policy, Prev: prev, Swap: r.sw,
		Lease: w.c.Lease, Margin: w.c.Margin, Deferral: w.c.electionConfig(i, n.inc).Deferral(),
		List: n.pn.list, Since: w.local(i, w.now).Sub(n.pn.fedAt), Took: w.local(i, w.now).Sub(w.local(i, w.recAt)),
		Up: func(node string) bool {
			for j := range w.nodes {
				if fmt.Sprintf("node-%d", j) == node {
					return j != i && w.nodes[j].up
				}
			}
			return false
		},
	}.Check()
	if v != "" {
		return errors.New(v)
	}
	return nil
}

// preferNeedText says what more than a preference the mutation called
// name needs of a configuration.
func preferNeedText(name string) string {
	if name == "prefer-no-defer" {
		return ""
	}
	return " and a job whose runtime reports its safe points"
}

// preferSchedConfig is sched-2x1-prefer: 2 nodes x 1 job every 3s,
// registered as the nodes start (its first period at 3s), polled every
// 3s, with the policy highest-weight (hysteresis 3s, the lease): node-0,
// of weight 1, its clock at 1.1, leads from the settled start, and
// node-1, of weight 2, is preferred. node-0 has led the hysteresis at
// 2.73s of true time (3s on its clock), when its scheduler comes to the
// job's second period: the shipping machine hands over between runs;
// with prefer-no-safe-point it does so with the period's claim out, with
// prefer-no-hysteresis at once (in the settled start).
func preferSchedConfig() Config {
	return Config{
		Name: "sched-2x1-prefer", About: "2 nodes x 1 job every 3s (polled every 3s), the job registered as the nodes start, the preference highest-weight (hysteresis 3s): node-0 of weight 1 leads from the settled start, node-1 of weight 2 is preferred; no fault but the store's delays; clock rates 1.1 and 1",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{11, 10}, {1, 1}}, End: 3 * time.Second, Settle: true, MaxDepth: 19,
		Work:   &Work{Period: 3 * time.Second, Poll: 3 * time.Second},
		Prefer: &Preference{Policy: election.Policy{Kind: election.PreferHighestWeight}, Hysteresis: 3 * time.Second, Attrs: []election.Attrs{{Weight: 1}, {Weight: 2}}},
	}
}

// ownPref gives m, a shallow copy of a machine, its own copy of the
// machine's preference state (election's prefState, behind a pointer),
// so that stepping it leaves the parent state's machine as it was. The
// copy is shallow: the state's one slice, the candidacies, is only ever
// replaced by the machine (stepPrefer clones what it is told), never
// written in place.
func ownPref(m *election.Machine) {
	f := writable(reflect.ValueOf(m).Elem().FieldByName("pref"))
	if f.IsNil() {
		return
	}
	q := reflect.New(f.Type().Elem())
	q.Elem().Set(writable(f.Elem()))
	f.Set(q)
}

// preferElectionConfig is 2x1-prefer: 2 nodes x 1 name, no work (so no
// safe point is ever reported and no leader hands over: the deferral is
// what it explores), the name's record released before the nodes start,
// the policy highest-weight: node-0 (weight 1, clock rate 1.1) knows
// node-1 (weight 2) live and defers its takeover of the free record; with
// prefer-no-defer it takes it at once.
func preferElectionConfig() Config {
	return Config{
		Name: "2x1-prefer", About: "2 nodes x 1 name released (free, token 1) before the nodes start, the preference highest-weight (hysteresis 3s): node-0 of weight 1, node-1 of weight 2, each reading the candidacies every renew interval; no work, so no safe point and no handover; no fault but the store's delays; clock rates 1.1 and 1",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{11, 10}, {1, 1}}, End: 4 * time.Second, Released: 1, MaxDepth: 17,
		Prefer: &Preference{Policy: election.Policy{Kind: election.PreferHighestWeight}, Hysteresis: 3 * time.Second, Attrs: []election.Attrs{{Weight: 1}, {Weight: 2}}},
	}
}
