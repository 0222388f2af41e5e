package explore

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
	"github.com/batonhq/baton/store/storedriver"
)

// name is the one election name of the configurations explored so far.
const name = "billing"

// t0 is every node's local clock at true time 0 (no monotonic reading, no
// location: a time.Time that hashes by its instant alone).
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// kind is what an event does.
type kind uint8

const (
	evTick     kind = iota // a node's timer fires (its Next has come)
	evApply                // the store applies a request
	evFail                 // a request is not applied; its node is told unavailable
	evDeliver              // an applied request's answer reaches its node
	evLose                 // an applied request's answer is lost: its node is told unavailable
	evCrash                // a node's process dies: its machine and its answers are gone
	evRestart              // a new process of a crashed node campaigns
	evPause                // a node's process stops (no timer, no answer, no write)
	evResume               // it runs again
	evWrite                // a leader begins a fenced write with its term's token
	evLand                 // a write reaches the fence
	evAdvance              // time moves to the next instant a decision can change
	evWorkTick             // a node's scheduler timer fires
	evDone                 // a node's run ends: done, or stopped when its machine asked
	evFailRun              // a node's run ends failed (Work.Failures)
	evSuspend              // an operator suspends the job (Work.Suspend)
	evStep                 // a node's wall clock steps off by Work.Step
	evStepDown             // a node whose clock guard asked it to step down resigns
	evCandTick             // a node's candidacy read is due (Config.Prefer)
	evRecord               // a supervisor's record in flight lands (Work.LateRecords, late.go)
	evNote                 // a node's change feed reports the first writes it queued (feed.go)
	evGap                  // a node's change feed closes: its notifications are lost
	evHeal                 // a node's change feed opens again
	evForge                // a forging client notifies a node of a session record
	evLive                 // a replay's check that a leader can still come (Config.Live; never enabled)
	evSettle               // a collector settles a dead session's names (Sessions.Collect)
	evGhost                // the store applies the planted dead process's release (Sessions.Release)
	evTransfer             // an operator asks for a name's transfer (Sessions.Transfer)
	evContinue             // an operator resumes the suspended job (Work.Resume)
)

var kindNames = [...]string{"tick", "apply", "fail", "deliver", "lose", "crash", "restart", "pause", "resume", "write", "land", "advance", "wtick", "done", "failrun", "suspend", "step", "stepdown", "ctick", "record", "note", "gap", "heal", "forge", "live", "settle", "ghost", "transfer", "unsuspend"}

func (k kind) String() string { return kindNames[k] }

// Event is one step of the explored system.
type Event struct {
	Kind kind
	Node int8          // the node, or the request's node
	Idx  int8          // the request's index among the node's pending ones
	To   time.Duration // evAdvance: the new true time
}

// line is the event as a scenario step.
func (ev Event) line() string {
	switch ev.Kind {
	case evAdvance:
		return fmt.Sprintf("advance to=%v", ev.To)
	case evApply, evFail, evDeliver, evLose, evRecord, evNote, evForge:
		return fmt.Sprintf("%s n=%d i=%d", ev.Kind, ev.Node, ev.Idx)
	case evSuspend:
		return "suspend"
	case evContinue:
		return "unsuspend"
	case evLive:
		return "live"
	case evSettle:
		return fmt.Sprintf("settle i=%d", ev.Idx)
	case evGhost:
		return "ghost"
	case evTransfer:
		return fmt.Sprintf("transfer i=%d", ev.Idx)
	}
	return fmt.Sprintf("%s n=%d", ev.Kind, ev.Node)
}

// request is an election store call in flight.
type request struct {
	node, inc int
	swap      bool
	sw        store.Swap
	applied   bool
	rec       store.Record // the answer, once applied
	err       error
	// work is a scheduler machine's store call (nil: the election
	// machine's), ans its answer once applied.
	work scheduler.Action
	ans  scheduler.Event
	// With Config.Group: the record a Get or Swap is about, a List, and
	// a List's answer.
	name string
	list election.List
	recs []store.Record
	// With Config.Prefer: a read of the candidacies, and its answer.
	cand  bool
	cands []election.Candidate
}

// write is a fenced write in flight from a node's term.
type write struct {
	node  int
	token uint64
}

type node struct {
	m      *election.Machine
	g      *election.Group // with Config.Group, instead of m (hashed into h)
	inc    int
	up     bool
	paused bool
	// h is the hash of m, kept while m does not step (an event steps one
	// machine at most: the others' hashes carry over from the parent).
	h     key
	hashd bool
	// With Config.Work: the node's scheduler machine (copied when it
	// steps, hashed as m is), its run in progress, its term starts, and
	// its term's previous run as its machine was told it ended (the
	// overlap check's).
	s      *scheduler.Machine
	sh     key
	shashd bool
	eff    effect
	starts int
	busy   vcluster.Busy
	own    []store.Run // the rows its runs' supervisor recorded (Work.Supervisor), one per period
	// The wall clock (Work.Step): its offset off the node's clock, the
	// step waiting to land, the offset its machine's last clock check
	// saw, when its guard began to hold it off (true time, -1: not held)
	// and whether its machine asked it to step down (evStepDown due).
	wallOff, stepTo, checkedOff time.Duration
	stepping                    bool
	heldAt                      time.Duration
	stepDown                    bool
	// With Config.Prefer: its preference runtime (prefer.go).
	pn prefNode
}

// world is one state: the nodes' machines, the store's record, the
// fence, the messages in flight, true time and what is left of the fault
// budget. It is a value but for the machines, which clone copies.
type world struct {
	c       *Config
	now     time.Duration
	nodes   []node
	rec     store.Record // the name's stored record (Version 0: none)
	version int64        // the store's version counter
	fence   uint64       // the highest token the fence accepted
	landed  uint64       // the highest token of any write that landed (accepted or not)
	elected uint64       // the highest token any term was won with
	reqs    []request
	writes  []write
	// budget spent
	crashes, pauses, losses, wrote int
	// With Config.Work: the job, its ledger rows by period and the
	// ledger's version counter, the attempts whose machines were told
	// their runs ran to their end, and whether the operator suspended
	// the job.
	job       store.Job
	rows      []store.Run
	ledgerVer int64
	told      []attempt
	suspended bool
	resumed   bool // the operator resumed it (Work.Resume)
	stepped   bool // a node's wall clock stepped (Work.Step)
	// finished are the periods a committed ledger write finished
	// (vcluster.Finishes), sorted: what the period liveness check judges
	// (Work.Live, periodlive.go).
	finished []string
	// With Work.LateRecords: the supervisors' records in flight, and the
	// claimed rows of the attempts whose runs ended inside their terms
	// (late.go).
	records []record
	ended   []store.Run
	// With Config.Group: the store (memstore, copied on write) and the
	// highest token each name was won with.
	st      *memstore.Store
	sth     key // st's hash, kept while st does not change
	sthashd bool
	tokens  []uint64
	// With Config.Prefer: when the name was last handed over to a
	// preferred candidate (-1: never), and when its record was last
	// written (true time).
	lastPref, recAt time.Duration
	feed            feedWorld // with Sessions.Feed (feed.go)
}

// newWorld is the initial state: every node campaigns (Start{Hold}) at
// true time 0, in node order. out, when set, gets the actions.
func newWorld(c *Config, out *strings.Builder) *world {
	w := &world{c: c, lastPref: -1}
	if c.Planted() {
		w.version = 1
		w.rec = c.Plant
		w.rec.Version = w.version
		w.elected = c.Plant.Token
		w.say(out, "store: planted %s lease=%v", recText(w.rec), w.rec.Lease)
	}
	if c.Released > 0 {
		w.version, w.elected = 1, c.Released
		w.rec = store.Record{Name: name, Token: c.Released, Version: w.version}
		w.say(out, "store: %s (released before the nodes start)", recText(w.rec))
	}
	if c.Work != nil {
		w.job = store.Job{Name: name, Schedule: "every " + c.Work.Period.String(), Created: t0.Add(c.Work.Created)}
		w.say(out, "store: job %s registered at %v", name, c.Work.Created)
		w.rows = slices.Clone(c.Work.Rows)
		for _, r := range w.rows {
			w.ledgerVer = max(w.ledgerVer, r.Version)
			w.say(out, "store: ledger row %s", rowText(r))
		}
	}
	if c.Group != nil {
		w.st = c.newStore()
		w.tokens = make([]uint64, len(c.Group.Names))
		for i := 0; i < c.Nodes; i++ {
			w.nodes = append(w.nodes, node{inc: 1, up: true, heldAt: -1})
		}
		w.plantGhost(out)
		for i := range w.nodes {
			w.startGroup(i, out)
		}
		return w
	}
	for i := 0; i < c.Nodes; i++ {
		w.nodes = append(w.nodes, node{inc: 1, up: true, heldAt: -1})
		w.nodes[i].m = election.New(c.electionConfig(i, 1))
		if c.Work != nil {
			w.nodes[i].s = scheduler.New(c.workConfig())
		}
		if c.Prefer != nil {
			w.preferStart(i)
		}
	}
	for i := range w.nodes {
		w.step(i, election.Start{Name: name, Hold: true}, out)
	}
	return w
}

func (w *world) clone() *world {
	c := *w
	c.nodes = slices.Clone(w.nodes) // the machines are shared until one steps (step copies it)
	c.reqs = slices.Clone(w.reqs)
	c.writes = slices.Clone(w.writes)
	c.rows = slices.Clone(w.rows)
	c.told = slices.Clone(w.told)
	c.records = slices.Clone(w.records)
	c.finished = slices.Clone(w.finished)
	return &c
}

// key hashes everything that decides the future: two states with one key
// have the same successors.
func (w *world) key(x *hasher) key {
	x.reset()
	for i := range w.nodes {
		n := &w.nodes[i]
		if !n.hashd {
			if w.c.Group != nil {
				n.h = machineKey(x, n.g)
			} else {
				n.h = machineKey(x, n.m)
			}
			n.hashd = true
		}
		if !n.shashd {
			n.sh, n.shashd = machineKey(x, n.s), true
		}
	}
	if w.st != nil && !w.sthashd {
		w.sth, w.sthashd = storeKey(x, w.st), true
	}
	sk := w.sth
	x.reset()
	x.u64(uint64(w.now))
	x.u64(sk[0])
	x.u64(sk[1])
	for _, v := range w.tokens {
		x.u64(v)
	}
	for _, n := range w.nodes {
		x.u64(uint64(n.inc))
		x.u64(uint64(b2i(n.up)<<1 | b2i(n.paused)))
		x.u64(n.h[0])
		x.u64(n.h[1])
		if w.c.Work != nil {
			x.u64(n.sh[0])
			x.u64(n.sh[1])
			x.value(reflect.ValueOf(n.eff))
			x.u64(uint64(n.starts))
			x.value(reflect.ValueOf(n.busy))
			x.value(reflect.ValueOf(n.own))
			for _, v := range []time.Duration{n.wallOff, n.stepTo, n.checkedOff, n.heldAt} {
				x.u64(uint64(v))
			}
			x.u64(b2i(n.stepping)<<1 | b2i(n.stepDown))
		}
	}
	x.value(reflect.ValueOf(w.rec))
	for _, v := range []uint64{uint64(w.version), w.fence, w.landed, w.elected,
		uint64(w.crashes), uint64(w.pauses), uint64(w.losses), uint64(w.wrote)} {
		x.u64(v)
	}
	x.value(reflect.ValueOf(w.reqs))
	x.value(reflect.ValueOf(w.writes))
	if w.c.Work != nil {
		x.value(reflect.ValueOf(w.job))
		x.value(reflect.ValueOf(w.rows))
		x.u64(uint64(w.ledgerVer))
		x.value(reflect.ValueOf(w.told))
		x.u64(b2i(w.resumed)<<2 | b2i(w.suspended)<<1 | b2i(w.stepped))
		if w.c.Work.Live {
			x.value(reflect.ValueOf(w.finished))
		}
		if w.c.Work.LateRecords {
			x.value(reflect.ValueOf(w.records))
			x.value(reflect.ValueOf(w.ended))
		}
	}
	if w.c.Prefer != nil {
		w.preferKey(x)
	}
	if w.c.feeding() {
		x.value(reflect.ValueOf(w.feed))
	}
	return x.sum()
}

// machineKey hashes every field of m but its configuration, which is
// node i's for its incarnation: the node's index and incarnation, hashed
// beside it, decide it.
func machineKey[M any](x *hasher, m *M) key {
	x.reset()
	if m == nil {
		return x.sum()
	}
	v := reflect.ValueOf(m).Elem()
	t := v.Type()
	for f := 0; f < v.NumField(); f++ {
		if t.Field(f).Name != "cfg" {
			x.value(v.Field(f))
		}
	}
	return x.sum()
}

func b2i(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// local is node i's clock at true time t: t0 plus t times its rate,
// rounded down.
func (w *world) local(i int, t time.Duration) time.Time {
	r := w.c.rate(i)
	return t0.Add(time.Duration(int64(t) * r.Num / r.Den))
}

// trueAt is the first true instant at which node i's clock reads lt or
// later.
func (w *world) trueAt(i int, lt time.Time) time.Duration {
	r := w.c.rate(i)
	d := int64(lt.Sub(t0))
	return time.Duration((d*r.Den + r.Num - 1) / r.Num)
}

// valid is Term.Valid of node i's current term, on its own clock.
func (w *world) valid(i int) bool {
	n := w.nodes[i]
	return n.up && n.m.Token() != 0 && election.Valid(w.local(i, w.now), n.m.Deadline())
}

// step feeds node i's machine ev at its local now and executes the
// actions: store calls go in flight, terms are checked.
func (w *world) step(i int, ev election.Event, out *strings.Builder) error {
	n := &w.nodes[i]
	// Copy on write: the parent state and its other successors share the
	// machine. A Machine is a value but for gets, which it only ever
	// rewrites with the same Get, and sess, nil for a machine that is no
	// Group's.
	cp := *n.m
	n.m = &cp
	if w.c.Prefer != nil {
		ownPref(n.m) // its preference state is behind a pointer
	}
	n.hashd = false
	var verr error
	for _, a := range n.m.Step(w.local(i, w.now), ev) {
		switch a := a.(type) {
		case election.Get:
			w.send(request{node: i, inc: n.inc})
		case election.Swap:
			w.send(request{node: i, inc: n.inc, swap: true, sw: a.Swap})
		case election.Elected:
			if a.Token <= w.elected && verr == nil {
				verr = fmt.Errorf("node-%d won a term with token %d, not above token %d that a term was won with before", i, a.Token, w.elected)
			}
			w.elected = max(w.elected, a.Token)
		}
		w.say(out, "node-%d: %s", i, actionText(w, i, a))
		if w.c.Prefer != nil {
			if err := w.preferAction(i, a); err != nil && verr == nil {
				verr = err
			}
		}
		if n.s == nil {
			continue
		}
		// The term's work begins when it is won and ends when it is
		// lost or given up (as schedule.Runner and the simulator do).
		var err error
		switch a := a.(type) {
		case election.Elected:
			err = w.startWork(i, a.Token, out)
		case election.Lost, election.Released:
			err = w.endWork(i, out)
		}
		if err != nil && verr == nil {
			verr = err
		}
	}
	return verr
}

func (w *world) say(out *strings.Builder, format string, a ...any) {
	if out != nil {
		if out.Len() > 0 {
			out.WriteByte('\n')
		}
		fmt.Fprintf(out, format, a...)
	}
}

// send puts r in flight after node r.node's others: the requests are
// kept by node, in the order each node sent them, so that two nodes'
// steps in either order reach one state.
func (w *world) send(r request) {
	j := len(w.reqs)
	for j > 0 && w.reqs[j-1].node > r.node {
		j--
	}
	w.reqs = slices.Insert(w.reqs, j, r)
}

// nodeReq returns the index in w.reqs of node i's idx-th request in
// flight (in the order it sent them), or -1.
func (w *world) nodeReq(i, idx int) int {
	k := 0
	for j, r := range w.reqs {
		if r.node == i {
			if k == idx {
				return j
			}
			k++
		}
	}
	return -1
}

// apply executes a request on the store: the store's own rule
// (storedriver.CheckSwap, the one memstore applies to a record without
// sessions) decides a swap. It returns the invariant the swap broke: a
// planted record (Config.Plant) is never written over.
func (w *world) apply(r *request) error {
	r.applied = true
	if !r.swap {
		if w.rec.Version == 0 {
			r.err = fmt.Errorf("election %q: %w", name, store.ErrNotFound)
			return nil
		}
		r.rec = w.rec
		return nil
	}
	if err := storedriver.CheckSwap(w.rec, r.sw); err != nil {
		r.err = err
		return nil
	}
	var verr error
	if w.c.Planted() && w.rec.Version == 1 {
		verr = fmt.Errorf("node-%d's swap wrote over the record planted held by %s with lease %v, which no valid Config writes: no node may take it", r.node, w.rec.Holder, w.rec.Lease)
	}
	if w.c.Prefer != nil {
		if err := w.deferred(r, w.rec); err != nil && verr == nil {
			verr = err
		}
		w.recAt = w.now
	}
	w.version++
	rec := r.sw.Record
	rec.Version = w.version
	w.rec = rec
	r.rec = rec
	return verr
}

// live reports whether node i's process runs now: up and not paused (it
// can take an answer, fire a timer, begin a write).
func (w *world) live(i int) bool { return w.nodes[i].up && !w.nodes[i].paused }

// enabled lists the events possible in w, in a fixed order.
func (w *world) enabled() []Event {
	c := w.c
	var evs []Event
	due := false
	for i := range w.nodes {
		n := w.nodes[i]
		if w.live(i) {
			if nx := w.timer(i); !nx.IsZero() && w.trueAt(i, nx) <= w.now {
				evs = append(evs, Event{Kind: evTick, Node: int8(i)})
				due = true
			}
			if n.s != nil {
				if nx := n.s.Next(); !nx.IsZero() && w.trueAt(i, nx.Add(-n.wallOff)) <= w.now {
					evs = append(evs, Event{Kind: evWorkTick, Node: int8(i)})
					due = true
				}
			}
			if n.stepDown {
				evs = append(evs, Event{Kind: evStepDown, Node: int8(i)})
				due = true
			}
			if c.Prefer != nil && w.candDue(i) {
				evs = append(evs, Event{Kind: evCandTick, Node: int8(i)})
				due = true
			}
		}
	}
	count := make([]int, len(w.nodes))
	for _, r := range w.reqs {
		i := r.node
		idx := int8(count[i])
		count[i]++
		cur := w.nodes[i].up && w.nodes[i].inc == r.inc
		if !r.applied {
			evs = append(evs, Event{Kind: evApply, Node: int8(i), Idx: idx})
			if !cur || (w.live(i) && w.losses < c.Losses && w.faults() < c.Faults && w.faulty()) {
				evs = append(evs, Event{Kind: evFail, Node: int8(i), Idx: idx})
			}
			continue
		}
		if cur && w.live(i) {
			evs = append(evs, Event{Kind: evDeliver, Node: int8(i), Idx: idx})
			if w.losses < c.Losses && w.faults() < c.Faults && w.faulty() {
				evs = append(evs, Event{Kind: evLose, Node: int8(i), Idx: idx})
			}
		}
	}
	for i := range w.nodes {
		n := w.nodes[i]
		switch {
		case n.up && w.crashes < c.Crashes && w.faults() < c.Faults && w.faulty():
			evs = append(evs, Event{Kind: evCrash, Node: int8(i)})
		case !n.up:
			evs = append(evs, Event{Kind: evRestart, Node: int8(i)})
		}
		switch {
		case n.up && !n.paused && w.pauses < c.Pauses && w.faults() < c.Faults && w.faulty():
			evs = append(evs, Event{Kind: evPause, Node: int8(i)})
		case n.up && n.paused:
			evs = append(evs, Event{Kind: evResume, Node: int8(i)})
		}
		if w.live(i) && w.wrote < c.Writes && n.m.Token() != 0 && !w.writing(i) && (c.Mutate.NoValidCheck || w.valid(i)) {
			evs = append(evs, Event{Kind: evWrite, Node: int8(i)})
		}
		if w.live(i) && n.eff.on {
			evs = append(evs, Event{Kind: evDone, Node: int8(i)})
			if c.Work.Failures && !n.eff.stopping {
				evs = append(evs, Event{Kind: evFailRun, Node: int8(i)})
			}
		}
	}
	if c.Work != nil && c.Work.Suspend && !w.suspended && w.faulty() && (!c.Work.Live || w.faults() < c.Faults) {
		evs = append(evs, Event{Kind: evSuspend})
	}
	if c.Work != nil && c.Work.Resume && w.suspended && !w.resumed && w.faulty() {
		evs = append(evs, Event{Kind: evContinue})
	}
	if c.Work != nil && c.Work.Step != 0 && !w.stepped {
		for i := range w.nodes {
			if w.nodes[i].up {
				evs = append(evs, Event{Kind: evStep, Node: int8(i)})
			}
		}
	}
	for _, wr := range w.writes {
		evs = append(evs, Event{Kind: evLand, Node: int8(wr.node)})
	}
	if c.Work != nil && c.Work.LateRecords {
		evs = append(evs, w.recordEvents()...)
	}
	evs = w.feedEvents(evs)
	evs = append(evs, w.settleEvents()...)
	if w.c.Group != nil && w.c.Group.Release {
		evs = append(evs, Event{Kind: evGhost})
	}
	evs = append(evs, w.transferEvents()...)
	if !due {
		if t, ok := w.nextInstant(); ok && !w.prompt(t) && w.recordsBefore(t) {
			evs = append(evs, Event{Kind: evAdvance, To: t})
		}
	}
	return evs
}

// faults is how much of the fault budget the path spent.
func (w *world) faults() int {
	n := w.crashes + w.pauses + w.losses
	if w.suspended && w.c.Work != nil && w.c.Work.Live {
		n++ // with Work.Live, the operator's suspension spends the fault budget
	}
	return n
}

func (w *world) writing(i int) bool {
	return slices.ContainsFunc(w.writes, func(wr write) bool { return wr.node == i })
}

// nextInstant is the next true instant after now at which a decision can
// change, within the horizon: just before and at every node's timer, and
// just before, at and just after every term's deadline, each on the
// node's own clock.
func (w *world) nextInstant() (time.Duration, bool) {
	best, ok := time.Duration(0), false
	consider := func(t time.Duration) {
		if t > w.now && t <= w.c.End && (!ok || t < best) {
			best, ok = t, true
		}
	}
	for i, n := range w.nodes {
		if !n.up {
			continue
		}
		if n.g != nil {
			w.groupInstants(i, consider)
			continue
		}
		if nx := n.m.Next(); !nx.IsZero() {
			t := w.trueAt(i, nx)
			consider(t - 1)
			consider(t)
		}
		if n.s != nil {
			if nx := n.s.Next(); !nx.IsZero() {
				t := w.trueAt(i, nx.Add(-n.wallOff))
				consider(t - 1)
				consider(t)
			}
		}
		if d := n.m.Deadline(); !d.IsZero() {
			t := w.trueAt(i, d)
			consider(t - 1)
			consider(t)
			consider(t + 1)
		}
		if w.c.Prefer != nil {
			w.preferInstants(i, consider)
		}
		if wk := w.c.Work; wk != nil && wk.ClockStepDown > 0 && n.heldAt >= 0 {
			consider(n.heldAt + wk.ClockStepDown + 3*wk.Poll + 1) // the first instant the step-down is late
		}
	}
	w.recordInstants(consider)
	if wk := w.c.Work; wk != nil && wk.Live {
		consider(w.c.End) // the instant the period liveness check judges
	}
	return best, ok
}

// do executes ev on w (which it changes) and returns the invariant it
// broke, if any. out, when set, gets what happened, one line each.
func (w *world) do(ev Event, out *strings.Builder) error {
	i := int(ev.Node)
	var verr error
	switch ev.Kind {
	case evTick:
		if w.c.Group != nil {
			verr = w.stepGroup(i, election.Tick{}, out)
		} else {
			verr = w.step(i, election.Tick{}, out)
		}
		// A timer that fired and is due again at once would spin, and
		// would hold time still here (time moves only once the running
		// nodes' due timers fired).
		if nx := w.timer(i); verr == nil && !nx.IsZero() && w.trueAt(i, nx) <= w.now {
			verr = fmt.Errorf("node-%d's timer is due again at once after it fired at %v (a spin)", i, w.now)
		}
	case evWorkTick:
		verr = w.stepWork(i, scheduler.Tick{}, out)
		if nx := w.nodes[i].s.Next(); verr == nil && !nx.IsZero() && w.trueAt(i, nx.Add(-w.nodes[i].wallOff)) <= w.now {
			verr = fmt.Errorf("node-%d's scheduler timer is due again at once after it fired at %v (a spin)", i, w.now)
		}
	case evApply, evFail, evDeliver, evLose:
		j := w.nodeReq(i, int(ev.Idx))
		if j < 0 {
			return fmt.Errorf("explore: %s: no such request", ev.line())
		}
		r := &w.reqs[j]
		cur := w.nodes[i].up && w.nodes[i].inc == r.inc
		if r.work != nil {
			return w.doWorkRequest(ev, j, cur, out)
		}
		if r.cand {
			return w.doCandRequest(ev, j, cur, out)
		}
		if w.c.Group != nil {
			verr = w.doGroupRequest(ev, j, cur, out)
			break
		}
		switch ev.Kind {
		case evApply:
			verr = w.apply(r)
			if errors.Is(r.err, store.ErrInvalid) {
				verr = fmt.Errorf("the store refused node-%d's swap as invalid: %v", i, r.err)
			}
			w.say(out, "store: %s", storeText(w, r))
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
			return w.answer(i, rq, store.ErrUnavailable, out)
		case evDeliver:
			rq := *r
			w.reqs = slices.Delete(w.reqs, j, j+1)
			return w.answer(i, rq, rq.err, out)
		case evLose:
			rq := *r
			w.reqs = slices.Delete(w.reqs, j, j+1)
			w.losses++
			return w.answer(i, rq, store.ErrUnavailable, out)
		}
	case evCrash:
		w.crashes++
		w.nodes[i].up, w.nodes[i].paused, w.nodes[i].m, w.nodes[i].g, w.nodes[i].hashd = false, false, nil, nil, false
		w.nodes[i].s, w.nodes[i].shashd, w.nodes[i].eff, w.nodes[i].busy, w.nodes[i].own = nil, false, effect{}, vcluster.Busy{}, nil
		w.nodes[i].heldAt, w.nodes[i].stepDown = -1, false
		if w.c.Prefer != nil {
			w.nodes[i].pn = prefNode{gone: w.now} // its candidacy is renewed no more
		}
		w.landStep(i, out) // outside a term now
		w.feedGone(i)
		// Answers on their way to the process are gone with it; requests
		// not applied yet may still be (the store may take them later).
		w.reqs = slices.DeleteFunc(w.reqs, func(r request) bool { return r.node == i && r.applied })
		w.say(out, "node-%d: crashed", i)
	case evRestart:
		n := &w.nodes[i]
		n.inc++
		n.up = true
		if w.c.Group != nil {
			w.say(out, "node-%d: restarted as node-%d.%d", i, i, n.inc)
			verr = w.startGroup(i, out)
			break
		}
		n.m = election.New(w.c.electionConfig(i, n.inc))
		if w.c.Work != nil {
			n.s, n.shashd = scheduler.New(w.c.workConfig()), false
		}
		if w.c.Prefer != nil {
			w.preferStart(i)
		}
		w.say(out, "node-%d: restarted as node-%d.%d", i, i, n.inc)
		verr = w.step(i, election.Start{Name: name, Hold: true}, out)
	case evPause:
		w.pauses++
		w.nodes[i].paused = true
		if w.c.Prefer != nil {
			w.nodes[i].pn.gone = w.now
		}
		if w.nodes[i].eff.on {
			w.nodes[i].eff.froze = true
		}
		w.say(out, "node-%d: paused", i)
	case evResume:
		w.nodes[i].paused = false
		if w.c.Prefer != nil {
			w.nodes[i].pn.gone = -1
		}
		if w.nodes[i].heldAt >= 0 {
			w.nodes[i].heldAt = w.now // the step-down bound counts from the thaw, as the simulator's
		}
		w.say(out, "node-%d: resumed", i)
	case evWrite:
		w.wrote++
		tok := w.nodes[i].m.Token()
		if !w.valid(i) {
			verr = fmt.Errorf("node-%d began a write with token %d outside its term (deadline %v on its clock, now %v)",
				i, tok, w.nodes[i].m.Deadline().Sub(t0), w.local(i, w.now).Sub(t0))
		}
		j := len(w.writes)
		for j > 0 && w.writes[j-1].node > i {
			j--
		}
		w.writes = slices.Insert(w.writes, j, write{node: i, token: tok}) // by node: one state whatever the order
		w.say(out, "node-%d: write token=%d sent", i, tok)
	case evLand:
		k := slices.IndexFunc(w.writes, func(wr write) bool { return wr.node == i })
		if k < 0 {
			return fmt.Errorf("explore: %s: no write in flight", ev.line())
		}
		wr := w.writes[k]
		w.writes = slices.Delete(w.writes, k, k+1)
		stale := wr.token < w.landed
		w.landed = max(w.landed, wr.token)
		switch err := w.guard(wr.token); {
		case errors.Is(err, fence.ErrStaleToken):
			w.say(out, "fence: refused token=%d (highest %d)", wr.token, w.fence)
		case err != nil:
			return fmt.Errorf("explore: the fence: %w", err)
		default:
			w.say(out, "fence: accepted token=%d", wr.token)
			if stale {
				verr = fmt.Errorf("a write with token %d was accepted after one with a higher token landed", wr.token)
			}
		}
	case evNote, evGap, evHeal, evForge:
		verr = w.doFeed(ev, out)
	case evAdvance:
		w.now = ev.To
		w.say(out, "now %v", w.now)
	case evDone, evFailRun:
		verr = w.endEffect(i, ev.Kind == evFailRun, out)
	case evRecord:
		verr = w.landRecord(i, int(ev.Idx), out)
	case evStep:
		w.stepped = true
		n := &w.nodes[i]
		n.stepTo, n.stepping = w.c.Work.Step, true
		w.say(out, "node-%d: its wall clock steps %v off", i, w.c.Work.Step)
		if n.s == nil || !n.s.Working() {
			w.landStep(i, out)
		}
	case evCandTick:
		w.candTick(i, out)
	case evStepDown:
		w.nodes[i].stepDown = false
		w.say(out, "node-%d: resigns (stepped down)", i)
		verr = w.step(i, election.Resign{Name: name}, out)
	case evLive:
		verr = w.liveFrom(out)
	case evSettle:
		verr = w.settleDead(int(ev.Idx), out)
	case evGhost:
		verr = w.ghostRelease(out)
	case evTransfer:
		verr = w.transfer(int(ev.Idx), out)
	case evSuspend:
		if err := w.operatorSuspend(true, out); err != nil {
			return err
		}
		w.suspended = true
	case evContinue:
		if err := w.operatorSuspend(false, out); err != nil {
			return err
		}
		w.resumed = true
	}
	if verr == nil {
		verr = w.check()
	}
	return verr
}

// guard passes a write with token through the fence (fence.Guard, the
// rule every fenced resource applies), rebuilt at w.fence, and keeps its
// new highest token. With the no-fence mutation every write is accepted.
func (w *world) guard(token uint64) error {
	if w.c.Mutate.NoFence {
		w.fence = max(w.fence, token)
		return nil
	}
	g := fence.NewGuard()
	if w.fence > 0 {
		if err := g.Check(name, w.fence); err != nil {
			return err
		}
	}
	if err := g.Check(name, token); err != nil {
		return err
	}
	w.fence = g.Highest(name)
	return nil
}

// answer feeds node i the answer to rq (err overrides the store's).
func (w *world) answer(i int, rq request, err error, out *strings.Builder) error {
	var ev election.Event
	if rq.swap {
		r := election.SwapReply{Name: name, Err: err}
		if err == nil {
			r.Record = rq.rec
		}
		ev = r
	} else {
		r := election.GetReply{Name: name, Err: err}
		if err == nil {
			r.Record = rq.rec
		}
		ev = r
	}
	if err != nil {
		w.say(out, "node-%d: told %s", i, errText(err))
	} else {
		w.say(out, "node-%d: told %s", i, recText(rq.rec))
	}
	return w.step(i, ev, out)
}

// check is the invariant that holds in every state: no two valid terms of
// the name at one true instant.
func (w *world) check() error {
	if w.c.Group != nil {
		return w.checkGroup()
	}
	if wk := w.c.Work; wk != nil && wk.ClockStepDown > 0 {
		for i, n := range w.nodes {
			if !w.live(i) {
				continue
			}
			if v := vcluster.StepDown(fmt.Sprintf("node-%d", i), n.m.Token(), n.heldAt, w.now, wk.ClockStepDown+3*wk.Poll, wk.ClockStepDown); v != "" {
				return errors.New(v)
			}
		}
	}
	if err := w.checkPeriods(); err != nil {
		return err
	}
	first := -1
	for i := range w.nodes {
		if !w.valid(i) {
			continue
		}
		if first >= 0 {
			return fmt.Errorf("two valid terms at %v: node-%d's (token %d) and node-%d's (token %d)",
				w.now, first, w.nodes[first].m.Token(), i, w.nodes[i].m.Token())
		}
		first = i
	}
	return nil
}

func errText(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{{store.ErrNotFound, "notfound"}, {store.ErrConflict, "conflict"}, {store.ErrUnavailable, "unavailable"}, {store.ErrInvalid, "invalid"},
		{store.ErrStaleToken, "stale-token"}, {store.ErrSuspended, "suspended"}} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return "error: " + oneLine(err.Error())
}

func recText(r store.Record) string {
	holder := r.Holder
	if holder == "" {
		holder = "(free)"
	}
	s := fmt.Sprintf("v%d holder=%s inc=%s token=%d", r.Version, holder, r.Incarnation, r.Token)
	if r.Transfer != "" {
		s += " transfer=" + r.Transfer // a handover (Config.Prefer)
	}
	return s
}

func storeText(w *world, r *request) string {
	op := "get"
	if r.swap {
		op = fmt.Sprintf("swap expect=v%d", r.sw.Expect)
	}
	if r.err != nil {
		return fmt.Sprintf("node-%d's %s: %s", r.node, op, errText(r.err))
	}
	return fmt.Sprintf("node-%d's %s: %s", r.node, op, recText(r.rec))
}

func actionText(w *world, i int, a election.Action) string {
	switch a := a.(type) {
	case election.Get:
		return "get " + a.Name
	case election.Swap:
		r := a.Swap.Record
		holder := r.Holder
		if holder == "" {
			holder = "(free)"
		}
		s := fmt.Sprintf("swap expect=v%d: holder=%s inc=%s token=%d", a.Swap.Expect, holder, r.Incarnation, r.Token)
		if r.Transfer != "" {
			s += " transfer=" + r.Transfer // a handover (Config.Prefer)
		}
		return s
	case election.Elected:
		return fmt.Sprintf("elected token=%d valid until %v (true %v)", a.Token, a.Deadline.Sub(t0), w.trueAt(i, a.Deadline))
	case election.Extended:
		return fmt.Sprintf("extended until %v (true %v)", a.Deadline.Sub(t0), w.trueAt(i, a.Deadline))
	case election.Lost:
		return "lost: " + a.Cause.Error()
	case election.Released:
		if a.Err != nil {
			return "released: " + a.Err.Error()
		}
		return "released"
	case election.Idle:
		return "idle"
	case election.Failed:
		return "failed: " + a.Err.Error()
	}
	return fmt.Sprintf("%T", a)
}

// timer is when node i's election (its machine, or its Group) wants its
// next Tick.
func (w *world) timer(i int) time.Time {
	if g := w.nodes[i].g; g != nil {
		return g.Next()
	}
	return w.nodes[i].m.Next()
}

// operatorSuspend applies an operator's suspension (suspend) or resume
// of the job to the store's job record, as memstore does
// (storedriver.CheckSuspend, Suspend).
func (w *world) operatorSuspend(suspend bool, out *strings.Builder) error {
	s := store.JobSuspend{Name: name, Suspend: suspend, By: "operator"}
	what, did := "resume", "resumed"
	if suspend {
		what, did = "suspend", "suspended"
	}
	if err := storedriver.CheckSuspend(s, w.job, true); err != nil {
		return fmt.Errorf("explore: %s: %w", what, err)
	}
	w.job = storedriver.Suspend(s, w.job, t0.Add(w.now))
	w.say(out, "store: job %s %s by operator", name, did)
	return nil
}
