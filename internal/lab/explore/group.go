package explore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// This file is a node's runtime for an election.Group in session mode
// (Config.Group), the explorer's counterpart of package baton's driver
// and of the simulator's (internal/lab/vcluster): every node is one
// Group that holds its names through its own session record, and the
// store is memstore itself, the store the simulator runs on, with its
// own rules for sessions (store.Resolve, storedriver's checks) and its
// mutations (memstore.WithSuccessionMutation). A Group and a
// memstore.Store are graphs of maps and pointers, not values: they are
// cloned by deepCopy when they change (copy on write) and hashed by
// reflection, maps in key order.
//
// The Group's store calls travel as a Machine's do: each Get and Swap
// one request (the driver batches them, GetMany and SwapMany, which are
// atomic: requests applied one after the other reach every state a batch
// reaches, and more). There is no change feed (the Group polls: Feed is
// never live); with Sessions.Succession, a Group succeeds the dead
// sessions it ends.

// Sessions makes every node of a configuration one election.Group in
// session mode campaigning for Names.
type Sessions struct {
	Names []string
	// Succession has every Group end another process's dead session by
	// naming its own session the successor (election.Config.Succession):
	// the names held through the dead one pass on to it, without a
	// write per name.
	Succession bool
	// Balance makes every Group balanced (election.Config.Balance, as
	// baton.WithBalance and the simulator's --balance set it), and has
	// the balance checked in every quiet state (balance.go).
	Balance bool
	// Shares, when set, is each node's weight among the balanced Groups
	// (election.Config.Share, as the simulator's --shares draws them).
	Shares []int
	// Heal is the true instant from which the store answers promptly:
	// time does not move past it while a store call is in flight
	// (before it, as in every configuration, a call may wait any time).
	// Only with Balance.
	Heal time.Duration
	// Quiet is the true instant from which the balance check applies:
	// in every state at or after it with no store call in flight.
	Quiet time.Duration
	// Feed, when set, gives every node the store's change feed (feed.go).
	Feed *Feed
	// Ghost, when positive, plants a dead process's session record
	// before the nodes start, held by ghost with this lease and never
	// renewed, and every name held through it at token 1
	// (succession.go); with Chain, those names were passed on to it by
	// a succession from a process that died before it, not settled yet.
	Ghost time.Duration
	Chain bool
	// Release has the planted dead process's release of every name in
	// flight: the store may apply it at any instant (evGhost).
	Release bool
	// Stagger, with Release and Config.Settle, settles node-0 first,
	// then lands the release, then settles the others (succession.go):
	// node-0 read the name held through the dead session, the others
	// read it free.
	Stagger bool
	// Skip[i] lists the names node i does not campaign for (nil: it
	// campaigns for every one): a name passed on to it by a succession
	// must be let go (its listing of its session, succession.go).
	Skip [][]string
	// Transfer has an operator ask, at any instant, for the transfer of
	// a name a node does not campaign for (baton.RequestResign: to any
	// node), while it is held and has no request on it (evTransfer).
	Transfer bool
	// Collect has a collector settle, at any instant, the names a
	// succession passed on (store.Succeeder.Settle, evSettle;
	// succession.go).
	Collect bool
}

// storeEpoch is the store's clock: stopped, so that a record's Updated
// (informational: no machine reads it) does not tell apart states that
// are otherwise one.
var storeEpoch = t0

// newStore is the configuration's memstore, with its mutation.
func (c *Config) newStore() *memstore.Store {
	opts := []memstore.Option{memstore.WithTime(func() time.Time { return storeEpoch })}
	if c.Mutate.Succession != (memstore.SuccessionMutation{}) {
		opts = append(opts, memstore.WithSuccessionMutation(c.Mutate.Succession))
	}
	return memstore.New(opts...)
}

// groupConfig is node i's Group configuration for incarnation inc, as
// the simulator's (vcluster's electionConfig for a session node).
func (c *Config) groupConfig(i, inc int) election.Config {
	cfg := c.electionConfig(i, inc)
	cfg.Name = ""
	cfg.Check = election.CheckLeases * c.Lease // as baton.NewGroup sets it
	cfg.Succession = c.Group.Succession
	cfg.Balance, cfg.Share = c.Group.Balance, c.Group.share(i)
	cfg.OrderedFeed = c.Group.Feed != nil // memstore's feed is in order (feed.go)
	cfg.Mutate = c.Mutate.Election
	cfg.Mutate.WrapDeadline = c.Mutate.WrapDeadline
	return cfg
}

// nameIndex is the index of a name in Config.Group.Names, or -1.
func (c *Config) nameIndex(n string) int { return slices.Index(c.Group.Names, n) }

// startGroup makes node i's Group for its incarnation and starts its
// campaigns (Start{Hold} for every name, in order), as baton.Group.Hold.
func (w *world) startGroup(i int, out *strings.Builder) error {
	n := &w.nodes[i]
	n.g = election.NewGroup(w.c.groupConfig(i, n.inc), true)
	n.hashd = false
	verr := w.feedOpen(i, out)
	for _, nm := range w.c.Group.Names {
		if w.c.skips(i, nm) {
			continue
		}
		if err := w.stepGroup(i, election.Start{Name: nm, Hold: true}, out); err != nil && verr == nil {
			verr = err
		}
	}
	return verr
}

// stepGroup feeds node i's Group ev at its local now and executes the
// actions, in a canonical order: by name, each name's own in their
// order (the Group lists different names' actions in map order, which
// the driver sends concurrently; vcluster sorts them the same way).
func (w *world) stepGroup(i int, ev election.Event, out *strings.Builder) error {
	n := &w.nodes[i]
	before := n.g
	n.g = deepCopy(n.g) // copy on write: the parent state and its other successors share it
	n.hashd = false
	now := w.local(i, w.now)
	var acts []election.Action
	switch ev := ev.(type) {
	case election.GetReply:
		acts = n.g.StepGet(now, &ev)
	case election.SwapReply:
		acts = n.g.StepSwap(now, &ev)
	default:
		acts = n.g.Step(now, ev)
	}
	n.g.Next() // drops stale timers now, so that the state hashes the same whenever it is looked at
	vcluster.SortActions(acts)
	var verr error
	for _, a := range acts {
		switch a := a.(type) {
		case election.Get:
			w.send(request{node: i, inc: n.inc, name: a.Name})
		case election.Swap:
			w.send(request{node: i, inc: n.inc, swap: true, sw: a.Swap, name: a.Swap.Record.Name})
		case election.List:
			w.send(request{node: i, inc: n.inc, list: a})
		case election.Elected:
			k := w.c.nameIndex(a.Name)
			if k >= 0 {
				if a.Token <= w.tokens[k] && verr == nil {
					verr = fmt.Errorf("node-%d won %s with token %d, not above token %d that a term of it was won with before", i, a.Name, a.Token, w.tokens[k])
				}
				w.tokens = slices.Clone(w.tokens)
				w.tokens[k] = max(w.tokens[k], a.Token)
			}
		case election.Lost:
			if err := w.checkLost(i, before, a); err != nil && verr == nil {
				verr = err
			}
		}
		w.say(out, "node-%d: %s", i, groupActionText(w, i, a))
	}
	return verr
}

func groupActionText(w *world, i int, a election.Action) string {
	switch a := a.(type) {
	case election.Get:
		return "get " + a.Name
	case election.Swap:
		r := a.Swap.Record
		holder := r.Holder
		if holder == "" {
			holder = "(free)"
		}
		s := fmt.Sprintf("swap %s expect=v%d: holder=%s inc=%s token=%d", r.Name, a.Swap.Expect, holder, r.Incarnation, r.Token)
		if r.Session != "" {
			s += " session=" + r.Session
		}
		if r.Successor != "" {
			s += " successor=" + r.Successor
		}
		return s
	case election.List:
		return fmt.Sprintf("list the names held through %s after %q", a.Session, a.After)
	case election.Elected:
		return fmt.Sprintf("elected %s token=%d valid until %v (true %v)", a.Name, a.Token, a.Deadline.Sub(t0), w.trueAt(i, a.Deadline))
	case election.Extended:
		what := a.Name
		if what == "" {
			what = "every name of its session"
		}
		return fmt.Sprintf("extended %s until %v (true %v)", what, a.Deadline.Sub(t0), w.trueAt(i, a.Deadline))
	case election.Lost:
		return fmt.Sprintf("lost %s: %v", a.Name, a.Cause)
	case election.Released:
		if a.Err != nil {
			return fmt.Sprintf("released %s: %v", a.Name, a.Err)
		}
		return "released " + a.Name
	case election.Failed:
		return fmt.Sprintf("failed %s: %v", a.Name, a.Err)
	case election.Idle:
		return "idle"
	}
	return fmt.Sprintf("%T", a)
}

// applyGroup executes a Group's request on the store (memstore, copied
// on write) and keeps its answer.
func (w *world) applyGroup(r *request) error {
	r.applied = true
	if r.swap || r.list.Session != "" {
		w.st = deepCopy(w.st) // copy on write; a Get changes nothing in memstore
		w.sthashd = false
	}
	ctx := context.Background()
	switch {
	case r.list.Session != "":
		recs, err := w.st.HeldThrough(ctx, r.list.Session, r.list.After, election.ListPage)
		r.recs, r.err = recs, err
	case r.swap:
		r.rec, r.err = w.st.Swap(ctx, r.sw)
	default:
		r.rec, r.err = w.st.Get(ctx, r.name)
	}
	return nil
}

// answerGroup feeds node i the answer to rq (err overrides the store's).
func (w *world) answerGroup(i int, rq request, err error, out *strings.Builder) error {
	if err == nil {
		err = rq.err
	}
	var ev election.Event
	switch {
	case rq.list.Session != "":
		r := election.ListReply{Session: rq.list.Session, Err: err}
		if err == nil {
			r.Records = rq.recs
		}
		ev = r
	case rq.swap:
		r := election.SwapReply{Name: rq.name, Err: err}
		if err == nil {
			r.Record = rq.rec
		}
		ev = r
	default:
		r := election.GetReply{Name: rq.name, Err: err}
		if err == nil {
			r.Record = rq.rec
		}
		ev = r
	}
	if err != nil {
		w.say(out, "node-%d: told %s: %s", i, rq.what(), errText(err))
	} else {
		w.say(out, "node-%d: told %s: %s", i, rq.what(), rq.answerText())
	}
	return w.feedAnswer(i, rq, err, func() error { return w.stepGroup(i, ev, out) })
}

// what names a Group's request.
func (r *request) what() string {
	switch {
	case r.list.Session != "":
		return "list " + r.list.Session
	case r.swap:
		return fmt.Sprintf("swap %s expect=v%d", r.name, r.sw.Expect)
	}
	return "get " + r.name
}

func (r *request) answerText() string {
	if r.list.Session != "" {
		var b strings.Builder
		fmt.Fprintf(&b, "%d records", len(r.recs))
		for _, rec := range r.recs {
			fmt.Fprintf(&b, " %s:%s", rec.Name, recText(rec))
		}
		return b.String()
	}
	s := recText(r.rec)
	if r.rec.Session != "" {
		s += " session=" + r.rec.Session
	}
	if r.rec.Via != "" {
		s += " via=" + r.rec.Via
	}
	if r.rec.Successor != "" {
		s += " successor=" + r.rec.Successor
	}
	return s
}

// groupValid is Term.Valid of node i's term of the k-th name, on its own
// clock (a name held through the session has the session's deadline).
func (w *world) groupValid(i, k int) (uint64, bool) {
	n := w.nodes[i]
	if !n.up || n.g == nil {
		return 0, false
	}
	m := n.g.Machine(w.c.Group.Names[k])
	if m == nil || m.Token() == 0 {
		return 0, false
	}
	return m.Token(), election.Valid(w.local(i, w.now), m.Deadline())
}

// checkGroup is the invariant of every name: no two valid terms of it at
// one true instant.
func (w *world) checkGroup() error {
	for k, nm := range w.c.Group.Names {
		first, ftok := -1, uint64(0)
		for i := range w.nodes {
			tok, ok := w.groupValid(i, k)
			if !ok {
				continue
			}
			if first >= 0 {
				return fmt.Errorf("two valid terms of %s at %v: node-%d's (token %d) and node-%d's (token %d)", nm, w.now, first, ftok, i, tok)
			}
			first, ftok = i, tok
		}
	}
	if err := w.checkBalance(); err != nil {
		return err
	}
	return w.checkLeft()
}

// groupInstants calls consider with node i's instants: just before and
// at its Group's timer, and just before, at and just after the deadline
// of every term it holds.
func (w *world) groupInstants(i int, consider func(time.Duration)) {
	n := w.nodes[i]
	if nx := n.g.Next(); !nx.IsZero() {
		t := w.trueAt(i, nx)
		consider(t - 1)
		consider(t)
	}
	for _, nm := range w.c.Group.Names {
		if m := n.g.Machine(nm); m != nil {
			if d := m.Deadline(); !d.IsZero() {
				t := w.trueAt(i, d)
				consider(t - 1)
				consider(t)
				consider(t + 1)
			}
		}
	}
	w.feedInstants(i, consider)
}

// storeKey hashes the store's contents (every field of the memstore, its
// clock function but for being set).
func storeKey(x *hasher, st *memstore.Store) key { return machineKey(x, st) }

// doGroupRequest executes an event on a Group's store call at index j of
// w.reqs; cur says whether its process is still the node's.
func (w *world) doGroupRequest(ev Event, j int, cur bool, out *strings.Builder) error {
	i := int(ev.Node)
	r := &w.reqs[j]
	switch ev.Kind {
	case evApply:
		verr := w.applyGroup(r)
		if r.swap && r.err == nil {
			w.notified(r.rec)
		}
		if errors.Is(r.err, store.ErrInvalid) {
			verr = fmt.Errorf("the store refused node-%d's %s as invalid: %v", i, r.what(), r.err)
		}
		if r.err != nil {
			w.say(out, "store: node-%d's %s: %s", i, r.what(), errText(r.err))
		} else {
			w.say(out, "store: node-%d's %s: %s", i, r.what(), r.answerText())
		}
		if !cur {
			w.reqs = slices.Delete(w.reqs, j, j+1) // its process is gone: nobody takes the answer
		}
		return verr
	case evFail:
		rq := *r
		w.reqs = slices.Delete(w.reqs, j, j+1)
		if !cur {
			w.say(out, "store: the request of a crashed process is lost")
			return nil
		}
		w.losses++
		return w.answerGroup(i, rq, store.ErrUnavailable, out)
	case evDeliver, evLose:
		rq := *r
		w.reqs = slices.Delete(w.reqs, j, j+1)
		var err error
		if ev.Kind == evLose {
			w.losses++
			err = store.ErrUnavailable
		}
		return w.answerGroup(i, rq, err, out)
	}
	return fmt.Errorf("explore: %s: not a store event", ev.line())
}
