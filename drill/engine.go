package drill

import (
	"container/heap"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/core"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// The engine is a discrete-event simulation on a virtual clock. Each node
// runs the real election state machine (internal/core, the same code the
// baton.Elector drives) and the real scheduler decisions
// (schedule.Decide); its store calls go to a real store and its batches
// write real rows through the real fence into a real SQLite table. Only
// time is virtual: events happen at exact instants, in a fixed order, so a
// run is exact and repeatable.

const job = "billing"

var startEvent = core.Start{}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // local clocks start here
var wallEpoch = epoch                                   // business day 0 of the schedule

type evKind int

const (
	evFaultBegin evKind = iota
	evFaultEnd
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
	ev   core.Event
	r    int // trigger round
}

type queue []event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	fi, fj := q[i].kind <= evFaultEnd, q[j].kind <= evFaultEnd
	if fi != fj {
		return fi // faults take effect before anything else at that instant
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
	m   *core.Machine

	up, frozen, cut, armed bool
	t0, l0                 time.Duration // local clock: l0 + (now-t0)*rate
	rate                   float64
	tickGen, schedGen      int
	mailbox                []event

	term     uint64
	deadline time.Time
	fenced   uint64 // the highest token this node raised the fence to
	inbox    []int  // momentary triggers (rounds) not yet claimed

	claimed       *store.Run // claimed and not yet completed
	landed        bool       // the claimed run's effect landed; completion pending
	pendingEffect bool       // frozen between Valid() and the write
}

func (n *node) local(now time.Duration) time.Time {
	return epoch.Add(n.l0 + time.Duration(float64(now-n.t0)*n.rate))
}

// realAt returns the virtual real time at which n's clock reads l.
func (n *node) realAt(l time.Time) time.Duration {
	return n.t0 + time.Duration(math.Ceil(float64(l.Sub(epoch)-n.l0)/n.rate))
}

type engine struct {
	p     Params
	col   Column
	st    store.Store
	res   *sql.DB
	ctx   context.Context
	now   time.Duration
	end   time.Duration
	q     queue
	seq   int
	nodes []*node
	sched schedule.Schedule
	err   error

	// measures
	leaders                 int
	lastAt                  time.Duration
	leaderlessR, twoLeaderR map[int]bool
	leaderlessS, twoLeaderS time.Duration
	elections               []election
	landings                map[int]int
	firstLanding            map[int]time.Duration
	rejected                int
	faultStart              time.Duration
}

type election struct {
	at    time.Duration
	node  int
	token uint64
}

// triggers is the drill's schedule: one business day per round; the batch
// of round r is due at the start of day r.
type triggers []time.Time

func (t triggers) Next(after time.Time) time.Time {
	for _, x := range t {
		if x.After(after) {
			return x
		}
	}
	return time.Time{}
}

func (t triggers) String() string { return fmt.Sprintf("%d drill batches", len(t)) }

// wall maps virtual time to the schedule's wall clock: one round is one
// business day, so every batch has its own period key.
func (e *engine) wall(t time.Duration) time.Time {
	days := t / e.p.Round
	frac := t % e.p.Round
	return wallEpoch.Add(days*24*time.Hour + time.Duration(float64(frac)/float64(e.p.Round)*float64(24*time.Hour)))
}

// realOfWall inverts wall.
func (e *engine) realOfWall(w time.Time) time.Duration {
	d := w.Sub(wallEpoch)
	days := d / (24 * time.Hour)
	frac := d % (24 * time.Hour)
	return days*e.p.Round + time.Duration(math.Ceil(float64(frac)/float64(24*time.Hour)*float64(e.p.Round)))
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
	n.m = core.New(core.Config{
		Name: job, Node: n.id, Incarnation: fmt.Sprintf("%s.%d", n.id, n.inc),
		Lease:  time.Duration(e.p.Lease) * e.p.Round,
		Renew:  time.Duration(e.p.Renew) * e.p.Round,
		Margin: e.p.Margin, Poll: e.p.poll(), Retry: e.p.poll(),
	})
	n.term, n.deadline, n.inbox, n.claimed, n.landed, n.pendingEffect = 0, time.Time{}, nil, nil, false, false
}

func (e *engine) valid(n *node) bool {
	return n.up && !n.frozen && n.term != 0 && n.local(e.now).Before(n.deadline)
}

// call runs one store call of n, failing it if n is cut off.
func (e *engine) call(n *node) error {
	if n.cut {
		return fmt.Errorf("%w: %s is cut off (drill fault)", store.ErrUnavailable, n.id)
	}
	return nil
}

func (e *engine) step(n *node, ev core.Event) {
	for _, a := range n.m.Step(n.local(e.now), ev) {
		switch a := a.(type) {
		case core.Get:
			var r core.GetReply
			if r.Err = e.call(n); r.Err == nil {
				r.Record, r.Err = e.st.Get(e.ctx, a.Name)
			}
			e.push(event{at: e.now + e.p.Latency, kind: evReply, node: n.idx, inc: n.inc, ev: r})
		case core.Swap:
			var r core.SwapReply
			if r.Err = e.call(n); r.Err == nil {
				r.Record, r.Err = e.st.Swap(e.ctx, a.Swap)
			}
			e.push(event{at: e.now + e.p.Latency, kind: evReply, node: n.idx, inc: n.inc, ev: r})
		case core.Elected:
			n.term, n.deadline = a.Token, a.Deadline
			e.elections = append(e.elections, election{e.now, n.idx, a.Token})
			e.push(event{at: e.now, kind: evSched, node: n.idx, inc: n.inc, gen: n.schedGen})
		case core.Extended:
			n.deadline = a.Deadline
		case core.Lost:
			n.term, n.inbox = 0, nil
			if !n.landed {
				n.claimed = nil // the row stays running for the next leader
			}
		}
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
	case evFaultBegin, evFaultEnd:
		e.fault(ev.kind == evFaultBegin)
		return
	case evTrigger:
		e.trigger(ev.r)
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
			e.step(n, core.Tick{})
		}
	case evSched:
		if ev.gen == n.schedGen {
			e.schedule(n)
		}
	case evNodeTrigger:
		if e.valid(n) {
			n.inbox = append(n.inbox, ev.r)
			e.schedule(n)
		}
	}
}

// trigger is a batch coming due. With a persistent trigger the schedule in
// the ledger makes it due for whoever leads; otherwise it is a moment: it
// reaches the nodes that believe they lead, now, or never.
func (e *engine) trigger(r int) {
	for _, n := range e.nodes {
		if !n.up {
			continue
		}
		if e.col == FencingTrigger {
			if n.term != 0 {
				e.push(event{at: e.now, kind: evSched, node: n.idx, inc: n.inc, gen: n.schedGen})
			}
			continue
		}
		e.dispatch(event{at: e.now, kind: evNodeTrigger, node: n.idx, inc: n.inc, r: r})
	}
}

func (e *engine) fault(begin bool) {
	n := e.nodes[0]
	switch e.p.Fault {
	case Unreachable:
		n.cut = begin
	case Pause:
		if begin {
			n.frozen = true
		} else {
			e.resume(n)
		}
	case PauseBeforeEffect:
		n.armed = begin
		if !begin && n.frozen {
			e.resume(n)
		}
	case Crash:
		if begin {
			n.up, n.frozen, n.mailbox = false, false, nil
			n.term, n.inbox, n.claimed, n.landed, n.pendingEffect = 0, nil, nil, false, false
		} else {
			n.up = true
			e.newMachine(n)
			e.step(n, core.Start{})
		}
	case Drift:
		n.l0 = n.local(e.now).Sub(epoch)
		n.t0 = e.now
		n.rate = 1
		if begin {
			n.rate = 1 + e.p.DriftRate
		}
		if n.up && !n.frozen {
			e.armTimer(n)
		}
	}
}

// resume thaws a frozen node: a write it was about to make happens first
// (it passed its Valid() check before it froze), then everything that
// arrived while it was frozen.
func (e *engine) resume(n *node) {
	n.frozen = false
	if n.pendingEffect {
		n.pendingEffect = false
		e.write(n)
	}
	mail := n.mailbox
	n.mailbox = nil
	for _, ev := range mail {
		switch ev.kind {
		case evReply, evNodeTrigger:
			e.dispatch(ev)
		}
	}
	e.step(n, core.Tick{})
	n.schedGen++
	e.push(event{at: e.now, kind: evSched, node: n.idx, inc: n.inc, gen: n.schedGen})
}

// schedule is one pass of a leader's scheduler: raise the fence, finish a
// completion that failed, claim a momentary trigger or what the planner
// says is due, and run it.
func (e *engine) schedule(n *node) {
	n.schedGen++
	if !e.valid(n) {
		return
	}
	next := e.now + e.p.poll()
	defer func() {
		if n.term != 0 {
			e.push(event{at: next, kind: evSched, node: n.idx, inc: n.inc, gen: n.schedGen})
		}
	}()
	fenced := e.col != Plain
	if fenced && n.fenced < n.term {
		// A new leader fences the old one before it acts.
		switch err := e.raiseFence(n.term); {
		case errors.Is(err, fence.ErrStaleToken):
			e.rejected++
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
	if e.col != FencingTrigger && len(n.inbox) > 0 {
		r := n.inbox[0]
		at := e.wall(time.Duration(r) * e.p.Round)
		run := store.Run{Job: job, Period: schedule.Key(at), Scheduled: at, State: store.Running,
			Token: n.term, Holder: n.id, Attempt: 1, Started: e.wall(e.now)}
		err := e.call(n)
		if err == nil {
			run, err = e.st.SwapRun(e.ctx, store.RunSwap{Run: run, Fenced: fenced})
		}
		switch {
		case err == nil:
			n.inbox = n.inbox[1:]
			n.claimed = &run
			e.effect(n)
			return
		case errors.Is(err, store.ErrConflict):
			n.inbox = n.inbox[1:] // it has a row: the planner below decides
		case errors.Is(err, fence.ErrStaleToken):
			e.rejected++
			n.inbox = n.inbox[1:]
			return
		default:
			return // unreachable: try again at the next pass while leading
		}
	}
	if err := e.call(n); err != nil {
		return
	}
	rows, err := e.st.Runs(e.ctx, job, "", 0)
	if err != nil {
		return
	}
	in := schedule.Input{Now: e.wall(e.now), Created: wallEpoch, Token: n.term, Rows: rows}
	if e.col == FencingTrigger {
		in.Schedule = e.sched
	}
	plan := schedule.Decide(in)
	if !plan.Wake.IsZero() {
		next = min(next, e.realOfWall(plan.Wake))
	}
	for _, a := range plan.Actions {
		sw := a.Swap(job, n.term, n.id, e.wall(e.now))
		sw.Fenced = fenced
		r, err := e.st.SwapRun(e.ctx, sw)
		if errors.Is(err, fence.ErrStaleToken) {
			e.rejected++
		}
		if err != nil {
			return
		}
		if a.Step == schedule.Claim {
			n.claimed = &r
			e.effect(n)
			return
		}
	}
}

// effect checks Valid() and writes; pause-before-effect freezes the node
// between the two.
func (e *engine) effect(n *node) {
	if !e.valid(n) {
		n.claimed = nil
		return
	}
	if n.armed {
		n.frozen, n.pendingEffect = true, true
		return
	}
	e.write(n)
}

// write is the batch: the seller-day's invoice lines in one transaction,
// through the fence unless the column is plain, then the ledger completion.
func (e *engine) write(n *node) {
	run := n.claimed
	if run == nil {
		return
	}
	day := int(run.Scheduled.Sub(wallEpoch) / (24 * time.Hour))
	err := e.writeLines(day, n.id, run.Token)
	switch {
	case errors.Is(err, fence.ErrStaleToken):
		e.rejected++
		n.claimed = nil
		return
	case err != nil:
		e.fail(err)
		return
	}
	e.landings[day]++
	if _, ok := e.firstLanding[day]; !ok {
		e.firstLanding[day] = e.now
	}
	n.landed = true
	e.complete(n)
}

func (e *engine) complete(n *node) {
	sw := schedule.Complete(*n.claimed, 0, "", nil, e.wall(e.now))
	sw.Fenced = e.col != Plain
	err := e.call(n)
	if err == nil {
		_, err = e.st.SwapRun(e.ctx, sw)
	}
	switch {
	case err == nil, errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrInvalid):
		n.claimed, n.landed = nil, false // done, or finished by another attempt
	case errors.Is(err, fence.ErrStaleToken):
		e.rejected++
		n.claimed, n.landed = nil, false
	}
	// Unavailable: the next pass retries the completion, not the batch.
}

func (e *engine) raiseFence(token uint64) error {
	tx, err := e.res.BeginTx(e.ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fence.CheckTx(e.ctx, tx, fence.SQLite, job, token); err != nil {
		return err
	}
	return tx.Commit()
}

func (e *engine) writeLines(day int, node string, token uint64) error {
	tx, err := e.res.BeginTx(e.ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if e.col != Plain {
		if err := fence.CheckTx(e.ctx, tx, fence.SQLite, job, token); err != nil {
			return err
		}
	}
	stmt, err := tx.PrepareContext(e.ctx, `INSERT INTO invoices (day, line, token, node) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for line := 1; line <= e.p.InvoiceLines; line++ {
		if _, err := stmt.ExecContext(e.ctx, day, line, int64(token), node); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// account adds the stretch [from, to) with count valid running leaders to
// the measures, within rounds 1..Rounds.
func (e *engine) account(from, to time.Duration, count int) {
	lo, hi := max(from, e.p.Round), min(to, e.end)
	if hi <= lo || (count != 0 && count < 2) {
		return
	}
	for r := int(lo / e.p.Round); time.Duration(r)*e.p.Round < hi; r++ {
		if count == 0 {
			e.leaderlessR[r] = true
		} else {
			e.twoLeaderR[r] = true
		}
	}
	if count == 0 {
		e.leaderlessS += hi - lo
	} else {
		e.twoLeaderS += hi - lo
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
