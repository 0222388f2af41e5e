package explore

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// Rate is a node's clock rate, Num/Den of true time.
type Rate struct{ Num, Den int64 }

// Config is one explored configuration: the cluster, its settings, the
// horizon and the fault budget. Every node campaigns for one name.
type Config struct {
	Name  string
	About string
	Nodes int
	// The election settings every node runs with (election.Config).
	Lease, Renew, Margin, Poll time.Duration
	// Rates are the nodes' clock rates (nil or short: 1). The protocol
	// promises one valid term at a time while the ratio of two rates is
	// at most 1 + 2*Margin/Lease.
	Rates []Rate
	// End is the horizon: time never advances past it.
	End time.Duration
	// The fault budget of a path: crashes (each may restart), pauses
	// (each may resume), store answers failed or lost, and fenced writes
	// begun.
	Crashes, Pauses, Losses, Writes int
	// Faults bounds the crashes, pauses and losses of a path in all.
	Faults int
	// MaxDepth, when positive, stops a path at that many events; the
	// output names the bound when a state was cut there.
	MaxDepth int
	// Settle starts the exploration from the state reached by taking,
	// from the initial state, the first enabled timer, store call or
	// answer until none is left at time 0 (world.settle): every path
	// explored, and every counterexample, begins with those events.
	Settle bool
	// Start, when set, are events taken after the settled start, each
	// of which must be enabled when it comes: a planted start that the
	// shipping machines themselves reach. Every path explored, and every
	// counterexample, begins with them; the exploration is evidence for
	// the paths that do, not a proof for the others.
	Start []Event
	// Plant, when it is held, is the name's record in the store before
	// any node starts (as a hostile simulator seed plants one): held by
	// a node that does not exist, with a lease no valid Config writes.
	// No node may ever write over it (the invariant checked).
	Plant store.Record
	// Released, when not 0, starts the name's record in the store free,
	// released with that token before the nodes start (an earlier
	// holder's resignation or shutdown): any node may take it at once.
	Released uint64
	// Live, when positive, checks liveness (live.go): from every state
	// reached at or before End - Live, some continuation without a
	// fault must reach a state in which a running node holds a valid
	// term. It is the time a takeover takes at most once faults stop,
	// which the configuration's settings must bound; the exploration
	// must complete (MaxDepth 0) and run no Group.
	Live time.Duration
	// Prompt has the store answer every call within the instant it is
	// sent: time does not move on while one is in flight (they are
	// applied and answered in every order, and fail or are lost within
	// the fault budget). It bounds the interleavings to those of a store
	// that is never slow, which a liveness configuration needs to stay
	// small; every other configuration lets answers wait.
	Prompt bool
	// Work, when set, gives every node the scheduler machine of the job
	// named as the election, started when the node wins a term (work.go).
	Work *Work
	// Group, when set, makes every node one election.Group in session
	// mode campaigning for the names it lists (group.go); the store is
	// then memstore itself.
	Group *Sessions
	// Prefer, when set, gives every node's election machine the name's
	// preference policy and each node its candidacy (prefer.go).
	Prefer *Preference
	Mutate Mutation

	// visit, when set (tests), is called with every new state's key and
	// the path that first reached it.
	visit func(k key, path func() []Event)
	// reach, when set (tests), is called with every new state (to, its
	// id), the state it was first reached from (from, its id) and the
	// event between them: a test follows what happened on that path.
	reach func(from, to int32, ev Event, before, after *world)
	// unjudged, when set (tests), leaves the period liveness check out
	// and nothing else (Work.Live): what the other checks see alone.
	unjudged bool
}

// Mutation turns a protection off, as baton sim --mutate does, so that the
// explorer shows it finds the breach.
type Mutation struct {
	Name string
	// NoMargin configures the nodes' machines with no clock margin while
	// the clocks still differ by up to the real one (sim's no-margin).
	NoMargin bool
	// NoFence makes the fence accept every write (sim's no-fence).
	NoFence bool
	// NoValidCheck lets a leader begin a write on its machine's token
	// without asking election.Valid first (sim's no-valid-check: the
	// scheduler machine's check before an effect; here the writer's,
	// as a baton.Term user's code asks Term.Valid()).
	NoValidCheck bool
	// WrapDeadline is the machine's own mutation (election.Mutations):
	// a held record's lease is trusted whatever it is, and lease + 2e
	// wraps (sim's wrap-deadline). Only a configuration with a planted
	// damaged record (Config.Plant) can show it.
	WrapDeadline bool
	// Work is the scheduler machine's own mutation
	// (scheduler.Config.Mutate), as the simulator's of the same name
	// sets it: only a configuration with Config.Work can show it, and
	// only one with what the mutation breaks (workNeeds).
	Work scheduler.Mutations
	// UnfencedLedger writes the ledger without the token check
	// (scheduler.Config.Unfenced, sim's unfenced-ledger).
	UnfencedLedger bool
	// Election is the Group's own mutations (election.Mutations, as the
	// simulator's of the same name set them): only a configuration with
	// Config.Group can show them; the preference's (NoSafePoint,
	// NoHysteresis, NoDefer) only one with Config.Prefer, and NoTakeover
	// only one that checks liveness (Config.Live).
	Election election.Mutations
	// Succession is the store's (memstore.WithSuccessionMutation).
	Succession memstore.SuccessionMutation
	// TokenFencedRecord fences the supervisors' records by the token
	// also when they saw the run end inside its term, as the simulator's
	// runtime does with it (vcluster.Mutations.TokenFencedRecord, sim's
	// token-fenced-record): only a configuration with Work.LateRecords
	// can show it.
	TokenFencedRecord bool
}

// planted reports whether m needs a configuration with a planted
// record: the others need a term to be won, which a planted damaged
// record prevents.
func (m Mutation) planted() bool { return m.WrapDeadline }

func (c *Config) rate(i int) Rate {
	if i < len(c.Rates) {
		return c.Rates[i]
	}
	return Rate{1, 1}
}

// electionConfig is node i's machine configuration for incarnation inc.
func (c *Config) electionConfig(i, inc int) election.Config {
	margin := c.Margin
	if c.Mutate.NoMargin {
		margin = 0
	}
	cfg := election.Config{Name: name, Node: fmt.Sprintf("node-%d", i), Incarnation: fmt.Sprintf("node-%d.%d", i, inc),
		Lease: c.Lease, Renew: c.Renew, Margin: margin, Poll: c.Poll, Retry: c.Poll,
		Mutate: election.Mutations{WrapDeadline: c.Mutate.WrapDeadline, NoTakeover: c.Mutate.Election.NoTakeover}}
	if c.Prefer != nil {
		c.preferConfig(i, &cfg)
	}
	return cfg
}

// Validate checks c against the machine's own bounds.
func (c *Config) Validate() error {
	if c.Nodes < 1 || c.Nodes > 100 {
		return fmt.Errorf("explore: %d nodes: want 1 to 100", c.Nodes)
	}
	for i := 0; i < c.Nodes; i++ {
		if r := c.rate(i); r.Num <= 0 || r.Den <= 0 {
			return fmt.Errorf("explore: node-%d's clock rate %d/%d: want positive", i, r.Num, r.Den)
		}
	}
	if err := c.electionConfig(0, 1).Validate(); err != nil {
		return err
	}
	if c.Planted() && c.Released > 0 {
		return fmt.Errorf("explore: a record both planted and released: want one of Plant, Released")
	}
	if c.Live < 0 || (c.Live > 0 && (c.Live >= c.End || c.MaxDepth > 0 || c.Group != nil)) {
		return fmt.Errorf("explore: a liveness window (Live) of %v: want 0, or less than the horizon %v in a configuration explored to completion (MaxDepth 0) without a Group", c.Live, c.End)
	}
	if c.Prefer != nil {
		if err := c.validatePrefer(); err != nil {
			return err
		}
	}
	if c.Group != nil {
		if len(c.Group.Names) == 0 {
			return fmt.Errorf("explore: a Group configuration with no names: want at least one")
		}
		if c.Work != nil || c.Writes > 0 || c.Planted() || c.Released > 0 {
			return fmt.Errorf("explore: a Group configuration has no work, no fenced writes and no planted record: want Work nil, Writes 0, Plant zero")
		}
		if err := c.validateBalance(); err != nil {
			return err
		}
		if err := c.Group.validate(); err != nil {
			return err
		}
	}
	if c.Work != nil {
		if _, err := schedule.Every(c.Work.Period, 0); err != nil {
			return fmt.Errorf("explore: the job's period: %v", err)
		}
		if err := c.workConfig().Validate(); err != nil {
			return fmt.Errorf("explore: the job: %v", err)
		}
		if c.Writes > 0 {
			return fmt.Errorf("explore: a configuration with work has no fenced writes of its own: want Writes 0")
		}
		if wk := c.Work; wk.Resume && !wk.Suspend {
			return fmt.Errorf("explore: a resume without a suspension: want Work.Suspend with Work.Resume")
		}
		if wk := c.Work; wk.Live {
			slow := slices.ContainsFunc(c.Rates, func(r Rate) bool { return r.Num < r.Den })
			if !c.Prompt || c.MaxDepth > 0 || slow || c.PeriodLimit() <= wk.Created {
				return fmt.Errorf("explore: a period liveness check (Work.Live) needs a prompt store (Prompt), an exploration to completion (MaxDepth 0), no clock slower than true time, and a horizon beyond the job's creation by more than the catch-up bound: got the limit %v", c.PeriodLimit())
			}
		}
		if wk := c.Work; wk.LateRecords && (!wk.Supervisor || wk.TakeoverGrace <= 0 || wk.Step != 0) {
			return fmt.Errorf("explore: late supervisor's records are bounded by the takeover grace on a wall clock that does not step: want Supervisor, TakeoverGrace positive, Step 0")
		}
	}
	return nil
}

// fitting lists the configurations the mutation called name fits.
func fitting(name string) []string {
	var names []string
	for _, n := range Configs() {
		if configs[n].Fits(name) {
			names = append(names, n)
		}
	}
	return names
}

// The configurations, by name.
var configs = map[string]Config{
	"2x1-tiny": {
		Name: "2x1-tiny", About: "2 nodes x 1 name, no fault but the store's delays, two fenced writes; clock rates 1 and 1.1 (what go test explores)",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, Writes: 2,
	},
	"2x1": {
		Name: "2x1", About: "2 nodes x 1 name, one fault (a crash and restart, a pause, or a lost or failed store answer), two fenced writes; clock rates 1 and 1.1",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second,
		Crashes: 1, Pauses: 1, Losses: 1, Faults: 1, Writes: 2,
	},
	"3x1": {
		Name: "3x1", About: "3 nodes x 1 name, one fault (a crash and restart, a pause, or a lost or failed store answer), two fenced writes; clock rates 1, 1 and 1.1",
		Nodes: 3, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {1, 1}, {11, 10}}, End: 4 * time.Second,
		Crashes: 1, Pauses: 1, Losses: 1, Faults: 1, Writes: 2,
		// Not complete: 1.1 million states at depth 16 (137 s, 2.3 GB),
		// before the first renewal in most paths.
		MaxDepth: 14,
	},
	"sched-2x1-tiny": schedConfig("sched-2x1-tiny", "the job registered 2.5s before the nodes start, a catch-up cap of 2 (what go test explores)", 16,
		Work{Created: -2500 * time.Millisecond, Policy: scheduler.Policy{Max: 2}}),
	"sched-2x1-window": schedConfig("sched-2x1-window", "the job registered 2.5s before the nodes start, a catch-up window of 1.5s, a run timeout of 500ms", 20,
		Work{Created: -2500 * time.Millisecond, Policy: scheduler.Policy{Window: 1500 * time.Millisecond, Timeout: 500 * time.Millisecond}}),
	"sched-2x1-suspend": schedConfig("sched-2x1-suspend", "the job registered 0.5s before the nodes start, which an operator may suspend at any instant", 16,
		Work{Created: -500 * time.Millisecond, Suspend: true}),
	"sched-2x1-damaged": schedConfig("sched-2x1-damaged", "the job registered 1.5s before the nodes start, its first period's ledger row in a state no baton writes", 14,
		Work{Created: -1500 * time.Millisecond, Damaged: []store.Run{{Job: name, Period: scheduler.Key(t0.Add(-time.Second)), Scheduled: t0.Add(-time.Second), State: "lost", Token: 1, Attempt: 1, Version: 1}}}),
	"sched-2x1-retry": schedConfig("sched-2x1-retry", "the job registered 0.5s before the nodes start, runs that may fail, 1 retry after a backoff of 500ms, a jitter of up to 300ms", 22,
		Work{Created: -500 * time.Millisecond, Failures: true, Policy: scheduler.Policy{Retries: 1, RetryBackoff: 500 * time.Millisecond, Jitter: 300 * time.Millisecond}}),
	"sched-2x1-prune": schedConfig("sched-2x1-prune", "its ledger's history planted: the periods 4s to 0s before the nodes start done but for one failed, a retention of 2 rows", 16,
		Work{Created: -4500 * time.Millisecond, Retention: scheduler.Retention{Rows: 2},
			Rows: []store.Run{row(-4, store.Done, false, 1), row(-3, store.Failed, false, 2), row(-2, store.Done, false, 3), row(-1, store.Done, false, 4), row(0, store.Done, false, 5)}}),
	"sched-2x1-manual": schedConfig("sched-2x1-manual", "the job registered 2.5s before the nodes start, catch-up latest, an operator's manual trigger of its first period pending", 14,
		Work{Created: -2500 * time.Millisecond, Policy: scheduler.Policy{CatchUp: scheduler.CatchUpLatest},
			Rows: []store.Run{row(-2, store.Pending, true, 1)}}),
	"sched-2x1-supervisor": schedConfig("sched-2x1-supervisor", "the job registered 0.5s before the nodes start, every run's success recorded by its own process the moment it ends (baton run's supervisor)", 18,
		Work{Created: -500 * time.Millisecond, Supervisor: true}),
	"sched-2x1-clock": clockConfig(),
	"sched-2x1": schedConfig("sched-2x1", "the job registered 0.5s before the nodes start, overlap skip", 26,
		Work{Created: -500 * time.Millisecond, Policy: scheduler.Policy{Overlap: scheduler.OverlapSkip}}),
	"group-2x1": {
		Name: "group-2x1", About: "2 nodes x 1 name, each node an election.Group holding it through its own session record (polling, no succession), on memstore; no fault but the store's delays; clock rates 1 and 1.1",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, Group: &Sessions{Names: []string{name}}, Settle: true, MaxDepth: 23,
	},
	"group-2x1-succession": {
		Name: "group-2x1-succession", About: "group-2x1 with succession: a Group ends another's dead session by naming its own session the successor, and the names pass on to it",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, Group: &Sessions{Names: []string{name}, Succession: true}, Settle: true, MaxDepth: 24,
	},
	"2x1-live": {
		Name: "2x1-live", About: "2 nodes x 1 name, one fault (a crash and restart, or a lost or failed store answer), a prompt store (no answer waits for time to move), lease 1s, renew and poll 500ms, margin 50ms, horizon 3s; clock rates 1 and 1.1; liveness checked: from every state at or before 1.35s a node can lead again without another fault",
		Nodes: 2, Lease: time.Second, Renew: 500 * time.Millisecond, Margin: 50 * time.Millisecond, Poll: 500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 3 * time.Second,
		Crashes: 1, Losses: 1, Faults: 1, Prompt: true,
		// A contender reads within Poll; a record unchanged for lease +
		// 2e on its clock (which runs at least as fast as true time) is
		// taken over then: 1.6s; 50ms to spare.
		Live: 1650 * time.Millisecond,
	},
	"2x1-hostile": {
		Name: "2x1-hostile", About: "2 nodes x 1 name planted held by a ghost node with the lease math.MaxInt64 (no valid Config writes it), no fault but the store's delays; clock rates 1 and 1.1",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, Writes: 2,
		Plant: store.Record{Name: name, Holder: "ghost", Incarnation: "ghost.1", Token: 1, Lease: math.MaxInt64},
	},
	// The shipping Groups balance by 4.1s (node-1's pull at 1.36s, node-0
	// hands the name over at its read at 3s, node-1 takes it at 4.09s):
	// with Quiet at 4s this configuration finds a violation, at 5s none
	// (measured); 6s leaves a second.
	"group-2x2-balance": {
		Name: "group-2x2-balance", About: "2 nodes x 2 names, each node a balanced election.Group (polling, no succession) on memstore, node-0 holding both after the settled start; the store's delays until 1.6s, prompt after; the balance (the simulator's check) in every state from 6s with no store call in flight; clock rates 1 and 1.1",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 9 * time.Second, Settle: true,
		Group: &Sessions{Names: []string{name, "payroll"}, Balance: true, Heal: 1600 * time.Millisecond, Quiet: 6 * time.Second},
	},
	"group-2x2-shares": {
		Name: "group-2x2-shares", About: "group-2x2-balance with weights 4 and 1: node-0, which holds both names, weighs four times node-1, so the shipping Groups move none (2*4/5 rounded up is 2)",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 9 * time.Second, Settle: true,
		Group: &Sessions{Names: []string{name, "payroll"}, Balance: true, Shares: []int{4, 1}, Heal: 1600 * time.Millisecond, Quiet: 6 * time.Second},
	},
	// No delay (Heal 0): with none it has 68,626 states, 13 s of CPU
	// (measured), the largest of the three already.
	"group-2x2-weighted": {
		Name: "group-2x2-weighted", About: "group-2x2-balance with weights 1 and 4: node-1, which holds none, weighs four times node-0, so the shipping Groups move both names (2*4/5 rounded up is 2); no delay: the store prompt from the start",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 7 * time.Second, Settle: true,
		Group: &Sessions{Names: []string{name, "payroll"}, Balance: true, Shares: []int{1, 4}, Heal: 0, Quiet: 6 * time.Second},
	},
	"sched-2x1-live":            liveSchedConfig(),
	"sched-2x1-prefer":          preferSchedConfig(),
	"2x1-prefer":                preferElectionConfig(),
	"sched-2x1-supervisor-late": lateConfig(),
	"group-2x1-forge": {
		Name: "group-2x1-forge", About: "group-2x1 with every node's change feed from memstore (in order, delayed, no gap), a client that forges up to two notifications of a session record, and one crash (a node may restart)",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, Crashes: 1, Faults: 1, Group: &Sessions{Names: []string{name}, Feed: &Feed{Forges: 2}}, Settle: true, MaxDepth: 13,
	},
	"group-2x1-settle": {
		Name: "group-2x1-settle", About: "group-2x1-succession started with the name passed on by a succession, not settled yet, from a dead process's session to another dead process's (lease 1s), and a collector that settles the names a succession passed on at any instant",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, Group: &Sessions{Names: []string{name}, Succession: true, Ghost: time.Second, Chain: true, Collect: true}, Settle: true, MaxDepth: 14,
	},
	"group-2x1-release": {
		Name: "group-2x1-release", About: "group-2x1-succession started with the name held through a dead process's session (lease 1s), whose release of it is still on its way to the store",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, Group: &Sessions{Names: []string{name}, Succession: true, Ghost: time.Second, Release: true}, Settle: true, MaxDepth: 14,
	},
	"group-2x1-unread": {
		Name: "group-2x1-unread", About: "group-2x1-release with the dead process's lease 500ms (it is found dead before a name's first poll), whose settled start lands its release after node-0 read the name and before node-1 did",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, Group: &Sessions{Names: []string{name}, Succession: true, Ghost: 500 * time.Millisecond, Release: true, Stagger: true}, Settle: true, MaxDepth: 16,
	},
	"group-1x2-left": {
		Name: "group-1x2-left", About: "1 node x 2 names, campaigning for billing only, started with both names held through a dead process's session (lease 1s), and a collector that settles the names a succession passed on at any instant; the name it does not campaign for must be let go",
		Nodes: 1, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		End: 4 * time.Second, Group: &Sessions{Names: []string{name, "payroll"}, Succession: true, Ghost: time.Second, Collect: true, Skip: [][]string{{"payroll"}}}, Settle: true, MaxDepth: 30,
	},
	"group-1x2-transfer": {
		Name: "group-1x2-transfer", About: "group-1x2-left without the collector, and an operator who may ask, at any instant, for the transfer of the name the node does not campaign for",
		Nodes: 1, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		End: 4 * time.Second, Group: &Sessions{Names: []string{name, "payroll"}, Succession: true, Ghost: time.Second, Transfer: true, Skip: [][]string{{"payroll"}}}, Settle: true, MaxDepth: 30,
	},
	"group-1x1-check": {
		Name: "group-1x1-check", About: "1 node x 1 name, started with the name held through a dead process's session (lease 1s), a collector that settles the names a succession passed on at any instant, and a horizon of 6s, past the node's first re-read of the name it took",
		Nodes: 1, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		End: 6 * time.Second, Group: &Sessions{Names: []string{name}, Succession: true, Ghost: time.Second, Collect: true}, Settle: true, MaxDepth: 22,
	},
	"group-2x2-succession": {
		Name: "group-2x2-succession", About: "2 nodes x 2 names, each node an election.Group holding them through its own session record with succession on (polling), on memstore, started with both names held through a dead process's session (lease 500ms): a Group that finds it dead ends it naming its own session the successor, and both names pass on to it in that one write; no fault but the store's delays; clock rates 1 and 1.1",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, Group: &Sessions{Names: []string{name, "payroll"}, Succession: true, Ghost: 500 * time.Millisecond}, Settle: true, MaxDepth: 17,
	},
	"group-2x1-unsynced": {
		Name: "group-2x1-unsynced", About: "group-2x1-unread with every node's change feed from memstore (in order, delayed, no gap)",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, Group: &Sessions{Names: []string{name}, Succession: true, Ghost: 500 * time.Millisecond, Release: true, Stagger: true, Feed: &Feed{}}, Settle: true, MaxDepth: 14,
	},
	"group-2x1-gap": {
		Name: "group-2x1-gap", About: "group-2x1-unsynced with one break of a node's change feed (it may open again)",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, Group: &Sessions{Names: []string{name}, Succession: true, Ghost: 500 * time.Millisecond, Release: true, Stagger: true, Feed: &Feed{Gaps: 1}}, Settle: true, MaxDepth: 12,
	},
}

// Configs lists the configurations' names, sorted.
func Configs() []string {
	var names []string
	for n := range configs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the configuration called name.
func Lookup(name string) (Config, bool) {
	c, ok := configs[name]
	return c, ok
}

// Mutations lists the simulator's mutations the explorer runs, sorted.
func Mutations() []string {
	var names []string
	for n := range mutations {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var mutations = map[string]Mutation{
	"no-margin":      {Name: "no-margin", NoMargin: true},
	"no-fence":       {Name: "no-fence", NoFence: true},
	"no-valid-check": {Name: "no-valid-check", NoValidCheck: true},
	"wrap-deadline":  {Name: "wrap-deadline", WrapDeadline: true},

	"ignore-suspension":    {Name: "ignore-suspension", Work: scheduler.Mutations{IgnoreSuspension: true}},
	"sticky-suspension":    {Name: "sticky-suspension", Work: scheduler.Mutations{StickySuspension: true}},
	"no-catch-up-cap":      {Name: "no-catch-up-cap", Work: scheduler.Mutations{NoCatchUpCap: true}},
	"no-catch-up-window":   {Name: "no-catch-up-window", Work: scheduler.Mutations{NoCatchUpWindow: true}},
	"no-overlap-skip":      {Name: "no-overlap-skip", Work: scheduler.Mutations{NoOverlapSkip: true}},
	"no-timeout":           {Name: "no-timeout", Work: scheduler.Mutations{NoTimeout: true}},
	"rerun-unknown-state":  {Name: "rerun-unknown-state", Work: scheduler.Mutations{RerunUnknownState: true}},
	"unfenced-ledger":      {Name: "unfenced-ledger", UnfencedLedger: true},
	"release-after-finish": {Name: "release-after-finish", Work: scheduler.Mutations{ReleaseAfterFinish: true}},
	"no-retry-backoff":     {Name: "no-retry-backoff", Work: scheduler.Mutations{NoRetryBackoff: true}},
	"no-jitter":            {Name: "no-jitter", Work: scheduler.Mutations{NoJitter: true}},
	"node-jitter":          {Name: "node-jitter", Work: scheduler.Mutations{NodeJitter: true}},
	"prune-early":          {Name: "prune-early", Work: scheduler.Mutations{PruneEarly: true}},
	"prune-failed":         {Name: "prune-failed", Work: scheduler.Mutations{PruneFailed: true}},
	"no-own-completion":    {Name: "no-own-completion", Work: scheduler.Mutations{NoOwnCompletion: true}},
	"no-manual-exempt":     {Name: "no-manual-exempt", Work: scheduler.Mutations{NoManualExempt: true}},

	"session-no-margin":   {Name: "session-no-margin", Election: election.Mutations{NoSessionMargin: true}},
	"session-name-expiry": {Name: "session-name-expiry", Election: election.Mutations{SessionNameExpiry: true}},

	"succession-no-raise":       {Name: "succession-no-raise", Succession: memstore.SuccessionMutation{NoRaise: true}},
	"succession-adopt-unread":   {Name: "succession-adopt-unread", Election: election.Mutations{AdoptUnread: true}},
	"settle-new-version":        {Name: "settle-new-version", Succession: memstore.SuccessionMutation{SettleNewVersion: true}},
	"succession-list-no-retry":  {Name: "succession-list-no-retry", Election: election.Mutations{ListNoRetry: true}},
	"succession-list-ended":     {Name: "succession-list-ended", Election: election.Mutations{ListEnded: true}},
	"succession-stored-version": {Name: "succession-stored-version", Succession: memstore.SuccessionMutation{StoredVersion: true}},
	"settle-stored-token":       {Name: "settle-stored-token", Succession: memstore.SuccessionMutation{SettleStoredToken: true}},

	"succession-adopt-unsynced":   {Name: "succession-adopt-unsynced", Election: election.Mutations{AdoptUnsynced: true}},
	"succession-adopt-across-gap": {Name: "succession-adopt-across-gap", Election: election.Mutations{AdoptAcrossGap: true}},

	"session-read-first": {Name: "session-read-first", Election: election.Mutations{ReadBeforeExpiry: true}},
	"no-takeover":        {Name: "no-takeover", Election: election.Mutations{NoTakeover: true}},

	"no-clock-guard": {Name: "no-clock-guard", Work: scheduler.Mutations{NoClockGuard: true}},
	"no-step-down":   {Name: "no-step-down", Work: scheduler.Mutations{NoStepDown: true}},

	"no-pull":              {Name: "no-pull", Election: election.Mutations{NoPull: true}},
	"no-shares":            {Name: "no-shares", Election: election.Mutations{NoShares: true}},
	"prefer-no-safe-point": {Name: "prefer-no-safe-point", Election: election.Mutations{NoSafePoint: true}},
	"prefer-no-hysteresis": {Name: "prefer-no-hysteresis", Election: election.Mutations{NoHysteresis: true}},
	"prefer-no-defer":      {Name: "prefer-no-defer", Election: election.Mutations{NoDefer: true}},
	"no-takeover-grace":    {Name: "no-takeover-grace", Work: scheduler.Mutations{NoTakeoverGrace: true}},
	"token-fenced-record":  {Name: "token-fenced-record", TokenFencedRecord: true},
}

// ChecksLiveness reports whether c checks a liveness property that
// needs its whole graph or every path to its horizon: that a node can
// lead again (Live) or that every due period is finished (Work.Live).
func (c Config) ChecksLiveness() bool { return c.Live > 0 || c.Work != nil && c.Work.Live }

// Planted reports whether c starts with a planted damaged record.
func (c Config) Planted() bool { return !c.Plant.Free() }

// Fits reports whether the mutation called name can be caught in c: a
// mutation of the protections of a term (no-margin, no-fence,
// no-valid-check) needs a term to be won, which c's planted record, if
// any, prevents; wrap-deadline needs the planted record.
func (c Config) Fits(name string) bool {
	m, ok := mutations[name]
	if !ok {
		return false
	}
	if needs, ok := preferNeeds[name]; ok {
		return c.Prefer != nil && needs(&c)
	}
	if c.Prefer != nil {
		// A configuration with a preference is bounded for the
		// preference's mutations: the others have theirs.
		return false
	}
	if needs, ok := workNeeds[name]; ok {
		return c.Work != nil && needs(c.Work)
	}
	if needs, ok := groupNeeds[name]; ok {
		return c.Group != nil && needs(c.Group) && (c.Nodes > 1 || !overlaps[name])
	}
	if m.Election.NoTakeover {
		// Nothing unsafe: only a liveness check can see it.
		return c.ChecksLiveness()
	}
	if (m.NoFence || m.NoValidCheck) && c.Writes == 0 {
		return false // what they break is a fenced write
	}
	return c.Work == nil && c.Group == nil && m.planted() == c.Planted()
}

// workNeeds says, for each scheduler mutation, what a configuration's
// work must have for the mutation to break something: the policy rule
// it turns off, the operator's suspension, a damaged row.
var workNeeds = map[string]func(*Work) bool{
	"ignore-suspension":    func(wk *Work) bool { return wk.Suspend },
	"sticky-suspension":    func(wk *Work) bool { return wk.Suspend && wk.Resume && wk.Live }, // only the period liveness check sees it
	"no-catch-up-cap":      func(wk *Work) bool { return wk.Policy.Max > 0 && wk.Created < 0 },
	"no-catch-up-window":   func(wk *Work) bool { return wk.Policy.Window > 0 && wk.Created < 0 },
	"no-overlap-skip":      func(wk *Work) bool { return wk.Policy.Overlap == scheduler.OverlapSkip },
	"no-timeout":           func(wk *Work) bool { return wk.Policy.Timeout > 0 },
	"rerun-unknown-state":  func(wk *Work) bool { return len(wk.Damaged) > 0 },
	"unfenced-ledger":      func(wk *Work) bool { return len(wk.Damaged) == 0 && !wk.Suspend },
	"release-after-finish": func(wk *Work) bool { return len(wk.Damaged) == 0 && !wk.Suspend },
	"no-retry-backoff":     func(wk *Work) bool { return wk.Failures && wk.Policy.Retries > 0 && wk.Policy.RetryBackoff > 0 },
	"no-jitter":            func(wk *Work) bool { return wk.Policy.Jitter > 0 },
	"prune-early":          func(wk *Work) bool { return wk.Retention.On() },
	"prune-failed": func(wk *Work) bool {
		return wk.Retention.On() && slices.ContainsFunc(wk.Rows, func(r store.Run) bool { return r.State == store.Failed })
	},
	"no-own-completion": func(wk *Work) bool { return wk.Supervisor },
	"no-manual-exempt": func(wk *Work) bool {
		skips := wk.Policy.CatchUp == scheduler.CatchUpLatest || wk.Policy.CatchUp == scheduler.CatchUpNone || wk.Policy.Max > 0 || wk.Policy.Window > 0
		return skips && slices.ContainsFunc(wk.Rows, func(r store.Run) bool { return r.Manual })
	},
	"node-jitter":    func(wk *Work) bool { return wk.Policy.Jitter > 0 },
	"no-clock-guard": func(wk *Work) bool { return wk.ClockTolerance > 0 && wk.Step.Abs() > wk.ClockTolerance },
	"no-step-down": func(wk *Work) bool {
		return wk.ClockTolerance > 0 && wk.ClockStepDown > 0 && wk.Step.Abs() > wk.ClockTolerance
	},
	"no-takeover-grace":   func(wk *Work) bool { return wk.LateRecords },
	"token-fenced-record": func(wk *Work) bool { return wk.LateRecords },
}

// groupNeeds says, for each mutation of a Group's rules (or of the
// store's for sessions), what a Group configuration must have for it to
// break something.
var groupNeeds = map[string]func(*Sessions) bool{
	"session-no-margin":   func(*Sessions) bool { return true },
	"session-name-expiry": func(*Sessions) bool { return true },

	"no-pull":                   func(s *Sessions) bool { return s.Balance },
	"no-shares":                 func(s *Sessions) bool { return s.Balance && s.weighted() },
	"session-read-first":        func(s *Sessions) bool { return s.Feed != nil && s.Feed.Forges > 0 },
	"succession-no-raise":       func(s *Sessions) bool { return s.Succession },
	"settle-stored-token":       func(s *Sessions) bool { return s.Succession && s.Collect },
	"succession-stored-version": func(s *Sessions) bool { return s.Succession && s.Release },
	"succession-list-ended":     func(s *Sessions) bool { return s.Succession && s.Collect && len(s.Skip) > 0 },
	"settle-new-version":        func(s *Sessions) bool { return s.Succession && s.Collect },
	"succession-list-no-retry":  func(s *Sessions) bool { return s.Succession && s.Transfer && len(s.Skip) > 0 },
	"succession-adopt-unread":   func(s *Sessions) bool { return s.Succession && s.Release },

	"succession-adopt-unsynced":   func(s *Sessions) bool { return s.Succession && s.Release && s.Feed != nil },
	"succession-adopt-across-gap": func(s *Sessions) bool { return s.Succession && s.Release && s.Feed != nil && s.Feed.Gaps > 0 },
}

// notExpressible names each simulator mutation (baton sim --mutate) that
// the explorer cannot express yet, with why.
var notExpressible = map[string]string{}

// NotExpressible returns why the simulator's mutation called name is not
// one the explorer runs yet, or "" when it runs it or no simulator
// mutation has that name.
func NotExpressible(name string) string { return notExpressible[name] }

// NotExpressibleMutations lists the simulator's mutations the explorer
// cannot express yet, sorted.
func NotExpressibleMutations() []string {
	var names []string
	for n := range notExpressible {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Mutated returns c with the mutation called name.
func (c Config) Mutated(name string) (Config, error) {
	m, ok := mutations[name]
	if !ok {
		return c, fmt.Errorf("no mutation %q in the explorer: want %s", name, strings.Join(Mutations(), ", "))
	}
	if !c.Fits(name) {
		if _, ok := preferNeeds[name]; ok {
			return c, fmt.Errorf("mutation %s does not fit configuration %s (it needs a preference policy%s): want %s", name, c.Name, preferNeedText(name), strings.Join(fitting(name), ", "))
		}
		if c.Prefer != nil {
			return c, fmt.Errorf("mutation %s is not explored in configuration %s, which is bounded for the preference's mutations: want %s", name, c.Name, strings.Join(fitting(name), ", "))
		}
		if _, ok := workNeeds[name]; ok || c.Work != nil {
			return c, fmt.Errorf("mutation %s does not fit configuration %s (it needs %s): want %s", name, c.Name, needText(name), strings.Join(fitting(name), ", "))
		}
		if (m.NoFence || m.NoValidCheck) && c.Writes == 0 && c.Work == nil && c.Group == nil {
			return c, fmt.Errorf("mutation %s needs fenced writes, which configuration %s has none of: want %s", name, c.Name, strings.Join(fitting(name), ", "))
		}
		if m.Election.NoTakeover {
			return c, fmt.Errorf("mutation %s needs a configuration that checks liveness, which %s does not: want %s", name, c.Name, strings.Join(fitting(name), ", "))
		}
		if m.planted() {
			return c, fmt.Errorf("mutation %s needs a record planted with a lease no valid Config writes, which configuration %s has not: want %s", name, c.Name, strings.Join(fitting(name), ", "))
		}
		if _, ok := groupNeeds[name]; ok {
			return c, fmt.Errorf("mutation %s does not fit configuration %s (it needs Groups with what it breaks): want %s", name, c.Name, strings.Join(fitting(name), ", "))
		}
		return c, fmt.Errorf("mutation %s needs a term to be won, which configuration %s's planted record prevents: want %s", name, c.Name, strings.Join(fitting(name), ", "))
	}
	c.Mutate = m
	return c, nil
}

// needText says what the mutation called name needs of a configuration.
func needText(name string) string {
	if _, ok := workNeeds[name]; !ok {
		return "an election-only configuration"
	}
	return "a configuration whose job has what it breaks"
}

// schedConfig is a configuration of 2 nodes x 1 job every second (the
// scheduler machine started with each term), no fault but the store's
// delays, clock rates 1 and 1.1, the election's settings those of 2x1,
// bounded at depth: about is what its work adds.
func schedConfig(n, about string, depth int, wk Work) Config {
	wk.Period, wk.Poll = time.Second, time.Second
	return Config{
		Name: n, About: "2 nodes x 1 job every 1s, " + about + "; no fault but the store's delays; clock rates 1 and 1.1",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, MaxDepth: depth, Work: &wk,
	}
}

// row is a ledger row of the job's period sec seconds from the start, in
// state st (manual: an operator's trigger), at version v: finished
// rows were run by a term of token 1 that ended before the nodes start.
func row(sec int, st store.RunState, manual bool, v int64) store.Run {
	at := t0.Add(time.Duration(sec) * time.Second)
	r := store.Run{Job: name, Period: scheduler.Key(at), Scheduled: at, State: st, Manual: manual, Version: v}
	if st != store.Pending {
		r.Token, r.Holder, r.Attempt, r.Started, r.Finished = 1, "node-0", 1, at, at.Add(100*time.Millisecond)
	}
	return r
}

// clockConfig is sched-2x1-clock: the wall-clock guard on (a tolerance of
// 500ms, above the 400ms that the 1.1 clock rate gains on the store's
// clock by the horizon; a step-down after 250ms), one node's wall clock
// stepping 1s ahead once, at any instant; the machine's poll 250ms, so
// that the step-down's bound (the step-down and three polls) falls
// within the horizon.
func clockConfig() Config {
	c := schedConfig("sched-2x1-clock", "the wall-clock guard on (tolerance 500ms, step-down after 250ms, the machine polling every 250ms), one node's wall clock stepped 1s ahead at any instant", 20,
		Work{Created: -500 * time.Millisecond, ClockTolerance: 500 * time.Millisecond, ClockStepDown: 250 * time.Millisecond, Step: time.Second})
	c.Work.Poll = 250 * time.Millisecond
	return c
}

// lateConfig is sched-2x1-supervisor-late: baton run's supervisor
// records every run's success, its record landing at any instant before
// a newer term's takeover grace has passed (Work.LateRecords), the grace
// baton run's (its renew interval, 1.5s); one period in the horizon (the
// job every 5s, its first period at the start), the machine polling
// every 5s; explored from the settled start (the first term won and its
// run started, at 0).
func lateConfig() Config {
	c := schedConfig("sched-2x1-supervisor-late", "", 20,
		Work{Created: -500 * time.Millisecond, Supervisor: true, LateRecords: true, TakeoverGrace: 1500 * time.Millisecond})
	c.About = "2 nodes x 1 job every 5s, registered 0.5s before the nodes start, every run's success recorded by its own process, the record landing late but within a newer term's takeover grace (1.5s, baton run's: its renew interval); explored from its settled start; no fault but the store's delays; clock rates 1 and 1.1"
	c.Work.Period, c.Work.Poll = 5*time.Second, 5*time.Second
	c.End, c.Settle = 5*time.Second, true
	// The planted start: node-0's run ends at once, inside its term (its
	// supervisor's record on its way); node-1 reads node-0's record at
	// each poll (1.5s on its clock, which runs at 1.1); node-0's renewal
	// at 1.5s stays in flight, so its term lapses at 3s; node-1 takes the
	// name at 3.27s (3.6s on its clock).
	adv := func(ns ...time.Duration) (evs []Event) {
		for _, t := range ns {
			evs = append(evs, Event{Kind: evAdvance, To: t})
		}
		return evs
	}
	ev := func(k kind, n int8) Event { return Event{Kind: k, Node: n} }
	poll1 := []Event{ev(evTick, 1), ev(evApply, 1), ev(evDeliver, 1)}
	c.Start = slices.Concat([]Event{ev(evDone, 0)},
		adv(1363636363, 1363636364), poll1,
		adv(1499999999, 1500000000), []Event{ev(evTick, 0)},
		adv(2727272727, 2727272728), poll1,
		adv(2999999999, 3000000000), []Event{ev(evTick, 0)},
		adv(3272727272, 3272727273), poll1)
	return c
}

// liveSchedConfig is sched-2x1-live: 2x1-live's election (lease 1s,
// renew and poll 500ms, margin 50ms, a prompt store) running the job every
// 3s, registered 3.5s before the nodes start, so that two periods (-3s
// and 0s) are due when they start: a backlog, which the catch-up policy
// (all, capped at 1) works off by skipping the older; the third (3s)
// comes due in a term. One crash (the node may restart at any instant)
// or, spending the same budget, an operator's suspension of the job,
// which it may then resume. The period liveness check (Work.Live): the limit
// (PeriodLimit) is the horizon 5.6s less vcluster.Settle (1s + 2*50ms +
// 2*500ms) and one scheduler poll (500ms): 3s, so all three periods are
// demanded finished at the horizon unless the job is suspended then, and
// the crash, the suspension and the resume come before 3s. Measured: a
// lost or failed answer instead of the crash, a pause besides it, or the
// crash and the suspension in one path each took the exploration past 2
// million edges in 60s without completing it.
func liveSchedConfig() Config {
	return Config{
		Name: "sched-2x1-live", About: "2 nodes x 1 job every 3s, registered 3.5s before the nodes start (two periods due at once), catch-up capped at 1, an operator who may suspend and then resume the job; one fault (a crash, which may restart) or the suspension, not both in one path; a prompt store (no answer or run waits for time to move), lease 1s, renew and poll 500ms, margin 50ms, the machine polling every 500ms, horizon 5.6s; clock rates 1 and 1.1; period liveness checked: at the horizon every period due by 3s is finished (done, failed or skipped) unless the job is suspended, the fault, suspension and resume coming before 3s",
		Nodes: 2, Lease: time.Second, Renew: 500 * time.Millisecond, Margin: 50 * time.Millisecond, Poll: 500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 5600 * time.Millisecond,
		Crashes: 1, Faults: 1, Prompt: true,
		Work: &Work{Period: 3 * time.Second, Poll: 500 * time.Millisecond, Created: -3500 * time.Millisecond,
			Policy: scheduler.Policy{Max: 1}, Suspend: true, Resume: true, Live: true},
	}
}
