// Package vcluster is a virtual cluster: a discrete-event simulation in
// which every node runs baton's real election state machine (internal/election,
// the code baton.Elector drives) and the real scheduler decisions
// (schedule.Decide), calls a real store, and writes real rows through the
// real fence into a real SQLite table. Only time is virtual: timers, store
// replies and faults happen at exact instants in a fixed order, so a run is
// exact and repeatable. The drill and the simulator are built on it.
package vcluster

import (
	"container/heap"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// Job is the name of the simulated job and of its election.
const Job = "billing"

// Epoch is where local clocks and the business calendar start.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Config describes one run.
type Config struct {
	Nodes   int
	Lease   time.Duration
	Renew   time.Duration
	Margin  time.Duration // the clock margin e the nodes are configured with
	Poll    time.Duration // contender poll and scheduler pass interval
	Latency time.Duration // one-way store latency unless a fault sets another
	// Day is the virtual time of one business day: the wall clock the
	// scheduler reads runs 24h per Day, so that periods have distinct keys.
	Day time.Duration
	// Fence makes every write carry the term's token: the invoice rows
	// through fence.CheckTx, the ledger writes fenced. A new leader raises
	// the fence before it acts.
	Fence bool
	// Persistent makes the job's Schedule durable: due periods are run by
	// whoever leads. Otherwise a batch is triggered at each instant of
	// Triggers and reaches only the nodes that lead at that moment.
	Persistent bool
	Schedule   schedule.Schedule // wall-clock instants (Persistent)
	Triggers   []time.Duration   // virtual instants (not Persistent)
	// Idempotent makes a batch record its period in the same transaction
	// as its rows, so that a re-run after a lost completion adds nothing.
	Idempotent   bool
	InvoiceLines int
	Store        store.Store
	Resource     *sql.DB // invoices and fence tables (see CreateResource)
	Faults       []Fault
	End          time.Duration
	// Check verifies the invariants after every event and stops at the
	// first violation.
	Check bool
	// CheckMargin is the clock margin the invariants assume (0: Margin).
	// A test that configures the nodes with a smaller margin than the one
	// the protocol needs sets it to the real one.
	CheckMargin time.Duration
	// Trace, when set, gets one line per leadership change, fault, claim
	// and write.
	Trace io.Writer
	// Clock, when set, follows the run's virtual time.
	Clock *Clock
}

// FaultKind is one kind of fault event.
type FaultKind int

// Fault kinds.
const (
	Cut        FaultKind = iota + 1 // the node's store calls fail
	Reconnect                       // they succeed again
	Freeze                          // no code of the node runs (SIGSTOP, a GC pause)
	Thaw                            // it runs again
	ArmFreeze                       // freeze at the next write, after its Valid() check
	Disarm                          // no longer; thaws a node frozen that way
	Crash                           // the process dies
	Restart                         // a new incarnation starts
	SetRate                         // the node's clock runs at Rate
	SetLatency                      // the node's store calls take Latency each way
	Resign                          // the node resigns if it leads
	Transfer                        // an operator transfers the lead to node To
)

var faultNames = map[FaultKind]string{
	Cut: "cut", Reconnect: "reconnect", Freeze: "freeze", Thaw: "thaw", ArmFreeze: "arm-freeze-before-write",
	Disarm: "disarm", Crash: "crash", Restart: "restart", SetRate: "set-rate", SetLatency: "set-latency",
	Resign: "resign", Transfer: "transfer",
}

// String names the fault kind.
func (k FaultKind) String() string { return faultNames[k] }

// Fault is one fault event.
type Fault struct {
	At      time.Duration
	Node    int
	Kind    FaultKind
	Rate    float64       // SetRate
	Latency time.Duration // SetLatency
	To      int           // Transfer
}

// Election is one term won.
type Election struct {
	At    time.Duration
	Node  int
	Token uint64
}

// Outcome is what a run measured.
type Outcome struct {
	Elections    []Election
	Landings     map[string]int           // period key -> batches whose rows landed
	FirstLanding map[string]time.Duration // period key -> when rows first landed
	Rejected     int                      // writes refused by a fence
	// Leaderless and TwoLeaders are the virtual time with no valid running
	// leader and with two or more, from Day on; the day sets say which days
	// had any of it.
	Leaderless, TwoLeaders        time.Duration
	LeaderlessDays, TwoLeaderDays map[int]bool
	Events, Checks                int
	FaultsInjected                map[FaultKind]int
	// Violation is the first invariant that failed (Check only).
	Violation error
}

// CreateResource creates the invoices and fence tables in db, an SQLite
// database.
func CreateResource(ctx context.Context, db *sql.DB) error {
	if err := fence.CreateTable(ctx, db, fence.SQLite); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `
		CREATE TABLE IF NOT EXISTS invoices (period TEXT NOT NULL, line INTEGER NOT NULL, token INTEGER NOT NULL, node TEXT NOT NULL);
		CREATE TABLE IF NOT EXISTS batches (period TEXT PRIMARY KEY, token INTEGER NOT NULL)`)
	return err
}

// Wall maps virtual time to the business wall clock (24h per Day).
func (c Config) Wall(t time.Duration) time.Time {
	days, frac := t/c.Day, t%c.Day
	return Epoch.Add(days*24*time.Hour + time.Duration(float64(frac)/float64(c.Day)*float64(24*time.Hour)))
}

// Virtual inverts Wall, rounding up.
func (c Config) Virtual(w time.Time) time.Duration {
	d := w.Sub(Epoch)
	days, frac := d/(24*time.Hour), d%(24*time.Hour)
	return days*c.Day + time.Duration(math.Ceil(float64(frac)/float64(24*time.Hour)*float64(c.Day)))
}

// MaxRateRatio is the largest ratio of two clock rates for which the
// protocol promises at most one valid leader: (1+d)/(1-d) <= 1 + 2e/lease,
// from the lease + 2e wait.
func (c Config) MaxRateRatio() float64 {
	e := c.CheckMargin
	if e == 0 {
		e = c.Margin
	}
	return 1 + 2*float64(e)/float64(c.Lease)
}

type evKind int

const (
	evFault evKind = iota
	evTrigger
	evNodeTrigger
	evReply
	evTick
	evSched
)

type event struct {
	at   time.Duration
	seq  int
	kind evKind
	node int
	inc  int
	gen  int
	ev   election.Event
	f    Fault
	at2  time.Duration // trigger instant
}

type queue []event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	if fi, fj := q[i].kind == evFault, q[j].kind == evFault; fi != fj {
		return fi // faults take effect first at their instant
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

type node struct {
	idx int
	id  string
	inc int
	m   *election.Machine

	up, frozen, cut, armed bool
	t0, l0                 time.Duration // local clock: l0 + (now-t0)*rate
	rate                   float64
	latency                time.Duration
	tickGen, schedGen      int
	mailbox                []event

	term     uint64
	deadline time.Time
	fenced   uint64
	inbox    []time.Duration // momentary triggers not yet claimed

	claimed       *store.Run
	landed        bool
	pendingWrite  bool // frozen between Valid() and the write
	frozenByWrite bool
	replan        bool // a run just completed
}

func (n *node) local(now time.Duration) time.Time {
	return Epoch.Add(n.l0 + time.Duration(float64(now-n.t0)*n.rate))
}

func (n *node) realAt(l time.Time) time.Duration {
	return n.t0 + time.Duration(math.Ceil(float64(l.Sub(Epoch)-n.l0)/n.rate))
}

type engine struct {
	c     Config
	ctx   context.Context
	now   time.Duration
	q     queue
	seq   int
	nodes []*node
	out   Outcome
	err   error

	leaders int
	lastAt  time.Duration

	// invariant state
	lastLogSeq     uint64
	lastLogToken   uint64
	acceptedTokens uint64 // highest token of an accepted fenced write
	completions    map[string]int
	driftBeyond    bool
}

// Run runs c until c.End and returns what it measured. err is an
// infrastructure failure (a store or database error that is not part of a
// fault), not an invariant violation.
func Run(ctx context.Context, c Config) (Outcome, error) {
	if c.Nodes < 1 || c.Day <= 0 || c.Lease <= 0 || c.Renew <= 0 || c.Poll <= 0 || c.Store == nil || c.Resource == nil {
		return Outcome{}, errors.New("vcluster: incomplete config")
	}
	e := &engine{c: c, ctx: ctx, completions: map[string]int{}}
	e.out = Outcome{
		Landings: map[string]int{}, FirstLanding: map[string]time.Duration{},
		LeaderlessDays: map[int]bool{}, TwoLeaderDays: map[int]bool{}, FaultsInjected: map[FaultKind]int{},
	}
	if _, err := c.Store.EnsureJob(ctx, store.Job{Name: Job, Schedule: "virtual"}); err != nil {
		return e.out, err
	}
	for i := 0; i < c.Nodes; i++ {
		n := &node{idx: i, id: fmt.Sprintf("node-%d", i), up: true, rate: 1, latency: c.Latency}
		e.newMachine(n)
		e.nodes = append(e.nodes, n)
	}
	for _, f := range c.Faults {
		e.push(event{at: f.At, kind: evFault, f: f})
	}
	if !c.Persistent {
		for _, t := range c.Triggers {
			e.push(event{at: t, kind: evTrigger, at2: t})
		}
	} else if c.Schedule != nil {
		// Wake the leaders when a period comes due.
		for w := c.Schedule.Next(Epoch); !w.IsZero() && c.Virtual(w) <= c.End; w = c.Schedule.Next(w) {
			e.push(event{at: c.Virtual(w), kind: evTrigger})
		}
	}
	for _, n := range e.nodes {
		e.step(n, election.Start{})
	}
	for e.q.Len() > 0 && e.err == nil && e.out.Violation == nil {
		ev := heap.Pop(&e.q).(event)
		if ev.at > c.End {
			break
		}
		e.now = ev.at
		if c.Clock != nil {
			c.Clock.now.Store(int64(e.now))
		}
		e.out.Events++
		e.dispatch(ev)
		e.observe()
		if c.Check {
			e.check()
		}
		if err := ctx.Err(); err != nil {
			return e.out, err
		}
	}
	if e.err != nil {
		return e.out, e.err
	}
	if e.out.Violation == nil {
		e.now = c.End
		e.account(e.lastAt, c.End, e.leaders)
	}
	return e.out, nil
}

func (e *engine) tracef(format string, a ...any) {
	if e.c.Trace != nil {
		fmt.Fprintf(e.c.Trace, "%10.3fs  %s\n", e.now.Seconds(), fmt.Sprintf(format, a...))
	}
}

func (e *engine) push(ev event) {
	e.seq++
	ev.seq = e.seq
	heap.Push(&e.q, ev)
}

func (e *engine) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *engine) newMachine(n *node) {
	n.inc++
	n.m = election.New(election.Config{
		Name: Job, Node: n.id, Incarnation: fmt.Sprintf("%s.%d", n.id, n.inc),
		Lease: e.c.Lease, Renew: e.c.Renew, Margin: e.c.Margin, Poll: e.c.Poll, Retry: e.c.Poll,
	})
	n.term, n.deadline, n.inbox, n.claimed, n.landed, n.pendingWrite = 0, time.Time{}, nil, nil, false, false
}

// valid is Term.Valid() of n's current term, read on n's own clock.
func (e *engine) valid(n *node) bool {
	return n.up && !n.frozen && n.term != 0 && n.local(e.now).Before(n.deadline)
}

func (e *engine) reachable(n *node) error {
	if n.cut {
		return fmt.Errorf("%w: %s is cut off (injected fault)", store.ErrUnavailable, n.id)
	}
	return nil
}

func (e *engine) step(n *node, ev election.Event) {
	lost := false
	for _, a := range n.m.Step(n.local(e.now), ev) {
		switch a := a.(type) {
		case election.Get:
			var r election.GetReply
			if r.Err = e.reachable(n); r.Err == nil {
				r.Record, r.Err = e.c.Store.Get(e.ctx, a.Name)
			}
			e.push(event{at: e.now + n.latency, kind: evReply, node: n.idx, inc: n.inc, ev: r})
		case election.Swap:
			var r election.SwapReply
			if r.Err = e.reachable(n); r.Err == nil {
				r.Record, r.Err = e.c.Store.Swap(e.ctx, a.Swap)
			}
			e.push(event{at: e.now + n.latency, kind: evReply, node: n.idx, inc: n.inc, ev: r})
		case election.Elected:
			n.term, n.deadline = a.Token, a.Deadline
			e.out.Elections = append(e.out.Elections, Election{e.now, n.idx, a.Token})
			e.tracef("%s elected, token %d, valid until its clock reads +%v", n.id, a.Token, a.Deadline.Sub(n.local(e.now)))
			n.schedGen++
			e.push(event{at: e.now, kind: evSched, node: n.idx, inc: n.inc, gen: n.schedGen})
		case election.Extended:
			n.deadline = a.Deadline
		case election.Lost:
			e.tracef("%s lost token %d: %v", n.id, n.term, a.Cause)
			n.term, n.inbox = 0, nil
			if !n.landed {
				n.claimed = nil // the row stays running for the next leader
			}
			lost = true
		}
	}
	if lost {
		// Like baton.Elector.Run: campaign again once the release is done.
		e.step(n, election.Start{})
		return
	}
	e.armTimer(n)
}

func (e *engine) armTimer(n *node) {
	n.tickGen++
	if next := n.m.Next(); !next.IsZero() {
		e.push(event{at: max(n.realAt(next), e.now), kind: evTick, node: n.idx, inc: n.inc, gen: n.tickGen})
	}
}

func (e *engine) dispatch(ev event) {
	switch ev.kind {
	case evFault:
		e.fault(ev.f)
		return
	case evTrigger:
		e.trigger(ev.at2)
		return
	}
	n := e.nodes[ev.node]
	if ev.inc != n.inc || !n.up {
		return // meant for an incarnation that has crashed
	}
	if n.frozen {
		n.mailbox = append(n.mailbox, ev)
		return
	}
	switch ev.kind {
	case evReply:
		e.step(n, ev.ev)
	case evTick:
		if ev.gen == n.tickGen {
			e.step(n, election.Tick{})
		}
	case evSched:
		if ev.gen == n.schedGen {
			e.schedule(n)
		}
	case evNodeTrigger:
		if e.valid(n) {
			n.inbox = append(n.inbox, ev.at2)
			e.schedule(n)
		}
	}
}

// trigger: with a persistent schedule, a period coming due wakes the
// leaders; a momentary trigger reaches the nodes that lead now, or nobody.
func (e *engine) trigger(at time.Duration) {
	for _, n := range e.nodes {
		if !n.up {
			continue
		}
		if e.c.Persistent {
			if n.term != 0 {
				e.push(event{at: e.now, kind: evSched, node: n.idx, inc: n.inc, gen: n.schedGen})
			}
			continue
		}
		e.dispatch(event{at: e.now, kind: evNodeTrigger, node: n.idx, inc: n.inc, at2: at})
	}
}

func (e *engine) fault(f Fault) {
	n := e.nodes[f.Node]
	e.out.FaultsInjected[f.Kind]++
	e.tracef("fault: %s %v", n.id, f.Kind)
	switch f.Kind {
	case Cut:
		n.cut = true
	case Reconnect:
		n.cut = false
	case Freeze:
		if n.up {
			n.frozen = true
		}
	case Thaw:
		if n.frozen && !n.frozenByWrite {
			e.resume(n)
		}
	case ArmFreeze:
		n.armed = true
	case Disarm:
		n.armed = false
		if n.frozen && n.frozenByWrite {
			e.resume(n)
		}
	case Crash:
		if n.up {
			n.up, n.frozen, n.frozenByWrite, n.mailbox = false, false, false, nil
			n.term, n.inbox, n.claimed, n.landed, n.pendingWrite = 0, nil, nil, false, false
		}
	case Restart:
		if !n.up {
			n.up = true
			e.newMachine(n)
			e.step(n, election.Start{})
		}
	case SetRate:
		n.l0, n.t0, n.rate = n.local(e.now).Sub(Epoch), e.now, f.Rate
		if n.up && !n.frozen {
			e.armTimer(n)
		}
	case SetLatency:
		n.latency = f.Latency
	case Resign:
		if n.up && !n.frozen && n.term != 0 {
			e.step(n, election.Resign{Token: n.term})
		}
	case Transfer:
		if rec, err := e.c.Store.Get(e.ctx, Job); err == nil {
			err := baton.Transfer(e.ctx, e.c.Store, Job, e.nodes[f.To].id, rec.Token)
			e.tracef("operator: transfer to %s at token %d: %v", e.nodes[f.To].id, rec.Token, err)
		}
	}
}

// resume thaws a frozen node. A write it was about to make happens first:
// it passed its Valid() check before it froze. Then everything that
// arrived while it was frozen.
func (e *engine) resume(n *node) {
	n.frozen, n.frozenByWrite = false, false
	if n.pendingWrite {
		n.pendingWrite = false
		e.write(n)
	}
	mail := n.mailbox
	n.mailbox = nil
	for _, ev := range mail {
		if ev.kind == evReply || ev.kind == evNodeTrigger {
			e.dispatch(ev)
		}
	}
	if n.up {
		e.step(n, election.Tick{})
		n.schedGen++
		e.push(event{at: e.now, kind: evSched, node: n.idx, inc: n.inc, gen: n.schedGen})
	}
}

// schedule is one pass of a leader's scheduler.
func (e *engine) schedule(n *node) {
	n.schedGen++
	if !e.valid(n) {
		return
	}
	next := e.now + e.c.Poll
	defer func() {
		if n.replan {
			n.replan, next = false, e.now
		}
		if n.term != 0 && n.up {
			e.push(event{at: next, kind: evSched, node: n.idx, inc: n.inc, gen: n.schedGen})
		}
	}()
	if e.c.Fence && n.fenced < n.term {
		// A new leader fences the old one before it acts.
		switch err := e.raiseFence(n.term); {
		case errors.Is(err, fence.ErrStaleToken):
			e.out.Rejected++
			return
		case err != nil:
			e.fail(err)
			return
		}
		n.fenced = n.term
	}
	if n.claimed != nil {
		if n.landed {
			e.complete(n)
		}
		return
	}
	if !e.c.Persistent && len(n.inbox) > 0 {
		t := n.inbox[0]
		at := e.c.Wall(t)
		run := store.Run{Job: Job, Period: schedule.Key(at), Scheduled: at, State: store.Running,
			Token: n.term, Holder: n.id, Attempt: 1, Started: e.c.Wall(e.now)}
		err := e.reachable(n)
		if err == nil {
			run, err = e.c.Store.SwapRun(e.ctx, store.RunSwap{Run: run, Fenced: e.c.Fence})
		}
		switch {
		case err == nil:
			n.inbox = n.inbox[1:]
			n.claimed = &run
			e.tracef("%s claims %s with token %d (triggered)", n.id, run.Period, n.term)
			e.effect(n)
			return
		case errors.Is(err, store.ErrConflict):
			n.inbox = n.inbox[1:] // it has a row: the planner decides
		case errors.Is(err, fence.ErrStaleToken):
			e.out.Rejected++
			n.inbox = n.inbox[1:]
			return
		default:
			return // unreachable: try again at the next pass while leading
		}
	}
	if e.reachable(n) != nil {
		return
	}
	rows, err := e.c.Store.Runs(e.ctx, Job, "", 0)
	if err != nil {
		return
	}
	in := schedule.Input{Now: e.c.Wall(e.now), Created: Epoch, Token: n.term, Rows: rows}
	if e.c.Persistent {
		in.Schedule = e.c.Schedule
	}
	plan := schedule.Decide(in)
	if !plan.Wake.IsZero() {
		next = min(next, e.c.Virtual(plan.Wake))
	}
	for _, a := range plan.Actions {
		sw := a.Swap(Job, n.term, n.id, e.c.Wall(e.now))
		sw.Fenced = e.c.Fence
		r, err := e.c.Store.SwapRun(e.ctx, sw)
		if errors.Is(err, fence.ErrStaleToken) {
			e.out.Rejected++
		}
		if err != nil {
			return
		}
		if a.Step == schedule.Claim {
			n.claimed = &r
			e.tracef("%s claims %s with token %d (attempt %d)", n.id, r.Period, n.term, r.Attempt)
			e.effect(n)
			return
		}
	}
}

// effect checks Valid() and writes; an armed node freezes in between.
func (e *engine) effect(n *node) {
	if !e.valid(n) {
		n.claimed = nil
		return
	}
	if n.armed {
		n.frozen, n.frozenByWrite, n.pendingWrite = true, true, true
		e.tracef("%s froze after its Valid() check, before writing %s", n.id, n.claimed.Period)
		return
	}
	e.write(n)
}

// write is the batch: the period's invoice lines in one transaction,
// through the fence when fencing, then the ledger completion.
func (e *engine) write(n *node) {
	run := n.claimed
	if run == nil {
		return
	}
	landed, err := e.writeLines(run.Period, n.id, run.Token)
	switch {
	case errors.Is(err, fence.ErrStaleToken):
		e.out.Rejected++
		e.tracef("%s write of %s with token %d rejected by the fence", n.id, run.Period, run.Token)
		n.claimed = nil
		return
	case err != nil:
		e.fail(err)
		return
	}
	if landed {
		e.out.Landings[run.Period]++
		if _, ok := e.out.FirstLanding[run.Period]; !ok {
			e.out.FirstLanding[run.Period] = e.now
		}
		if e.c.Check && run.Token < e.acceptedTokens {
			e.violate("write of %s with token %d landed after one with token %d", run.Period, run.Token, e.acceptedTokens)
		}
		e.acceptedTokens = max(e.acceptedTokens, run.Token)
		e.tracef("%s wrote %d lines of %s with token %d", n.id, e.c.InvoiceLines, run.Period, run.Token)
	}
	n.landed = true
	e.complete(n)
}

func (e *engine) complete(n *node) {
	sw := schedule.Complete(*n.claimed, 0, "", nil, e.c.Wall(e.now))
	sw.Fenced = e.c.Fence
	err := e.reachable(n)
	if err == nil {
		_, err = e.c.Store.SwapRun(e.ctx, sw)
	}
	switch {
	case err == nil:
		e.completions[sw.Run.Period]++
		n.claimed, n.landed = nil, false
		n.replan = true // plan again at once: more periods may be due
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrInvalid):
		n.claimed, n.landed = nil, false // finished by another attempt
	case errors.Is(err, fence.ErrStaleToken):
		e.out.Rejected++
		n.claimed, n.landed = nil, false
	}
	// Unavailable: the next pass retries the completion, not the batch.
}

func (e *engine) raiseFence(token uint64) error {
	tx, err := e.c.Resource.BeginTx(e.ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fence.CheckTx(e.ctx, tx, fence.SQLite, Job, token); err != nil {
		return err
	}
	return tx.Commit()
}

// writeLines writes one batch. It reports false when the period's batch
// had already landed (Idempotent) and nothing was added.
func (e *engine) writeLines(period, node string, token uint64) (bool, error) {
	tx, err := e.c.Resource.BeginTx(e.ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	landed, err := WriteBatch(e.ctx, tx, Batch{Period: period, Node: node, Token: token,
		Lines: e.c.InvoiceLines, Fence: e.c.Fence, Idempotent: e.c.Idempotent})
	if err != nil {
		return false, err
	}
	return landed, tx.Commit()
}

// Batch is one batch of invoice lines, as WriteBatch writes it.
type Batch struct {
	Period string
	Node   string
	Token  uint64
	Lines  int
	// Fence checks Token with fence.CheckTx first.
	Fence bool
	// Idempotent records the period in the batches table first and adds
	// nothing if it was already there.
	Idempotent bool
}

// WriteBatch writes b's invoice lines in tx, a transaction on a database
// made by CreateResource, without committing it. It reports false when the
// period's batch had already landed (Idempotent) and nothing was added; a
// stale token is an error wrapping fence.ErrStaleToken.
func WriteBatch(ctx context.Context, tx *sql.Tx, b Batch) (bool, error) {
	if b.Fence {
		if err := fence.CheckTx(ctx, tx, fence.SQLite, Job, b.Token); err != nil {
			return false, err
		}
	}
	if b.Idempotent {
		res, err := tx.ExecContext(ctx, `INSERT INTO batches (period, token) VALUES (?, ?) ON CONFLICT (period) DO NOTHING`, b.Period, int64(b.Token))
		if err != nil {
			return false, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return false, nil
		}
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO invoices (period, line, token, node) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return false, err
	}
	defer stmt.Close()
	for line := 1; line <= b.Lines; line++ {
		if _, err := stmt.ExecContext(ctx, b.Period, line, int64(b.Token), b.Node); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (e *engine) account(from, to time.Duration, count int) {
	lo, hi := max(from, e.c.Day), to
	if hi <= lo || count == 1 {
		return
	}
	for d := int(lo / e.c.Day); time.Duration(d)*e.c.Day < hi; d++ {
		if count == 0 {
			e.out.LeaderlessDays[d] = true
		} else {
			e.out.TwoLeaderDays[d] = true
		}
	}
	if count == 0 {
		e.out.Leaderless += hi - lo
	} else {
		e.out.TwoLeaders += hi - lo
	}
}

func (e *engine) observe() {
	count := 0
	for _, n := range e.nodes {
		if e.valid(n) {
			count++
		}
	}
	if count != e.leaders {
		e.account(e.lastAt, e.now, e.leaders)
		e.leaders, e.lastAt = count, e.now
	}
}

// Clock gives a store the run's virtual time as business wall time, for the
// informational store times (Record.Updated, Event.Time). Create it with
// NewClock, pass its Now to the store and the Clock to Config.Clock.
type Clock struct {
	now atomic.Int64
	day time.Duration
}

// NewClock returns a clock for runs whose Config.Day is day.
func NewClock(day time.Duration) *Clock { return &Clock{day: day} }

// Now returns the current virtual time as business wall time.
func (c *Clock) Now() time.Time {
	return Config{Day: c.day}.Wall(time.Duration(c.now.Load()))
}
