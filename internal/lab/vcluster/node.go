package vcluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// node is one process of the virtual cluster: the runtime around its
// election machine (this file) and its scheduler machine (work.go).
type node struct {
	idx      int
	id       string
	inc      int
	sessions bool            // holds its names through a session (baton.Group), else on their own records (baton.Elector)
	g        *election.Group // the election of every name the node holds
	sm       *scheduler.Machine

	up, frozen, cut, armed bool
	feedDown               bool          // its change feed is broken (FeedBreak): notifications are lost
	t0, l0                 time.Duration // local clock: l0 + (now-t0)*rate
	rate                   float64
	localOK                bool          // localAt is the local clock at localNow (local's last reading) ...
	localNow               time.Duration // ... until t0, l0 or rate change
	localAt                time.Time
	latency                time.Duration
	tickGen, workGen       int
	tickQueued             bool                 // a tick of tickGen is in the queue ...
	tickAt                 time.Duration        // ... for this instant
	tickNext               time.Time            // ... set for the group's Next (zero: the clock changed since)
	termGen                int                  // tags the scheduler machine's replies with their term
	starts                 int                  // Starts stepped into the scheduler machine: tags an effect with the machine term it belongs to
	busyTok                uint64               // the token of the node's last run that the machine saw end, in that term ...
	busyFrom, busyTo       time.Time            // ... and when it started and ended (the overlap check)
	effID                  int                  // the node's last effect that takes time
	effStopped             []int                // effects stopped (StopEffect) whose own end is still to come
	ownRecords             map[string]store.Run // outcomes its supervisor recorded (Config.SupervisorRecords), by period
	effStart               time.Duration        // when effID started
	effFroze               bool                 // the node was frozen while it ran (no timeout check)
	effRun                 scheduler.StartEffect
	running                store.Run // the row of the effect its machine last started (StartEffect)
	mailbox                []event
	cutErr, lostErr        error         // the errors of a call while cut off, and of an answer lost so
	changes                *batch        // the change notifications queued for it, while more may join
	notesAt                time.Duration // when its last change notification arrives (they keep the writes' order)
	coll                   *collection   // its pass of collection under way (Config.Collect)

	// The term of Job, which the scheduler machine works under.
	term     uint64
	deadline time.Time
	expiryAt time.Duration // when the term runs out by Valid on its clock (expiry) ...
	expiryOK bool          // ... until deadline or the clock changes
	fenced   uint64
	// held[i] is the term of Config.Names' i-th other name (index 0, Job's,
	// is term and deadline above).
	held []holding

	armedBeforeCheck bool
	armedInFlight    bool
	armedLocked      bool                   // ArmFreezeLocked: freeze holding the store's write lock at the next effect ...
	lockHold         time.Duration          // ... for this long ...
	lockRecordAfter  time.Duration          // ... and a waiting supervisor's record lands this long after the thaw
	pending          *scheduler.StartEffect // frozen before the effect
	pendingChecked   bool                   // after its Valid() check
	frozenByEffect   bool

	// The wall-clock guard (Config.ClockTolerance): the node's wall clock
	// is wallOff off the true time (StepClock); its last clock check was
	// answered while it was checkedOff off; heldAt is when its machine
	// said the guard holds it off (-1: it does not), restarted at a thaw;
	// awaiting: it stepped down and campaigns for Job again only once
	// its clock agrees (schedule.AwaitClock).
	wallOff, checkedOff time.Duration
	heldAt              time.Duration
	awaiting            bool
	// A step of the wall clock (StepClock) to stepTo, while stepping,
	// lands on a node in a term at its machine's next clock check (see
	// landStep).
	stepTo   time.Duration
	stepping bool

	// Its candidacy and its preference handovers (prefer.go): when a read
	// last saw it renew its candidacy (-1: never), the generation of its
	// term's candidacy reads, and when its term of Job began on its clock
	// and in true time.
	candAt    time.Duration
	safeTold  bool // what its machine was last told of its safe point (SafePoint)
	runCalls  int  // its ledger writes and read-backs not answered yet (the checker's own count)
	effectOut bool // it started an effect (StartEffect) its machine was not told the end of
	prefGen   int
	prefSince time.Time
	// Its reads of the candidacies as a contender (candRead): their
	// generation, and the last list its machine was told, when (true
	// time) and on its clock.
	candGen     int
	candList    []election.Candidate
	candFed     time.Duration
	candFedAt   time.Time
	candFedSome bool
	prefTermAt  time.Duration
	// The names of its last step that read two or more, in the order its
	// group listed them, and sorted (sortReads).
	readsIn, readsOut []string
}

// holding is a term of a name without work: its token (0: none) and its
// deadline on the node's clock, as Elected and Extended announced them.
type holding struct {
	token    uint64
	deadline time.Time
}

// termOf returns n's term of the i-th name (0: Job).
func (n *node) termOf(i int) holding {
	if i == 0 {
		return holding{n.term, n.deadline}
	}
	return n.held[i]
}

// grant sets n's term of the i-th name from Elected or Extended.
func (e *engine) grant(n *node, i int, h holding) {
	if i == 0 {
		e.setJobTerm(n, h.token)
		n.deadline, n.expiryOK = h.deadline, false
	} else {
		n.held[i] = h
	}
	if e.c.Check && !slices.Contains(e.granted, i) {
		e.granted = append(e.granted, i)
	}
}

// setJobTerm sets n's term of Job (token 0: none), keeping e.termed, the
// nodes with a term, in order of index.
func (e *engine) setJobTerm(n *node, token uint64) {
	e.unobserve() // a term won, lost or extended (grant)
	switch {
	case n.term == 0 && token != 0:
		i, _ := slices.BinarySearchFunc(e.termed, n.idx, func(m *node, idx int) int { return m.idx - idx })
		e.termed = slices.Insert(e.termed, i, n)
	case n.term != 0 && token == 0:
		if i := slices.Index(e.termed, n); i >= 0 {
			e.termed = slices.Delete(e.termed, i, i+1)
		}
	}
	n.term = token
}

func (n *node) local(now time.Duration) time.Time {
	if n.localOK && n.localNow == now {
		return n.localAt // most events read a node's clock more than once
	}
	t := n.clockAt(now)
	n.localNow, n.localAt, n.localOK = now, t, true
	return t
}

// clockAt is n's clock at the real instant now, as local reads it (without
// its cache).
func (n *node) clockAt(now time.Duration) time.Time {
	return epochAdd(n.reading(now))
}

// reading is n's clock at the real instant now as a duration since Epoch
// (clockAt is epochAdd of it).
func (n *node) reading(now time.Duration) time.Duration {
	return n.l0 + time.Duration(float64(now-n.t0)*n.rate)
}

// farAway bounds expiry's search: an instant no run reaches (73 years).
const farAway = time.Duration(1) << 61

// expiry is the first real instant at which n's term of Job is no longer
// valid by election.Valid on its own clock, found once for each deadline
// and each clock (expiryOK is cleared when either changes). A term only
// runs out: Valid is monotone in the clock's reading, and the clock's
// reading (clockAt: float products, rounded and truncated) is monotone in
// the real instant, so valid answers now < expiry, what Valid on local(now)
// answers, without reading the clock at every event.
// TestExpiryIsValid holds the two together.
func (n *node) expiry() time.Duration {
	if n.expiryOK {
		return n.expiryAt
	}
	invalid := func(t time.Duration) bool { return !election.Valid(n.clockAt(t), n.deadline) }
	// The estimate realAt starts from, then out to an invalid instant hi
	// and a valid one lo below it, by doubling steps, then bisected.
	est := math.Ceil(float64(sinceEpoch(n.deadline)-n.l0) / n.rate)
	hi := n.t0 + time.Duration(min(max(est, -float64(farAway)), float64(farAway)))
	hi = min(max(hi, -farAway), farAway)
	for step := time.Duration(1); !invalid(hi); step *= 2 {
		if hi >= farAway {
			break // valid for as long as any run lasts
		}
		hi = min(hi+step, farAway)
	}
	lo := hi - 1
	for step := time.Duration(1); lo > -farAway && invalid(lo); step *= 2 {
		hi, lo = lo, max(lo-step, -farAway)
	}
	for hi-lo > 1 { // valid at lo (or lo is -farAway), invalid at hi (or hi is farAway)
		mid := lo + (hi-lo)/2
		if invalid(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	n.expiryAt, n.expiryOK = hi, true
	return hi
}

// realAt is the earliest real instant at which n's clock reads l or later.
// Float rounding can land a nanosecond short of l on long runs (a day's
// lease, a drifting clock); the step up makes sure a timer set for l finds
// it due, or the node would be ticked at the same instant for ever.
//
// When l is exactly a duration since Epoch (sinceEpochExact), the clock's
// readings are compared to it as durations, without making a Time of
// each: the same comparisons, as clockAt(t) is epochAdd(reading(t)).
func (n *node) realAt(l time.Time) time.Duration {
	dl, exact := sinceEpochExact(l)
	if !exact {
		t := n.t0 + time.Duration(math.Ceil(float64(sinceEpoch(l)-n.l0)/n.rate))
		for step := time.Duration(1); n.clockAt(t).Before(l); step *= 2 {
			t += step
		}
		return t
	}
	t := n.t0 + time.Duration(math.Ceil(float64(dl-n.l0)/n.rate))
	for step := time.Duration(1); n.reading(t) < dl; step *= 2 {
		t += step
	}
	return t
}

// newMachine starts a new incarnation of n.
func (e *engine) newMachine(n *node) {
	n.inc++
	n.g = election.NewGroup(e.electionConfig(n), n.sessions)
	n.sm = scheduler.New(e.work)
	e.setJobTerm(n, 0)
	n.deadline, n.expiryOK, n.pending = time.Time{}, false, nil
	n.held = make([]holding, len(e.names))
	n.tickQueued = false
	n.effStopped = n.effStopped[:0] // the old incarnation's effects end with it
	n.heldAt, n.awaiting = -1, false
	n.coll = nil // the old incarnation's pass ended with it
	n.runCalls, n.effectOut = 0, false
	n.candList, n.candFedSome = nil, false
}

// campaign starts the campaign for every name n does not ignore
// (Config.Ignores), as a new process does.
func (e *engine) campaign(n *node) {
	for i, name := range e.names {
		if i > 0 && n.idx < len(e.c.Ignores) && i < len(e.c.Ignores[n.idx]) && e.c.Ignores[n.idx][i] {
			continue
		}
		// Held until the node stops, as baton.Group.Hold and
		// Elector.Run hold them: the machine campaigns again after each
		// term by itself.
		e.step(n, election.Start{Name: name, Hold: true})
	}
	if e.prefer() {
		e.candStart(n)
	}
}

// feed tells n's Group that its change feed opened (live) or closed, as
// package baton's driver does (election.Feed): with Config.Notify, a node
// holding its names through a session follows every record, so its feed
// is live unless it is cut off from the store (its notifications are then
// lost, and a real feed would close). An Elector's feed reports only its
// names, not the session records its observers read: it never says live.
func (e *engine) feed(n *node, live bool) {
	if !e.c.Notify || !n.sessions || !n.up || (live && (n.cut || n.feedDown)) {
		return
	}
	e.dispatch(&event{at: e.now, kind: evReply, node: int32(n.idx), inc: int32(n.inc), ev: election.Event(election.Feed{Live: live})})
}

// valid is Term.Valid() of n's current term of Job, read on n's own clock.
func (e *engine) valid(n *node) bool {
	return n.up && !n.frozen && n.term != 0 && e.now < n.expiry() // election.Valid(n.local(e.now), n.deadline): see expiry
}

func (e *engine) reachable(n *node) error {
	if n.cut {
		if n.cutErr == nil { // made once: errors are values, and a cut node fails every call
			n.cutErr = fmt.Errorf("%w: %s is cut off (injected fault)", store.ErrUnavailable, n.id)
		}
		return n.cutErr
	}
	return nil
}

// nameIndex returns the index of name in e.names, or -1 for a record that
// is not a name (a session record).
func (e *engine) nameIndex(name string) int {
	if name == Job {
		return 0
	}
	if i, ok := e.nameIdx[name]; ok {
		return i
	}
	return -1
}

// step feeds the election machine one event and executes its actions (see
// steps).
func (e *engine) step(n *node, ev election.Event) {
	one := [1]election.Event{ev}
	e.steps(n, one[:])
}

// steps feeds the election machine a batch of events (the answers of one
// batched store call, or a single event) and executes its actions, as
// package baton's driver does (driver.step): each event is stepped and its
// announcements become the node's terms at once; the store calls of the
// whole batch are sent after it, the reads as one batched read (GetMany)
// and the writes as one batched write (SwapMany) when there are two or
// more of a kind and the store can batch them, else one call each. The
// calls are applied when sent (with CallLatency: when they arrive, the
// node's latency later) and answered after the node's latency, a batch's
// answers together. A name whose term ended is campaigned for again by its
// machine (election.Start.Hold), as in baton.Elector.Run and
// baton.Group.Hold.
func (e *engine) steps(n *node, evs []election.Event) {
	e.stepAll(n, evs, nil, nil)
}

// stepAll is steps for the events evs, then the store answers gr and sr
// (a batch holds one kind), which are stepped typed, never boxed into an
// election.Event (election.Group.StepGet, StepSwap).
func (e *engine) stepAll(n *node, evs []election.Event, gr []election.GetReply, sr []election.SwapReply) {
	// The batch's calls go on e.gets and e.swaps past what is there: a
	// step within (a Lost whose endWork steps the group again) sends its
	// own and takes them off again before this one goes on.
	g0, s0 := len(e.gets), len(e.swaps)
	now := n.local(e.now) // the node's clock, which no step moves
	for _, ev := range evs {
		e.step1(n, now, ev)
	}
	for i := range gr {
		sess, alive := e.session(n)
		if acts := n.g.StepGet(now, &gr[i]); len(acts) > 0 || e.c.Trace != nil { // most answers act on nothing
			e.stepped(n, sess, alive, acts)
		}
	}
	for i := range sr {
		sess, alive := e.session(n)
		if acts := n.g.StepSwap(now, &sr[i]); len(acts) > 0 || e.c.Trace != nil {
			e.stepped(n, sess, alive, acts)
		}
	}
	if len(e.gets) > g0 { // most batches send no read, or no write: no call then
		e.sendGets(n, e.gets[g0:], e.get)
		e.gets = e.gets[:g0] // not cleared, as a delivered batch (deliver)
	}
	if len(e.swaps) > s0 {
		e.sendSwaps(n, e.swaps[s0:])
		e.swaps = e.swaps[:s0]
	}
	e.armTimer(n)
}

// step1 steps one event at the node's local time now and executes its
// announcements; it adds its store calls to the batch's (stepAll).
func (e *engine) step1(n *node, now time.Time, ev election.Event) {
	sess, alive := e.session(n)
	if acts := n.g.Step(now, ev); len(acts) > 0 || e.c.Trace != nil { // stepped has nothing to do with none untraced
		e.stepped(n, sess, alive, acts)
	}
}

// session is n's session before a step, for the trace (nothing without
// one).
func (e *engine) session(n *node) (sess string, alive bool) {
	if e.c.Trace != nil {
		sess, alive = n.g.Session()
	}
	return sess, alive
}

// stepped executes the actions acts of a step of n, its session before
// the step sess (alive): see step1.
func (e *engine) stepped(n *node, sess string, alive bool, acts []election.Action) {
	if e.c.Trace != nil {
		e.traceSession(n, sess, alive)
	}
	// The group lists the actions of different names in an order that
	// follows Go's map iteration, which differs from run to run. The
	// driver sends them concurrently, so their order across names means
	// nothing; here it is made canonical (by name, each name's own actions
	// in their order) so that a seed replays event for event. The reads,
	// the writes and the other actions are each sorted on their own: that
	// orders each kind as a sort of them all would (a stable sort keeps
	// the order of any subset), and the reads and writes are sent only
	// after the batch, whatever came between them. A read is kept as its
	// name (sendGets).
	if len(acts) == 1 { // most steps: nothing to sort
		switch a := acts[0].(type) {
		case election.Get:
			e.gets, e.get = append(e.gets, a.Name), acts[0]
		case election.Swap:
			e.swaps = append(e.swaps, acts[0])
		case election.List:
			e.sendCall(n, a)
		default:
			e.announce(n, acts[0])
		}
		return
	}
	g0, s0 := len(e.gets), len(e.swaps)
	var buf [4]election.Action
	others := buf[:0]
	var get election.Action
	for _, act := range acts {
		switch a := act.(type) {
		case election.Get:
			e.gets, get = append(e.gets, a.Name), act
		case election.Swap:
			e.swaps = append(e.swaps, act)
		default:
			others = append(others, act)
		}
	}
	switch len(e.gets) - g0 {
	case 0:
	case 1:
		e.get = get
	default:
		n.sortReads(e.gets[g0:])
	}
	if len(e.swaps)-s0 > 1 {
		SortActions(e.swaps[s0:])
	}
	if len(others) > 1 {
		SortActions(others)
	}
	for _, act := range others {
		if a, ok := act.(election.List); ok {
			e.sendCall(n, a)
		} else {
			e.announce(n, act)
		}
	}
}

// traceSession traces a change of n's session in a step, sess (alive)
// before it.
func (e *engine) traceSession(n *node, sess string, alive bool) {
	if s, a := n.g.Session(); s != sess || a != alive {
		switch {
		case a:
			e.tracef("%s holds its names through session %s", n.id, s)
		case alive:
			e.tracef("%s: its session %s ended", n.id, sess)
		}
	}
}

// announce executes an action of n's step that is not a store call: a
// term won, extended or lost, a campaign given up. Kept out of stepped,
// whose loop runs for every action of every step, so that its frame
// stays small.
func (e *engine) announce(n *node, act election.Action) {
	switch a := act.(type) {
	case election.Elected:
		i := e.nameIndex(a.Name)
		if e.c.Check && e.damaged[i] {
			e.violate("%s took over %s, planted with a record it cannot trust to expire (token %d)", n.id, a.Name, a.Token)
		}
		if e.c.Check {
			if top := e.topToken[i]; a.Token <= top {
				e.violate("%s won %s with token %d, not above token %d that a term of it was won with before", n.id, a.Name, a.Token, top)
			}
			if e.topToken == nil {
				e.topToken = map[int]uint64{}
			}
			e.topToken[i] = max(e.topToken[i], a.Token)
		}
		e.grant(n, i, holding{a.Token, a.Deadline})
		if a.Record.Via != "" {
			e.out.Covered.Adopted++
		}
		if i == 0 {
			e.out.Elections = append(e.out.Elections, Election{e.now, n.idx, a.Token})
			if e.tracing() {
				e.tracef("%s elected, token %d, valid until its clock reads +%v", n.id, a.Token, a.Deadline.Sub(n.local(e.now)))
			}
			e.note(n, Happening{Kind: Elected, Token: a.Token})
			if e.prefer() {
				e.preferStart(n)
			}
			n.termGen++
			e.push(event{at: e.now, kind: evTermStart, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.termGen)})
		} else {
			if e.tracing() {
				e.tracef("%s elected for %s, token %d, valid until its clock reads +%v", n.id, a.Name, a.Token, a.Deadline.Sub(n.local(e.now)))
			}
		}
	case election.Extended:
		if a.Name != "" {
			i := e.nameIndex(a.Name)
			h := n.termOf(i)
			h.deadline = a.Deadline
			e.grant(n, i, h)
			break
		}
		// Every term held through the session.
		for i := range e.names {
			if h := n.termOf(i); h.token != 0 {
				h.deadline = a.Deadline
				e.grant(n, i, h)
			}
		}
	case election.Failed:
		e.tracef("%s stopped campaigning for %s: %v", n.id, a.Name, a.Err)
	case election.Lost:
		i := e.nameIndex(a.Name)
		if i == 0 {
			e.tracef("%s lost token %d: %v", n.id, n.term, a.Cause)
			e.note(n, Happening{Kind: Lost, Token: n.term, Cause: a.Cause.Error()})
			if errors.Is(a.Cause, election.ErrHandedOver) {
				e.handedOver(n)
			}
			e.setJobTerm(n, 0)
			e.endWork(n)
		} else {
			if e.tracing() {
				e.tracef("%s lost %s, token %d: %v", n.id, a.Name, n.held[i].token, a.Cause)
			}
			n.held[i] = holding{}
		}
	}
}

// getBatch is a batched read of the names (GetMany), swapBatch a batched
// write (SwapMany): an election store call of two or more records. Their
// answers come back in one *batch, in order.
type (
	getBatch  struct{ names []string }
	swapBatch struct{ swaps []store.Swap }
)

// sendGets sends the reads of one step, the names: one Get for a single
// name (as the driver does; get is the last Get stepped, most often that
// one, already boxed), one GetMany for more. A node holds at most a few
// hundred records (Names is at most 100), fewer than the driver's largest
// batch (1,000), so a batch is never split.
func (e *engine) sendGets(n *node, names []string, get election.Action) {
	if len(names) == 1 {
		if g, ok := get.(election.Get); !ok || g.Name != names[0] {
			get = election.Get{Name: names[0]} // a step within read since
		}
		e.sendCall(n, get)
		return
	}
	b := &e.getBatch
	b.names = names // only read while sent: sendCall copies it to keep it
	e.sendCall(n, b)
	b.names = nil
}

// sendSwaps sends the writes of one step, as sendGets its reads.
func (e *engine) sendSwaps(n *node, swaps []election.Action) {
	if len(swaps) > 1 {
		b := &e.swapBatch
		b.swaps = b.swaps[:0]
		for _, a := range swaps {
			b.swaps = append(b.swaps, a.(election.Swap).Swap)
		}
		e.sendCall(n, b)
		return
	}
	for _, a := range swaps {
		e.sendCall(n, a)
	}
}

// sendCall sends one election store call (a Get, a Swap, a *getBatch or
// a *swapBatch): it fails at once when n is cut off, travels to the store
// with CallLatency, else is applied now. A batch is the engine's scratch:
// it is copied only to wait in the queue, into one reused once applied.
func (e *engine) sendCall(n *node, call any) {
	err := e.reachable(n)
	if err == nil && e.lock.holder >= 0 && writes(call) {
		err = e.lockedOut(n)
	}
	switch {
	case err != nil:
		e.push(event{at: e.now + n.latency, kind: evReply, node: int32(n.idx), inc: int32(n.inc), ev: e.failedCall(call, err)})
	case e.c.CallLatency:
		switch b := call.(type) {
		case *getBatch:
			c := spare(&e.spareGets)
			c.names = append(c.names, b.names...)
			call = c
		case *swapBatch:
			c := spare(&e.spareSwaps)
			c.swaps = append(c.swaps, b.swaps...)
			call = c
		}
		e.push(event{at: e.now + n.latency, kind: evCall, node: int32(n.idx), inc: int32(n.inc), ev: call})
	default:
		e.apply(n, int32(n.inc), call, n.latency)
	}
}

// spare takes a batch kept for reuse (applied) from s, or a new one.
func spare[T any](s *[]*T) *T {
	if k := len(*s); k > 0 {
		c := (*s)[k-1]
		(*s)[k-1] = nil
		*s = (*s)[:k-1]
		return c
	}
	return new(T)
}

// applied keeps a batched call that travelled to the store (CallLatency)
// for reuse by sendCall once the store applied it.
func (e *engine) applied(call any) {
	switch b := call.(type) {
	case *getBatch:
		b.names = b.names[:0] // not cleared, as a delivered batch (deliver)
		e.spareGets = append(e.spareGets, b)
	case *swapBatch:
		b.swaps = b.swaps[:0]
		e.spareSwaps = append(e.spareSwaps, b)
	}
}

// failedCall is the answer to an election store call that failed with err:
// a batch's every answer carries it, as the driver gives every name of a
// batched call that failed the call's error.
func (e *engine) failedCall(call any, err error) *batch {
	b := e.newBatch()
	switch a := call.(type) {
	case election.Get:
		b.gets = append(b.gets, election.GetReply{Name: a.Name, Err: err})
	case election.Swap:
		b.swaps = append(b.swaps, election.SwapReply{Name: a.Swap.Record.Name, Err: err})
	case election.List:
		b.evs = append(b.evs, election.ListReply{Session: a.Session, Err: err})
	case *getBatch:
		for _, name := range a.names {
			b.gets = append(b.gets, election.GetReply{Name: name, Err: err})
		}
	case *swapBatch:
		for _, sw := range a.swaps {
			b.swaps = append(b.swaps, election.SwapReply{Name: sw.Record.Name, Err: err})
		}
	}
	return b
}

// lostAnswer turns the answer of a call that reached the store into the
// error of a node cut off before the answer came back (CallLatency): the
// call's outcome is unknown to it.
func (e *engine) lostAnswer(n *node, ev election.Event) election.Event {
	switch r := ev.(type) {
	case election.GetReply:
		return e.lostGet(n, r)
	case election.SwapReply:
		return e.lostSwap(n, r)
	case election.ListReply:
		return election.ListReply{Session: r.Session, Err: lostErr(n)}
	case election.Feed:
		return r // the runtime's own news, not the store's
	}
	return nil // a change notification: the feed is broken
}

// lostGet is lostAnswer for the answer to a read.
func (e *engine) lostGet(n *node, r election.GetReply) election.GetReply {
	return election.GetReply{Name: r.Name, Err: lostErr(n)}
}

// lostSwap is lostAnswer for the answer to a write.
func (e *engine) lostSwap(n *node, r election.SwapReply) election.SwapReply {
	if e.tracing() {
		e.tracef("%s is cut off: the answer to its swap of %s is lost (the swap %s)", n.id, r.Name, map[bool]string{true: "went through", false: "failed"}[r.Err == nil])
	}
	return election.SwapReply{Name: r.Name, Err: lostErr(n)}
}

// lostErr is the error of the answers n lost being cut off.
func lostErr(n *node) error {
	if n.lostErr == nil { // made once, as cutErr
		n.lostErr = fmt.Errorf("%w: %s was cut off before the answer came (injected fault)", store.ErrUnavailable, n.id)
	}
	return n.lostErr
}

// apply executes a store call of n's election machine (incarnation inc)
// now, whatever became of n since it sent it, and sends the answer back
// after latency: a batch's answers in one event.
func (e *engine) apply(n *node, inc int32, call any, latency time.Duration) {
	b := e.newBatch()
	switch a := call.(type) {
	case election.Get:
		b.gets = slices.Grow(b.gets, 1)[:len(b.gets)+1]
		r := &b.gets[len(b.gets)-1] // written in place, field by field: a record is large to copy twice
		r.Name = a.Name
		r.Record, r.Err = e.c.Store.Get(e.ctx, a.Name)
		if e.c.Forge { // forge's first test, without a call when off
			e.forge(n, inc, r, e.now+latency/2)
		}
	case election.Swap:
		b.swaps = slices.Grow(b.swaps, 1)[:len(b.swaps)+1]
		r := &b.swaps[len(b.swaps)-1] // written in place, as a read's
		r.Name = a.Swap.Record.Name
		r.Record, r.Err = e.c.Store.Swap(e.ctx, a.Swap)
		e.swapped(n, &a.Swap, r)
	case election.List:
		r := election.ListReply{Session: a.Session}
		if h, ok := store.SucceederOf(e.c.Store); ok {
			r.Records, r.Err = h.HeldThrough(e.ctx, a.Session, a.After, election.ListPage)
		} else {
			r.Err = fmt.Errorf("%w: the store keeps no successions", store.ErrInvalid)
		}
		b.evs = append(b.evs, r)
	case *getBatch:
		k := len(b.gets)
		b.gets = slices.Grow(b.gets, len(a.names))[:k+len(a.names)]
		err := e.getMany(b.gets[k:], a.names) // each record written in place: it is large to copy twice
		for i, name := range a.names {
			r := &b.gets[k+i]
			r.Name = name
			if err != nil {
				r.Record, r.Err = store.Record{}, err
			}
			if e.c.Forge {
				e.forge(n, inc, r, e.now+latency/2)
			}
		}
	case *swapBatch:
		res, err := e.swapMany(a.swaps)
		k := len(b.swaps)
		b.swaps = slices.Grow(b.swaps, len(a.swaps))[:k+len(a.swaps)]
		for i := range a.swaps {
			sw := &a.swaps[i]
			r := &b.swaps[k+i] // written in place, field by field
			r.Name = sw.Record.Name
			if err == nil {
				r.Record, r.Err = res[i].Record, res[i].Err
			} else {
				r.Record, r.Err = store.Record{}, err
			}
			e.swapped(n, sw, r)
		}
	}
	e.push(event{at: e.now + latency, kind: evReply, node: int32(n.idx), inc: inc, ev: b})
}

// getManyInto is a store that writes each answer of a batched read where
// the caller says (memstore.Store.GetManyInto).
type getManyInto interface {
	GetManyInto(ctx context.Context, names []string, at func(i int) (*store.Record, *error)) error
}

// getMany is the store's GetMany of names, its answers' records and
// errors written into dst (one a name; the names are the caller's to set),
// in place when the store can (GetManyInto), else copied from its
// results. On the call's error, dst is to be dropped.
func (e *engine) getMany(dst []election.GetReply, names []string) error {
	s, ok := e.c.Store.(getManyInto)
	if !ok {
		res, err := e.c.Store.GetMany(e.ctx, names)
		if err == nil {
			for i := range names {
				dst[i].Record, dst[i].Err = res[i].Record, res[i].Err
			}
		}
		return err
	}
	if e.placeAt == nil {
		e.placeAt = e.place // a method value, made once
	}
	e.into = dst
	err := s.GetManyInto(e.ctx, names, e.placeAt)
	e.into = nil
	return err
}

// place is where GetManyInto writes the i-th answer of the batched read
// under way (getMany): in e.into.
func (e *engine) place(i int) (*store.Record, *error) {
	r := &e.into[i]
	return &r.Record, &r.Err
}

// swapManyAppender is a store that writes a batch and appends its results
// to a slice of the caller's (memstore.Store.SwapManyAppend).
type swapManyAppender interface {
	SwapManyAppend(ctx context.Context, dst []store.SwapResult, swaps []store.Swap) ([]store.SwapResult, error)
}

// swapMany is the store's SwapMany, into the engine's scratch slice when
// the store can (apply copies the results out before the next write), as
// getMany.
func (e *engine) swapMany(swaps []store.Swap) ([]store.SwapResult, error) {
	s, ok := e.c.Store.(swapManyAppender)
	if !ok {
		return e.c.Store.SwapMany(e.ctx, swaps)
	}
	res, err := s.SwapManyAppend(e.ctx, e.wrote[:0], swaps)
	if err == nil {
		e.wrote = res // grown, for the next write
	}
	return res, err
}

// swapped accounts for a swap the store applied or refused: the name's
// log to check, the change to notify, the checks.
func (e *engine) swapped(n *node, sw *store.Swap, r *election.SwapReply) {
	if r.Err == nil {
		i := e.nameIndex(r.Name)
		if i >= 0 {
			e.dirty(i)
		}
		if r.Name == Job && e.prefer() {
			e.deferred(n, *sw)
			e.jobWrote(r.Record)
		}
		e.notify(r.Name, i >= 0, r.Record.Version)
		if e.c.Forge && store.IsSession(r.Name) {
			e.written(r.Record)
		}
		if store.IsSession(r.Name) && r.Record.Free() && r.Record.Successor != "" {
			e.tracef("%s found session %s dead and passed its names on to %s", n.id, r.Name, r.Record.Successor)
			e.out.Covered.Successions++
			if s, ok := e.c.Store.(interface{ LongestSuccession() int }); ok {
				e.out.Covered.LongestChain = max(e.out.Covered.LongestChain, s.LongestSuccession())
			}
			e.collectSuccession()
			for i := range e.logs {
				e.dirty(i) // History shows the succession's events
			}
		} else if store.IsSession(r.Name) && r.Record.Free() && !strings.Contains(r.Name, "/"+n.id+"/") {
			e.tracef("%s found session %s dead and wrote it free", n.id, r.Name)
		}
		if sw.Event == store.TransferRequested {
			if e.tracing() {
				e.tracef("%s asks %s to hand %s over (balance)", n.id, r.Record.Holder, r.Name)
			}
		}
	}
	if e.c.Check && errors.Is(r.Err, store.ErrInvalid) {
		e.violate("%s: the store refused a swap of %s as invalid: %v", n.id, r.Name, r.Err)
	}
}

// notify sends the change of record name (one of the names, isName, or
// a session record), now at version v, to the nodes that follow it
// (Config.Notify), the writer among them: a store's change feed reports
// every write, a process's own too.
func (e *engine) notify(name string, isName bool, v int64) {
	if !e.c.Notify {
		return
	}
	var ch election.Event = election.Changed{Name: name, Version: v} // boxed once for every node
	for _, m := range e.nodes {
		if !m.up || m.cut || m.feedDown || (!m.sessions && !isName) {
			continue
		}
		// In the order of the writes, as a feed reports them, even
		// after the node's latency fell.
		at := max(e.now+m.latency+e.c.FeedLag, m.notesAt)
		m.notesAt = at
		if c := m.changes; c != nil && c.at == at && c.inc == m.inc {
			// Changes that reach a node at one instant come as one
			// batch, as a feed delivers them ([]store.Change).
			c.evs = append(c.evs, ch)
			c.through = max(c.through, v)
			continue
		}
		c := e.newBatch()
		c.at, c.inc, c.notes, c.evs, c.through = at, m.inc, true, append(c.evs, ch), v
		m.changes = c
		e.push(event{at: at, kind: evReply, node: int32(m.idx), inc: int32(m.inc), ev: c})
	}
}

// forgeMark is the forging client's view of a session record: its
// version, since when the store holds it, whether it is free, and the
// nodes told of it unasked (kicked, by node index).
type forgeMark struct {
	version int64
	since   time.Duration
	free    bool
	kicked  []bool
}

// written records a session record's write for the forging client.
func (e *engine) written(rec store.Record) {
	if e.forged == nil {
		e.forged = map[string]*forgeMark{}
	}
	m, ok := e.forged[rec.Name]
	if !ok {
		i, _ := slices.BinarySearch(e.forgedNames, rec.Name)
		m = &forgeMark{kicked: make([]bool, len(e.nodes))}
		e.forgedNames = slices.Insert(e.forgedNames, i, rec.Name)
		e.forgedMarks = slices.Insert(e.forgedMarks, i, m)
		e.forged[rec.Name] = m
	}
	m.version, m.since, m.free = rec.Version, e.now, rec.Free()
	clear(m.kicked)
}

// stale reports whether session record name, as the store holds it at
// version v, is one the forging client forges for: held, and not written
// for half a lease or more (nobody renews it, or not for now).
func (e *engine) stale(name string, v int64) bool {
	return e.staleMark(e.forged[name], v)
}

// staleMark is stale for the record whose mark is m (nil: none).
func (e *engine) staleMark(m *forgeMark, v int64) bool {
	return m != nil && !m.free && (v == 0 || m.version == v) && e.now-m.since >= e.c.Lease/2
}

// forge plays the forging client (Config.Forge) for n's read r of a record
// (incarnation inc), which the store just answered: a session record
// stale (see stale) gets a notification at a version the store never
// wrote, arriving at, before the answer; and every other stale session
// record n was not told of yet gets one too, unasked, so that n reads it.
// Each notification is a batch of its own that claims nothing of the
// feed (Synced 0), as baton's PostgreSQL feed counts no version a
// notification names.
func (e *engine) forge(n *node, inc int32, r *election.GetReply, at time.Duration) {
	if !e.c.Forge || !e.c.Notify || !n.sessions || n.feedDown || len(e.forged) == 0 {
		return
	}
	if r.Err == nil && store.IsSession(r.Name) && e.stale(r.Name, r.Record.Version) {
		e.forgeNote(n, inc, r.Name, at)
	}
	for j, name := range e.forgedNames {
		if m := e.forgedMarks[j]; !m.kicked[n.idx] && e.staleMark(m, 0) && name != r.Name {
			m.kicked[n.idx] = true
			e.forgeNote(n, inc, name, at)
		}
	}
}

// forgeNote sends n a forged notification of record name, arriving at.
func (e *engine) forgeNote(n *node, inc int32, name string, at time.Duration) {
	e.out.Covered.Forged++
	c := e.newBatch()
	c.at, c.inc, c.notes = at, int(inc), true
	c.evs = append(c.evs, election.Changed{Name: name, Version: math.MaxInt64})
	e.push(event{at: at, kind: evReply, node: int32(n.idx), inc: inc, ev: c})
}

// batch is events on their way to a node in one queued event: the
// answers of a store call (gets or swaps, a batched call's in order), or
// the change notifications (notes, in evs) that reach it at one instant.
// Delivered, it is reused. The answers are kept typed: boxed into an
// election.Event, each would cost an allocation of its whole record.
type batch struct {
	at      time.Duration // notes: when they arrive ...
	inc     int           // ... at which incarnation, while more may join
	notes   bool
	through int64 // notes: the largest version among them
	evs     []election.Event
	gets    []election.GetReply
	swaps   []election.SwapReply
}

// newBatch returns an empty batch, reused if one was delivered.
func (e *engine) newBatch() *batch {
	if k := len(e.spare); k > 0 {
		b := e.spare[k-1]
		e.spare = e.spare[:k-1]
		return b
	}
	return &batch{}
}

// deliver steps n through batch b (or drops it: a cut node's notifications,
// with CallLatency its answers lost) and keeps b for reuse.
func (e *engine) deliver(n *node, b *batch) {
	if b.notes && n.sessions {
		// Every write up to the batch's largest version has reached the
		// node: its Group's feed is in order (Config.OrderedFeed).
		if e.synced == nil || e.syncedOf != b.through {
			e.synced, e.syncedOf = election.Synced{Version: b.through}, b.through // a value, boxed once for the nodes a write reaches
		}
		b.evs = append(b.evs, e.synced)
	}
	switch {
	case !e.c.CallLatency || !n.cut:
		e.stepAll(n, b.evs, b.gets, b.swaps)
	case !b.notes: // a cut node's notifications are lost: the feed is broken
		for i, r := range b.evs {
			b.evs[i] = e.lostAnswer(n, r)
		}
		for i, r := range b.gets {
			b.gets[i] = e.lostGet(n, r)
		}
		for i, r := range b.swaps {
			b.swaps[i] = e.lostSwap(n, r)
		}
		e.stepAll(n, b.evs, b.gets, b.swaps)
	}
	// The answers stay in the arrays, not cleared: each is written whole
	// when the batch is reused, and the engine, one seed's, is dropped
	// whole at its end (a clear of a batch of records cost more than its
	// delivery's other bookkeeping).
	b.at, b.inc, b.notes, b.through = 0, 0, false, 0 // field by field: the whole struct at once would rewrite its slices' pointers
	b.evs, b.gets, b.swaps = b.evs[:0], b.gets[:0], b.swaps[:0]
	e.spare = append(e.spare, b)
}

// SortActions orders a Group's actions canonically: by the name each is
// about, each name's own actions in their order. A Group lists the
// actions of different names in an order that follows Go's map
// iteration; the simulator and the explorer both sort them so, so that a
// run replays event for event and a state hashes the same.
func SortActions(acts []election.Action) {
	if len(acts) < 2 {
		return
	}
	if len(acts) > 16 {
		slices.SortStableFunc(acts, func(a, b election.Action) int { return strings.Compare(actionName(a), actionName(b)) })
		return
	}
	// A step's few actions: each name looked up once, on the stack, with
	// its first eight bytes as a number (nameKey) that orders most names
	// without a string comparison; and most often already in order. An
	// insertion sort that moves an action only past greater names is
	// stable, so it orders them as the stable sort above does.
	var buf [16]string
	var kbuf [16]uint64
	names, keys := buf[:len(acts)], kbuf[:len(acts)]
	names[0] = actionName(acts[0])
	keys[0] = nameKey(names[0])
	sorted := true
	for i := 1; i < len(acts); i++ {
		names[i] = actionName(acts[i])
		keys[i] = nameKey(names[i])
		if sorted && nameLess(keys[i], names[i], keys[i-1], names[i-1]) {
			sorted = false
		}
	}
	if sorted {
		return
	}
	for i := 1; i < len(acts); i++ {
		a, n, k := acts[i], names[i], keys[i]
		j := i
		for ; j > 0 && nameLess(k, n, keys[j-1], names[j-1]); j-- {
			acts[j], names[j], keys[j] = acts[j-1], names[j-1], keys[j-1]
		}
		acts[j], names[j], keys[j] = a, n, k
	}
}

// sortReads sorts the names of a step's reads of n (sortNames). A node's
// group lists its polls' names in the same order most times (its timers'
// heap order): the last order it sorted and how are kept, and an order
// seen last time is sorted as then, by copying.
func (n *node) sortReads(names []string) {
	if slices.Equal(names, n.readsIn) {
		copy(names, n.readsOut)
		return
	}
	n.readsIn = append(n.readsIn[:0], names...)
	sortNames(names)
	n.readsOut = append(n.readsOut[:0], names...)
}

// sortNames sorts the names of a step's reads, as SortActions sorts
// their Gets.
func sortNames(names []string) {
	if len(names) < 2 {
		return
	}
	if len(names) > 16 {
		slices.Sort(names)
		return
	}
	var kbuf [16]uint64
	keys := kbuf[:len(names)]
	keys[0] = nameKey(names[0])
	sorted := true
	for i := 1; i < len(names); i++ {
		keys[i] = nameKey(names[i])
		if sorted && nameLess(keys[i], names[i], keys[i-1], names[i-1]) {
			sorted = false
		}
	}
	if sorted {
		return
	}
	for i := 1; i < len(names); i++ {
		n, k := names[i], keys[i]
		j := i
		for ; j > 0 && nameLess(k, n, keys[j-1], names[j-1]); j-- {
			names[j], keys[j] = names[j-1], keys[j-1]
		}
		names[j], keys[j] = n, k
	}
}

// nameKey is the first eight bytes of name as a big-endian number, zeros
// past its end: of two names, the one with the smaller key is the smaller
// string (a name that ends first is a prefix of the other up to there),
// and names with equal keys are compared whole (nameLess).
func nameKey(name string) uint64 {
	if len(name) >= 8 {
		_ = name[7]
		return uint64(name[0])<<56 | uint64(name[1])<<48 | uint64(name[2])<<40 | uint64(name[3])<<32 |
			uint64(name[4])<<24 | uint64(name[5])<<16 | uint64(name[6])<<8 | uint64(name[7])
	}
	var b [8]byte
	copy(b[:], name)
	return binary.BigEndian.Uint64(b[:])
}

// nameLess reports whether name a (its nameKey ka) sorts before name b.
func nameLess(ka uint64, a string, kb uint64, b string) bool {
	return ka < kb || ka == kb && a < b
}

// actionName is the record an action is about ("" for none or every one).
func actionName(a election.Action) string {
	switch a := a.(type) {
	case election.Get:
		return a.Name
	case election.Swap:
		return a.Swap.Record.Name
	case election.Elected:
		return a.Name
	case election.Extended:
		return a.Name
	case election.Lost:
		return a.Name
	case election.Released:
		return a.Name
	case election.Failed:
		return a.Name
	}
	return ""
}

// armTimer sets n's election timer to the group's Next. A tick already
// queued for that instant stands: most steps leave the next timer where it
// was, and a tick queued anew for each would crowd the queue.
func (e *engine) armTimer(n *node) {
	next := n.g.Next()
	if next.IsZero() {
		n.tickGen++
		n.tickQueued = false
		return
	}
	if n.tickQueued && n.tickAt >= e.now && next.Equal(n.tickNext) {
		// The timer the queued tick was set for, on the same clock:
		// tickAt is what realAt would give again (or now, if that is
		// past, and tickAt is now then).
		return
	}
	at := max(n.realAt(next), e.now)
	if n.tickQueued && n.tickAt == at {
		return
	}
	n.tickGen++
	n.tickQueued, n.tickAt, n.tickNext = true, at, next
	e.push(event{at: at, kind: evTick, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.tickGen)})
}
