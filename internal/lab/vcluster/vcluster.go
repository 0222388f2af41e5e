// Package vcluster is a virtual cluster: a discrete-event simulation in
// which every node runs baton's real election machine (internal/election:
// an election.Group over the job's name and Config.Names more, held through
// a session as baton.Group holds them or each on its own record as
// baton.Elector does) and the real scheduler machine
// (internal/scheduler, the machine schedule.Runner drives), calls a real
// store, and writes real rows through the real fence. Only time is
// virtual: timers, store replies (after a latency, as over a network) and
// faults happen at exact instants in a fixed order, so a run is exact and
// repeatable. The simulator (package sim) and the in-process drill (package
// drill) are built on it; the process drill runs schedule.Runner itself.
//
// Files: vcluster.go is the engine (event queue and loop), node.go a
// node's runtime for the election machine, work.go its runtime for the
// scheduler machine and the batch it runs, faults.go the fault vocabulary,
// resource.go the invoice resource, calendar.go virtual time as business
// wall time, measure.go what a run measures, check.go the invariants,
// sessioncollector.go the session nodes' collection of dead session records.
//
// The engine decides nothing that the product decides: every rule users
// run is the machines' own, so a seed that passes is evidence about it.
//   - Campaigning again after a term: election.Start.Hold, as
//     baton.Group.Hold and baton.Elector.Run start their names.
//   - Whether a term is valid: election.Valid on the node's own clock, as
//     baton.Term.Valid asks it.
//   - Every bound of a setting: election.Config.Validate and
//     scheduler.Config.Validate, called by Run before anything happens.
//   - The leader's work loop (plan, claim, check Valid, run, record):
//     the scheduler machine, as schedule.Runner drives it; so are the
//     catch-up policy and window, overlap, jitter, retries, retention,
//     the suspension and the run timeout (the machine asks to stop a run,
//     StopEffect; the engine only stops it). A backfill is
//     scheduler.PlanBackfill written by schedule.Trigger, as baton
//     backfill does.
//
// What stays here is the runtime: the virtual clock, the event queue, the
// store calls' latency and faults, and the checks.
package vcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// Job is the name of the simulated job and of its election.
const Job = "billing"

// Config describes one run.
type Config struct {
	Nodes  int
	Lease  time.Duration
	Renew  time.Duration
	Margin time.Duration // the clock margin e the nodes are configured with
	Poll   time.Duration // contender poll, and the scheduler's retry and pass interval
	// WorkPoll, when set, is the scheduler's pass interval instead (its
	// ledger reads for triggers when no period is due sooner).
	WorkPoll time.Duration
	Latency  time.Duration // one-way store latency unless a fault sets another
	// WorkLatency applies the latency to the scheduler machine's store
	// calls too. Without it they are answered at the instant they are
	// made (in a later event), as the drill's tables assume: the lesson's
	// model claims and writes a batch within the instant it comes due.
	WorkLatency bool
	// Day is the virtual time of one business day: the wall clock the
	// scheduler reads runs 24h per Day, so that periods have distinct keys.
	Day time.Duration
	// Fence makes every write carry the term's token: the invoice rows
	// through the fence, the ledger writes fenced. A new leader raises the
	// fence before it acts.
	Fence bool
	// Persistent makes the job's Schedule durable: due periods are run by
	// whoever leads. Otherwise a batch is triggered at each instant of
	// Triggers and reaches only the nodes that lead at that moment.
	Persistent bool
	Schedule   schedule.Schedule // wall-clock instants (Persistent)
	// Policy is the job's catch-up policy (Persistent). With Check and a
	// cap (Policy.Max), every claim and every skip of a scheduled period
	// is checked against it; with a jitter, every first claim of a
	// scheduled period is checked to start no earlier than its instant
	// plus its jitter.
	Policy scheduler.Policy
	// Retention, when on, makes the leaders prune the ledger's done and
	// skipped rows past it (scheduler.Config.Retention; its durations on
	// the business wall clock), PruneBatch rows a batch, a round every
	// PruneEvery of virtual time.
	Retention  scheduler.Retention
	PruneEvery time.Duration
	PruneBatch int
	Triggers   []time.Duration // virtual instants (not Persistent)
	// Idempotent makes a batch record its period in the same transaction
	// as its rows, so that a re-run after a lost completion adds nothing.
	Idempotent bool
	// SupervisorRecords makes the process that ran an effect record its
	// success itself the moment it ends, before the node's machine is
	// told, as baton run's supervisor does: the machine's own completion
	// then conflicts, and must count the row finished by its own attempt
	// as its success (the [no-own-completion] mutation does not). It
	// writes the machine's completion (scheduler.Complete, fenced unless
	// the ledger is not), while the node's process lives, frozen or not.
	SupervisorRecords bool
	// TakeoverGrace is every node's scheduler.Config.TakeoverGrace
	// (virtual time): a new term waits it before it takes over a row
	// still running under an older token.
	TakeoverGrace time.Duration
	InvoiceLines  int
	Store         store.Store
	Resource      Resource // the invoices and the fence (see NewSQLResource)
	Faults        []Fault
	End           time.Duration
	// Check verifies the invariants after every event and stops at the
	// first violation.
	Check bool
	// CheckMargin is the clock margin the invariants assume (0: Margin).
	// A test that configures the nodes with a smaller margin than the one
	// the protocol needs sets it to the real one.
	CheckMargin time.Duration
	// Names is how many names each node campaigns for besides Job:
	// "shard-1" to "shard-<Names>", held like Job but without work. 0: Job
	// only.
	Names int
	// Ignores[n][i] true: node n does not campaign for the i-th name
	// ("shard-i"; index 0, Job, is campaigned for by every node). A name
	// held through a session that ends by succession passes to the
	// successor whether it campaigns for the name or not, and the
	// successor must let it go (election.Group's listing). Index by
	// node; nil or short: every node campaigns for every name.
	Ignores [][]bool
	// Sessions says which nodes hold their names through one session record
	// (as baton.Group does); the others renew each name's own record (as
	// baton.Elector does). Index by node; nil or short: no sessions.
	Sessions []bool
	// Balance makes the nodes that hold their names through a session
	// balanced (election.Config.Balance, baton.WithBalance): they share
	// the names by asking for handovers.
	Balance bool
	// Shares, when not nil, is each balanced node's weight
	// (election.Config.Share), by node index.
	Shares []int
	// TakeStep is election.Config.TakeStep for every node (0: the
	// library's default).
	TakeStep int
	// Succession is election.Config.Succession for every node that holds
	// its names through a session.
	Succession bool
	// CallLatency makes the election machines' store calls travel the
	// node's latency before the store applies them, as WorkLatency does for
	// the scheduler's: a renewal or takeover lands after it was sent, and a
	// read sees the store as it is when the request arrives. Without it
	// they are applied when sent and only the answer travels. With it, a
	// node cut off while a call is out loses the answer: the call may
	// have been applied, and the node cannot know (an unknown outcome).
	CallLatency bool
	// Notify delivers change notifications, as baton's change feed
	// (WatchChanges) does: every write of a record reaches the other nodes
	// that follow it as a Changed event after their latency (a node with
	// sessions follows every record, one without only the names), those
	// that reach a node at one instant as one batch. A node with sessions
	// is told its feed is live (election.Feed) while it is not cut off, as
	// package baton's driver tells its Group: its observers then read a
	// session only when notified and when its wait runs out. The machines
	// poll all the same otherwise; the notifications are hints.
	Notify bool
	// FeedLag delays every change notification by this much more than
	// the node's latency: a feed that falls behind the store, as an etcd
	// watch of a loaded cluster does. Notifications still reach each node
	// in the order of the writes.
	FeedLag time.Duration
	// Forge, with Notify, adds a client of the store that sends change
	// notifications of its own, as anyone connected to a PostgreSQL store
	// may, of each session record held and not written for half a lease
	// or more (a session nobody renews, or not for now), at a version the
	// store never wrote: one to each node with sessions, unasked, with
	// the answer to its next read of any record, and then one during
	// every read of that session record, before its answer arrives. The
	// machines must read again at most until the session's wait ran out
	// (election.Mutations.ReadBeforeExpiry). Sessions renewed more often
	// than that are left alone: notifications during their every read
	// would cost the run a read a round trip and show nothing more.
	Forge bool
	// Collect, when set, makes the nodes that hold their names through a
	// session collect dead session records at its moments (see Collect).
	Collect Collect
	// Mutate turns protections of the scheduler or election machine off,
	// so that a test can show the checker catches it.
	Mutate Mutation
	// Trace, when set, gets one line per leadership change, fault, ledger
	// write and batch.
	Trace io.Writer
	// Clock, when set, follows the run's virtual time.
	Clock *Clock
	// Timeline makes the run record Outcome.Timeline.
	Timeline bool
	// Effect, when set, says how long the effect of a period's attempt
	// takes in virtual time and whether it fails (exit code 1, nothing
	// written), from the period's key and the attempt alone, so that a
	// re-run after a handover takes what the first run took. nil: every
	// effect succeeds at once. A run longer than the period is what the
	// overlap policy and the catch-up of the periods behind it are for.
	Effect func(key string, attempt int) (d time.Duration, fail bool)
	// Plant is written to the store before the nodes start, as records
	// another program or a damaged store left: free records with tokens
	// near the largest, or names held by a node that does not exist with
	// a lease no valid Config writes. A planted record that is held is
	// damaged: the check fails if any node is ever elected for it.
	Plant []store.Record
	// DamagedRows are ledger rows of Job in states no baton writes (none
	// of store.RunStates), as a store that does not check the states it
	// reads hands them out: every ledger read of every node (ReadRuns)
	// gets them beside the store's rows. The check fails if a node ever
	// writes the period of one (claims it again, skips or completes it).
	// A machine that meets one ends its work (scheduler.Fail wrapping
	// store.ErrCorrupt), which is counted (Coverage.DamagedRefused), not
	// an error of the run: the job then runs no period, by design.
	DamagedRows []store.Run
	// ClockTolerance, when positive, turns every node's wall-clock guard
	// on (scheduler.Config.ClockTolerance, business time), against the
	// true time as its reference (a store's clock); StepClock faults set a
	// node's wall clock off. ClockStepDown is the guard's step-down
	// (scheduler.Config.ClockStepDown): the node then resigns Job and
	// campaigns for it again once its clock agrees, as baton run does.
	// With Check, every claim and skip is checked to follow a clock check
	// that found the clock within the tolerance, and a leader held off for
	// ClockStepDown plus three polls to have stepped down.
	ClockTolerance, ClockStepDown time.Duration
	// Prefer, when not election.PreferNone, is every node's preference
	// policy (election.Config.Prefer) and Hysteresis its hysteresis;
	// Attrs[i] is node i's candidacy (election.Config.Self), and
	// Upgraded[i], when Upgraded is set, its candidacy after its first
	// restart, as in a rolling upgrade. The leader of Job reads the
	// candidacies every renew interval and is told its safe point with
	// them (prefer.go). With Check, every preference handover is checked
	// (no run under way, the hysteresis lasted since its term began, after
	// the previous one), and at the end the holder of Job must be a best
	// live candidate.
	Prefer     election.Policy
	Hysteresis time.Duration
	Attrs      []election.Attrs
	Upgraded   []election.Attrs
}

// Mutation is a protection turned off on purpose: the machines' own
// Mutations, and the ledger's fence.
type Mutation struct {
	// UnfencedLedger writes the ledger without the token check
	// (scheduler.Config.Unfenced).
	UnfencedLedger bool
	// TokenFencedRecord makes the supervisors' records (SupervisorRecords)
	// fenced by the term's token also when they saw the effect end inside
	// its term (scheduler.CompleteSeen's inTerm false): a record that lands
	// after a newer term began is refused, and the period runs again.
	TokenFencedRecord bool
	// Election turns off protections of every node's election machine.
	Election election.Mutations
	// Work turns off protections of every node's scheduler machine.
	Work scheduler.Mutations
	// Succession breaks rules of successions in the store (the caller
	// opens Config.Store with memstore.WithSuccessionMutation).
	Succession memstore.SuccessionMutation
}

// electionConfig is node n's election machine configuration, for its
// current incarnation.
func (e *engine) electionConfig(n *node) election.Config {
	m := e.c.Mutate
	var check time.Duration // an Elector's: the poll interval
	if n.sessions {
		check = election.CheckLeases * e.c.Lease // as baton.NewGroup sets it
	}
	return election.Config{
		Node: n.id, Incarnation: fmt.Sprintf("%s.%d", n.id, n.inc),
		Lease: e.c.Lease, Renew: e.c.Renew, Margin: e.c.Margin, Poll: e.c.Poll, Retry: e.c.Poll, Check: check,
		Balance: e.c.Balance && n.sessions, Share: e.share(n), TakeStep: e.c.TakeStep, Succession: e.c.Succession && n.sessions,
		OrderedFeed: e.c.Notify && n.sessions, // its notifications come in order, each batch followed by Synced
		Prefer:      e.c.Prefer, Hysteresis: e.c.Hysteresis, Self: e.attrs(n),
		Mutate: m.Election,
	}
}

// Wall maps virtual time to the business wall clock (24h per Day).
func (c Config) Wall(t time.Duration) time.Time { return Calendar{c.Day}.Wall(t) }

// Virtual inverts Wall, rounding up.
func (c Config) Virtual(w time.Time) time.Duration { return Calendar{c.Day}.Virtual(w) }

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

// work returns the scheduler machine's configuration: durations on the
// business wall clock the machine reads.
func (c Config) work() scheduler.Config {
	cal := Calendar{c.Day}
	cfg := scheduler.Config{
		Job: Job, Poll: cal.Business(c.Poll), Retry: cal.Business(c.Poll),
		Rescan:    min(cal.Business(10*c.Poll), scheduler.MaxInterval), // within the machine's bounds on long leases
		Momentary: !c.Persistent, Unfenced: !c.Fence || c.Mutate.UnfencedLedger, Mutate: c.Mutate.Work,
	}
	if c.WorkPoll > 0 {
		cfg.Poll = cal.Business(c.WorkPoll)
	}
	if c.Persistent && c.Schedule != nil {
		cfg.Schedule, cfg.Policy = c.Schedule, c.Policy
	}
	if c.Retention.On() {
		cfg.Retention, cfg.PruneEvery, cfg.PruneBatch = c.Retention, cal.Business(c.PruneEvery), c.PruneBatch
	}
	cfg.ClockTolerance, cfg.ClockStepDown = c.ClockTolerance, c.ClockStepDown
	cfg.TakeoverGrace = cal.Business(c.TakeoverGrace)
	return cfg
}

const (
	evFault       evKind = iota
	evTrigger            // a batch comes due
	evNodeTrigger        // a momentary trigger reaches a node
	evReply              // a store reply or change notification to the election machine
	evTick               // the election machine's timer
	evTermStart          // a term's work begins
	evWorkReply          // a store reply to the scheduler machine
	evWorkTick           // the scheduler machine's timer
	evWake               // a persistent period came due: look now
	evWorkCall           // a scheduler store call reaches the store
	evCall               // an election store call reaches the store (CallLatency)
	evEffectDone         // an effect that takes time ends (Config.Effect)
	evStepDown           // a leader held off by its clock guard resigns the job (scheduler.StepDown)
	evCollect            // a pass of collection starts on the next node in turn (Config.Collect)
	evCollectCall        // a pass's store call reaches the store (CallLatency)
	evCollected          // its answer reaches the node
	evRecord             // a supervisor's record that waited for the store's write lock reaches it (ArmFreezeLocked)
	evEffectSeen         // a frozen node's machine is told, once it thaws, that its effect ended meanwhile
	evPrefer             // a leader's read of the candidacies reaches the store (Config.Prefer)
	evPreferReply        // its answer reaches the leader
	evCandRead           // a contender's read of the candidacies reaches the store (Config.Prefer)
	evCandReply          // its answer reaches the contender
)

// logState is how far a name's election log was checked.
type logState struct {
	dirty bool // the log may have grown
	seq   uint64
	token uint64
}

type engine struct {
	c     Config
	cal   Calendar
	work  scheduler.Config
	ctx   context.Context // the store's and the resource's calls': Run's, without its cancellation, which Run's loop looks at itself (ctxEvery)
	now   time.Duration
	q     queue
	nodes []*node
	out   Outcome
	err   error
	// forged is the forging client's view of each session record
	// written (Config.Forge).
	forged      map[string]*forgeMark
	forgedNames []string     // forged's keys, sorted (a seed replays event for event)
	forgedMarks []*forgeMark // forged's values, in the order of forgedNames

	leaders int
	lastAt  time.Duration
	// observed: leaders is the count of now, until observedUntil unless a
	// node changes (observe).
	observed      bool
	observedUntil time.Duration
	termed        []*node // the nodes with a term of Job (n.term != 0), in order of index (setJobTerm)

	collectNext int // the node in turn to start a pass of collection

	gets      []string          // the names read by the batches being stepped (stepAll) ...
	get       election.Action   // ... the last lone read stepped (sendGets) ...
	swaps     []election.Action // ... and their writes
	getBatch  getBatch          // sendGets' scratch
	swapBatch swapBatch         // sendSwaps'

	spare   []*batch                            // batches delivered, for reuse
	into    []election.GetReply                 // the answers of the batched read under way (getMany)
	placeAt func(i int) (*store.Record, *error) // e.place, made once
	wrote   []store.SwapResult                  // the scratch of batched writes (swapMany)

	spareRows  [][]store.Run // ledger reads stepped, for reuse (runs)
	spareGets  []*getBatch   // batched calls applied (CallLatency), for reuse
	spareSwaps []*swapBatch  // (applied)

	names   []string       // Job, then the other names
	nameIdx map[string]int // index in names

	// invariant state
	logs           []logState     // per name
	dirtyLogs      int            // how many of logs are dirty
	damaged        []bool         // per name: planted held (Config.Plant), never to be taken
	granted        []int          // names whose terms were won or extended in this event
	topToken       map[int]uint64 // per name, the highest token a term was won with
	acceptedTokens uint64         // highest token of an accepted fenced write
	completions    map[string]int
	rows           map[string]store.Run // per period: its last committed ledger write (retries, backfill)
	driftBeyond    bool
	// inTermEnds, with SupervisorRecords, holds per period the claimed
	// row of the attempt whose effect ended inside its term (the store's
	// election still at its token, the node's deadline not passed): its
	// supervisor records it, so it is never taken over.
	inTermEnds map[string]store.Run
	// toldFinished holds the attempts (period, token, attempt) whose
	// machine was told that their effect ran to its end: such a row is
	// never given back (scheduler.Release).
	toldFinished map[attempt]bool

	lock storeLock // the store's write lock held by a frozen node (ArmFreezeLocked)
	// jobRead is the last answer to a read of the job that found it,
	// jobReadOf: an answer is a value, boxed once for as long as the job
	// stays the same (call).
	jobRead   scheduler.Event
	jobReadOf store.Job
	// synced is the last Synced boxed, of version syncedOf (deliver).
	synced   election.Event
	syncedOf int64
	// wall is the business wall time at wallAt (wallOK: see wallNow).
	wall   time.Time
	wallAt time.Duration
	wallOK bool
	rules  WorkRules // the job's policy as the checker reads it

	lastPref time.Duration // when Job was last handed over to a preferred candidate (-1: never)
	// Job's record as last written, when (jobWritten: since the run
	// began), and each node's clock then: the contender's deferral check
	// (deferred, prefer.go).
	jobRec     store.Record
	jobWritten bool
	jobLocal   []time.Time
}

// ctxEvery is how many events Run steps between two looks at its
// context (each a call through its interface, into a lock or an atomic
// load): a cancelled run still stops within microseconds.
const ctxEvery = 64

// Run runs c until c.End and returns what it measured. err is an
// infrastructure failure (a store or database error that is not part of a
// fault), not an invariant violation.
func Run(ctx context.Context, c Config) (Outcome, error) {
	if c.Nodes < 1 || c.Day <= 0 || c.Lease <= 0 || c.Renew <= 0 || c.Poll <= 0 || c.Store == nil || c.Resource == nil {
		return Outcome{}, errors.New("vcluster: incomplete config")
	}
	e := &engine{c: c, cal: Calendar{c.Day}, work: c.work(), ctx: context.WithoutCancel(ctx), lock: storeLock{holder: -1}, lastPref: -1,
		rules: WorkRules{Job: Job, Schedule: c.Schedule, Policy: c.Policy}}
	// The machines' own bounds, as every runtime applies them: the
	// simulator runs no setting production would refuse.
	if err := e.electionConfig(&node{id: "node-0", inc: 1}).Validate(); err != nil {
		return Outcome{}, fmt.Errorf("vcluster: election: %w", err)
	}
	if err := e.work.Validate(); err != nil {
		return Outcome{}, fmt.Errorf("vcluster: scheduler: %w", err)
	}
	// The faults and the triggers, known before the run, wait in a sorted
	// list beside the heap (preloaded as if pushed first, in this order).
	fixed := make([]event, 0, len(c.Faults)+len(c.Triggers))
	for i, f := range c.Faults {
		fixed = append(fixed, event{at: f.At, kind: evFault, arg: time.Duration(i)})
	}
	if !c.Persistent {
		for _, t := range c.Triggers {
			fixed = append(fixed, event{at: t, kind: evTrigger, arg: t})
		}
	} else if c.Schedule != nil {
		// Wake the leaders when a period comes due.
		for w := c.Schedule.Next(Epoch); !w.IsZero() && c.Virtual(w) <= c.End; w = c.Schedule.Next(w) {
			fixed = append(fixed, event{at: c.Virtual(w), kind: evTrigger})
		}
	}
	// The maps by period are made for the periods the triggers bring, so
	// that they do not grow, and rehash, one period at a time.
	periods := len(fixed) - len(c.Faults)
	e.completions, e.rows = make(map[string]int, periods), make(map[string]store.Run, periods)
	e.inTermEnds, e.toldFinished = map[string]store.Run{}, make(map[attempt]bool, periods)
	e.out = Outcome{
		Landings: make(map[string]int, periods), FirstLanding: make(map[string]time.Duration, periods),
		LeaderlessDays: map[int]bool{}, TwoLeaderDays: map[int]bool{}, FaultsInjected: map[FaultKind]int{},
		HeldAtEnd: map[string]int{}, Finished: make(map[string]store.Run, periods), Backfilled: map[string]time.Duration{},
	}
	if _, err := c.Store.EnsureJob(ctx, store.Job{Name: Job, Schedule: "virtual"}); err != nil {
		return e.out, err
	}
	e.names, e.nameIdx = []string{Job}, map[string]int{Job: 0}
	for i := 1; i <= c.Names; i++ {
		name := fmt.Sprintf("shard-%d", i)
		e.nameIdx[name] = len(e.names)
		e.names = append(e.names, name)
	}
	e.logs = make([]logState, len(e.names))
	e.damaged = make([]bool, len(e.names))
	for _, r := range c.Plant {
		if _, err := c.Store.Swap(ctx, store.Swap{Record: r}); err != nil {
			return e.out, fmt.Errorf("vcluster: planting %s: %w", r.Name, err)
		}
		if i := e.nameIndex(r.Name); i >= 0 {
			e.logs[i].token = r.Token // written without a log event: the log starts there
			e.damaged[i] = !r.Free()
		}
	}
	for i := 0; i < c.Nodes; i++ {
		n := &node{idx: i, id: fmt.Sprintf("node-%d", i), up: true, rate: 1, latency: c.Latency,
			sessions: i < len(c.Sessions) && c.Sessions[i], candAt: -1}
		e.newMachine(n)
		e.nodes = append(e.nodes, n)
	}
	e.q.preload(fixed)
	if c.Collect.Every > 0 {
		e.push(event{at: c.Collect.Every, kind: evCollect, arg: 1})
	}
	for _, n := range e.nodes {
		e.feed(n, true) // a new process watches the store's changes
		e.campaign(n)
	}
	for e.q.len() > 0 && e.err == nil && e.out.Violation == nil {
		ev := e.q.pop()
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
		if e.out.Events%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return e.out, err
			}
		}
	}
	if e.err != nil {
		return e.out, e.err
	}
	if e.out.Violation == nil {
		e.now = c.End
		e.account(e.lastAt, c.End, e.leaders)
		e.out.HeldByNode = make([]int, len(e.nodes))
		for j, n := range e.nodes {
			if !n.up || n.frozen {
				e.out.HeldByNode[j] = -1
			}
		}
		for i, name := range e.names {
			for j, n := range e.nodes {
				if !n.frozen && e.holds(n, i) {
					e.out.HeldAtEnd[name]++
					e.out.HeldByNode[j]++
				}
			}
		}
		if c.Check && e.prefer() {
			e.preferredAtEnd()
		}
	}
	return e.out, nil
}

// tracing reports whether the run is traced (Config.Trace). A call of
// tracef on a hot path is guarded by it: its arguments, boxed for fmt,
// cost allocations even when nothing is written.
func (e *engine) tracing() bool { return e.c.Trace != nil }

func (e *engine) tracef(format string, a ...any) {
	if e.c.Trace != nil {
		fmt.Fprintf(e.c.Trace, "%10.3fs  %s\n", e.now.Seconds(), fmt.Sprintf(format, a...))
	}
}

func (e *engine) push(ev event) { e.q.push(ev) }

func (e *engine) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// dispatch steps one event, read in place (see queue.pop).
func (e *engine) dispatch(ev *event) {
	switch ev.kind {
	case evFault:
		e.fault(e.c.Faults[ev.arg])
		return
	case evTrigger:
		e.trigger(ev.arg)
		return
	case evWorkCall:
		e.arrive(*ev)
		return
	case evCall:
		e.apply(e.nodes[ev.node], ev.inc, ev.ev, e.nodes[ev.node].latency)
		e.applied(ev.ev)
		return
	case evCollect:
		e.collectTick(*ev)
		return
	case evCollectCall:
		e.applyCollect(e.nodes[ev.node], ev.inc, ev.ev)
		return
	case evRecord:
		w := ev.ev.(waitingRecord)
		n := e.nodes[ev.node]
		e.supervisorRecord(n, w.a, w.inTerm)
		if w.tell && n.up && n.inc == w.inc && n.starts == w.gen {
			e.effectSeen(n, effectSucceeded)
		}
		return
	}
	n := e.nodes[ev.node]
	if c, ok := ev.ev.(*batch); ok && n.changes == c {
		n.changes = nil // on its way: later ones make a new batch
	}
	if int(ev.inc) != n.inc || !n.up {
		return // meant for an incarnation that has crashed
	}
	if n.frozen {
		n.mailbox = append(n.mailbox, *ev)
		return
	}
	switch ev.kind {
	case evReply:
		if b, ok := ev.ev.(*batch); ok {
			e.deliver(n, b)
			return
		}
		r := ev.ev.(election.Event)
		if e.c.CallLatency && n.cut {
			if r = e.lostAnswer(n, r); r == nil {
				return
			}
		}
		e.step(n, r)
	case evTick:
		if int(ev.gen) == n.tickGen {
			n.tickQueued = false
			e.step(n, election.Tick{})
		}
	case evTermStart:
		if int(ev.gen) == n.termGen {
			e.startWork(n)
		}
	case evWorkReply:
		switch ev.ev.(type) {
		case scheduler.Swapped, scheduler.ReadBack:
			n.runCalls--
		}
		if int(ev.gen) == n.termGen {
			e.stepWork(n, ev.ev.(scheduler.Event))
			if r, ok := ev.ev.(scheduler.RunsRead); ok {
				e.rowsDone(r.Rows)
			}
		}
	case evCollected:
		e.collectReplied(n, ev.ev.(collectReply))
	case evEffectDone:
		e.effectEnded(n, *ev)
	case evEffectSeen:
		if int(ev.gen) == n.starts {
			d := ev.ev.(scheduler.EffectDone)
			if d.Err == nil && !e.valid(n) {
				// As baton run: woken past its deadline, it stops the
				// command before it hears of its end, and reports the run
				// interrupted; only the supervisor's record counts.
				d = scheduler.EffectDone{ExitCode: 0, Output: "stopped", Err: scheduler.ErrInterrupted}
			}
			e.stepWork(n, d)
		}
	case evStepDown:
		// Not a store answer: a node cut off loses none of it.
		if int(ev.gen) == n.termGen {
			e.step(n, election.Resign{Name: Job})
		}
	case evWorkTick:
		if int(ev.gen) == n.workGen {
			e.stepWork(n, scheduler.Tick{})
		}
	case evWake:
		if int(ev.gen) == n.termGen {
			e.stepWork(n, scheduler.Trigger{})
		}
	case evPrefer:
		e.preferRead(n, ev.gen)
	case evPreferReply:
		e.preferReply(n, *ev)
	case evCandRead:
		e.candRead(n, ev.gen)
	case evCandReply:
		e.candReply(n, *ev)
	case evNodeTrigger:
		if e.valid(n) {
			at := e.c.Wall(ev.arg)
			e.stepWork(n, scheduler.Trigger{Key: schedule.Key(at), Scheduled: at})
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
				e.push(event{at: e.now, kind: evWake, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.termGen)})
			}
			continue
		}
		e.dispatch(&event{at: e.now, kind: evNodeTrigger, node: int32(n.idx), inc: int32(n.inc), arg: at})
	}
}

// share is node n's weight among the balanced nodes (Config.Shares), 0
// (1) without one.
func (e *engine) share(n *node) int {
	if !e.c.Balance || !n.sessions || n.idx >= len(e.c.Shares) {
		return 0
	}
	return e.c.Shares[n.idx]
}
