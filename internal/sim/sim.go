// Package sim tests baton the way FoundationDB and TigerBeetle are tested:
// the real protocol code, many nodes, virtual time, random faults from a
// seed, every run checked, every failure replayable from its seed.
//
// Each seed draws a fault schedule: partitions between nodes and the store,
// pauses of any length (also between a Valid() check and a write), crashes
// and restarts as new incarnations, clock rates within the margin e and
// beyond it, store outages, slow store replies, operators' resignations
// and transfers, and a leader stopping at the worst moment ("skew"). The
// virtual cluster (internal/vcluster) runs the real election machine (the
// election.Group that baton.Elector and baton.Group drive), the real
// scheduler machine (what schedule.Runner drives), a real store and the
// real fence under it and checks the invariants after every event; at the
// end it checks liveness: every period due early enough was completed.
//
// Every node campaigns for the job's name and Options.Names more. Per seed
// (Options.Sessions), every node holds its names through one session
// record (baton.Group), or each on its own record (baton.Elector), or the
// nodes are mixed, so both kinds of holder contend for the same names; a
// seed also draws whether change notifications arrive (else polling
// alone) and whether the election's requests, not only its answers, take
// the store's latency. For every name, at no moment may two nodes hold a
// term that their own clocks say is valid. The store's latency is drawn per
// seed (1-100ms); the scheduler's calls travel it both ways, so a write can
// land after its sender was deposed.
//
// The store's round trips lengthen every takeover (a contender starts
// counting when its read's reply arrives, and reads and swaps once more
// before it leads), so they act as extra margin: a takeover without the 2e
// wait overlaps the old term only when the old leader's clock runs slow,
// the contender's fast, and the store answers fast. A random drift on one
// node rarely lines these up; the skew fault does: the stopping node's
// clock slow, every other fast, the ratio close to the largest the margin
// covers, a store answering within milliseconds. Its other variant freezes
// the node with a ledger call in flight until about when a successor takes
// over, the successor's store slow: the stale answer leads to ledger writes
// that only the ledger's token check refuses.
//
// The same seed gives the same run, event for event: the schedule comes
// from a seeded generator and the cluster has no goroutines, no map-order
// dependence and no real clock.
package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/internal/vcluster"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// FaultClass is a family of faults a seed may draw.
type FaultClass string

// The fault classes.
const (
	Partition         FaultClass = "partition"           // a node cannot reach the store
	Pause             FaultClass = "pause"               // a node is frozen
	PauseBeforeEffect FaultClass = "pause-before-effect" // frozen just before or after the Valid() check before an effect, or with a ledger call in flight
	Crash             FaultClass = "crash"               // killed, restarted as a new incarnation
	Drift             FaultClass = "drift"               // a clock runs fast or slow, within e or beyond
	StoreOutage       FaultClass = "store-outage"        // nobody can reach the store
	SlowStore         FaultClass = "slow-store"          // a node's store replies are slow
	Operator          FaultClass = "operator"            // resignations and transfers
	Skew              FaultClass = "skew"                // clocks within e at their worst: one slow, the others fast, then it is cut off or frozen
	Hostile           FaultClass = "hostile"             // timings at the edges of their ranges, tokens near the largest, a damaged record, clocks at the edge of the margin (hostile.go)
)

// AllFaults lists every fault class.
var AllFaults = []FaultClass{Partition, Pause, PauseBeforeEffect, Crash, Drift, StoreOutage, SlowStore, Operator, Skew, Hostile}

// ParseFaults parses a comma list of fault classes ("all" for every one).
func ParseFaults(s string) ([]FaultClass, error) {
	if s == "all" {
		return AllFaults, nil
	}
	var out []FaultClass
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(AllFaults, FaultClass(f)) {
			names := make([]string, len(AllFaults))
			for i, c := range AllFaults {
				names[i] = string(c)
			}
			return nil, fmt.Errorf("unknown fault %q: want a comma list of %s, or all", f, strings.Join(names, ", "))
		}
		out = append(out, FaultClass(f))
	}
	return out, nil
}

// Options configures a simulation. The zero value is not valid; start from
// DefaultOptions.
type Options struct {
	Nodes    int
	Duration time.Duration // virtual time per seed
	Faults   []FaultClass
	Lease    time.Duration
	Renew    time.Duration
	Margin   time.Duration // the clock margin e
	Poll     time.Duration
	Period   time.Duration // the job's interval (virtual)
	// NoFence turns fencing off (mutation check: the simulator must then
	// find a violation).
	NoFence bool
	// NoMargin configures the nodes without the 2e margin while the
	// invariants still assume e (mutation check).
	NoMargin bool
	// NoValidCheck makes the scheduler machine start effects without
	// checking Valid() first (mutation check).
	NoValidCheck bool
	// UnfencedLedger makes the scheduler machine write the ledger without
	// the token check (mutation check).
	UnfencedLedger bool
	// NoSessionMargin makes observers end another process's session after
	// its lease without the 2e (mutation check).
	NoSessionMargin bool
	// SessionNameExpiry makes contenders take a name held through a
	// session over when its own record stayed unchanged for lease + 2e,
	// ignoring the session (mutation check).
	SessionNameExpiry bool
	// Names is how many names every node campaigns for besides the job's
	// ("shard-1" to "shard-<Names>"): held like the job's, without work.
	Names int
	// Sessions says which nodes hold their names through a session (as
	// baton.Group does) rather than each on its own record (as
	// baton.Elector does).
	Sessions SessionMode
	// Balance says which seeds run balanced (baton.WithBalance): every
	// node holds its names through a session and shares them with the
	// others by asking for handovers; at the end every live node must
	// hold N/P names rounded down or up.
	Balance BalanceMode
	// NoPull makes balanced nodes never ask for a handover (mutation
	// check: the balance check must then fail).
	NoPull bool
	// WrapDeadline trusts a held record's lease whatever it is and lets
	// lease + 2e wrap around (mutation check: a hostile seed's damaged
	// record is then taken over).
	WrapDeadline bool
	// CatchUpMax is the job's catch-up cap (scheduler.Policy.Max): after a
	// leaderless stretch only the newest CatchUpMax missed periods run;
	// older ones are skipped, and the checker verifies every claim and
	// skip against the cap. 0: no cap.
	CatchUpMax int
	// NoCatchUpCap makes the scheduler machine plan as if there were no
	// cap (mutation check: the cap check must then fail).
	NoCatchUpCap bool
	// Jitter is the job's jitter in virtual time (a fraction of Period):
	// every period's first claim waits a delay in [0, Jitter] derived
	// from the job's name and the period key, and the checker verifies
	// that no claim comes earlier. 0: none.
	Jitter time.Duration
	// NoJitter makes the scheduler machine plan as if there were no
	// jitter (mutation check: the jitter check must then fail).
	NoJitter bool
	// IgnoreSuspension makes the scheduler machine plan as if the job
	// were never suspended (mutation check: with the operator faults, a
	// quarter of the seeds suspend the job for a while, and the checker
	// must see a claim after a node read the suspension).
	IgnoreSuspension bool
	// Trace gets the failover trace of each seed run.
	Trace io.Writer

	hostile bool    // a hostile seed's options (hostile.go)
	scale   float64 // a hostile seed's durations over the options' (0: 1)
}

// scaled returns a duration drawn for the options' lease, scaled to a
// hostile seed's.
func (o Options) scaled(d time.Duration) time.Duration {
	if o.scale == 0 {
		return d
	}
	return max(time.Duration(float64(d)*o.scale), time.Microsecond)
}

// BalanceMode says which seeds of a run are balanced.
type BalanceMode string

// The balance modes.
const (
	// BalanceSeeded runs half of the seeds whose nodes all hold their
	// names through a session balanced.
	BalanceSeeded BalanceMode = "seeded"
	BalanceOn     BalanceMode = "on"  // every seed balanced (sessions on)
	BalanceOff    BalanceMode = "off" // no seed balanced
)

// ParseBalanceMode parses a --balance value.
func ParseBalanceMode(s string) (BalanceMode, error) {
	switch m := BalanceMode(s); m {
	case BalanceSeeded, BalanceOn, BalanceOff:
		return m, nil
	}
	return "", fmt.Errorf("unknown balance mode %q: want seeded, on or off", s)
}

// SessionMode says which nodes of a run hold their names through a
// session.
type SessionMode string

// The session modes.
const (
	// SessionsSeeded draws the mode per seed: a third of the seeds run
	// SessionsOn, a third SessionsOff, a third SessionsMixed.
	SessionsSeeded SessionMode = "seeded"
	SessionsOn     SessionMode = "on"    // every node holds its names through a session
	SessionsOff    SessionMode = "off"   // every node renews each name's own record
	SessionsMixed  SessionMode = "mixed" // each node one way or the other, both kinds present
)

// ParseSessionMode parses a --sessions value.
func ParseSessionMode(s string) (SessionMode, error) {
	switch m := SessionMode(s); m {
	case SessionsSeeded, SessionsOn, SessionsOff, SessionsMixed:
		return m, nil
	}
	return "", fmt.Errorf("unknown session mode %q: want seeded, on, off or mixed", s)
}

// DefaultOptions returns 5 nodes each campaigning for the job and 4 more
// names, sessions drawn per seed, 60s of virtual time per seed, every
// fault class, a 3s lease renewed every second, e = 150ms, a period due
// every second.
func DefaultOptions() Options {
	return Options{
		Nodes: 5, Duration: 60 * time.Second, Faults: AllFaults,
		Lease: 3 * time.Second, Renew: time.Second, Margin: 150 * time.Millisecond,
		Poll: 250 * time.Millisecond, Period: time.Second,
		Names: 4, Sessions: SessionsSeeded, Balance: BalanceSeeded, CatchUpMax: 3,
		Jitter: 250 * time.Millisecond,
	}
}

// Validate names the first invalid option.
func (o Options) Validate() error {
	switch {
	case o.Nodes < 1 || o.Nodes > 50:
		return fmt.Errorf("sim: nodes must be from 1 to 50, got %d", o.Nodes)
	case o.Duration < 10*o.Lease:
		return fmt.Errorf("sim: duration must be at least 10 leases (%v), got %v", 10*o.Lease, o.Duration)
	case o.Renew <= 0 || o.Renew >= o.Lease:
		return fmt.Errorf("sim: renew must be positive and shorter than the lease")
	case o.Margin < 0 || o.Poll <= 0 || o.Period < 10*time.Millisecond:
		return fmt.Errorf("sim: margin must not be negative, poll must be positive, period at least 10ms")
	case o.Names < 0 || o.Names > 100:
		return fmt.Errorf("sim: names must be from 0 to 100, got %d", o.Names)
	case o.CatchUpMax < 0 || o.CatchUpMax > scheduler.MaxCatchUp:
		return fmt.Errorf("sim: catch-up max must be from 0 (no cap) to %d, got %d", scheduler.MaxCatchUp, o.CatchUpMax)
	case o.NoCatchUpCap && o.CatchUpMax == 0:
		return fmt.Errorf("sim: the no-catch-up-cap mutation needs a catch-up cap: catch-up max 1 or more")
	case o.Jitter < 0 || o.Jitter >= o.Period:
		return fmt.Errorf("sim: jitter must be from 0 to less than the period (%v), got %v", o.Period, o.Jitter)
	case o.NoJitter && o.Jitter == 0:
		return fmt.Errorf("sim: the no-jitter mutation needs a jitter")
	case o.IgnoreSuspension && !slices.Contains(o.Faults, Operator):
		return fmt.Errorf("sim: the ignore-suspension mutation needs the operator faults, which suspend the job")
	}
	if _, err := ParseSessionMode(string(o.Sessions)); err != nil {
		return err
	}
	if _, err := ParseBalanceMode(string(o.Balance)); err != nil {
		return err
	}
	if o.Balance == BalanceOn && o.Sessions != SessionsOn && o.Sessions != SessionsSeeded {
		return fmt.Errorf("sim: balance on needs every node to hold its names through a session: sessions on (or seeded), got %s", o.Sessions)
	}
	if o.NoPull && o.Balance == BalanceOff {
		return fmt.Errorf("sim: the no-pull mutation needs balanced seeds: balance on or seeded")
	}
	return nil
}

// Settle is how long after the last fault every period due must be done:
// a lease plus 2e for a takeover, and two polls.
func (o Options) Settle() time.Duration { return o.Lease + 2*o.Margin + 2*o.Poll + o.Jitter }

// Result is one seed's run.
type Result struct {
	Seed      uint64
	Events    int
	Checks    int
	Faults    map[vcluster.FaultKind]int
	Rejected  int  // stale writes refused by fences
	Beyond    bool // a clock ran beyond the margin in this seed
	Periods   int  // periods checked for liveness
	Balanced  bool // the seed ran balanced (and, without a violation, ended balanced)
	Hostile   bool // the seed ran at the edges of the ranges (hostile.go)
	Simulated time.Duration
	Violation error
}

// Run runs one seed.
func Run(ctx context.Context, o Options, seed uint64) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Seed: seed}
	o, plant := hostile(o, seed)
	// One business day per period: Every(24h) in wall time.
	every, _ := schedule.Every(24*time.Hour, 0)
	clock := vcluster.NewClock(o.Period)
	st := memstore.New(memstore.WithTime(clock.Now))
	faults, latency, beyond := draw(o, seed)
	v := drawVariant(o, seed)
	c := vcluster.Config{
		Nodes: o.Nodes, Lease: o.Lease, Renew: o.Renew, Margin: o.Margin, Poll: o.Poll, WorkPoll: o.Period,
		Latency: latency, WorkLatency: true, Day: o.Period,
		Fence: !o.NoFence, Persistent: true, Schedule: every, InvoiceLines: 3,
		Store: st, Resource: vcluster.NewMemResource(), Faults: faults, End: o.Duration,
		Check: true, Trace: o.Trace, Clock: clock, Plant: plant,
	}
	c.Names, c.Sessions, c.Notify, c.CallLatency, c.Balance = o.Names, v.sessions, v.notify, v.callLatency, v.balance
	c.Mutate = vcluster.Mutation{NoValidCheck: o.NoValidCheck, UnfencedLedger: o.UnfencedLedger,
		NoSessionMargin: o.NoSessionMargin, SessionNameExpiry: o.SessionNameExpiry, NoPull: o.NoPull,
		WrapDeadline: o.WrapDeadline, NoCatchUpCap: o.NoCatchUpCap, NoJitter: o.NoJitter,
		IgnoreSuspension: o.IgnoreSuspension}
	c.Policy = scheduler.Policy{Max: o.CatchUpMax, Jitter: vcluster.Calendar{Day: o.Period}.Business(o.Jitter)}
	if o.Trace != nil {
		var kinds []string
		for i, on := range v.sessions {
			kinds = append(kinds, fmt.Sprintf("node-%d %s", i, map[bool]string{true: "session", false: "inline"}[on]))
		}
		onOff := map[bool]string{true: "on", false: "off"}
		fmt.Fprintf(o.Trace, "%d names besides %s; %s; balanced %s; change notifications %s; store latency %v, election requests travel it %s\n",
			o.Names, vcluster.Job, strings.Join(kinds, ", "), onOff[v.balance], onOff[v.notify], latency, onOff[v.callLatency])
		if o.hostile {
			fmt.Fprintf(o.Trace, "hostile: lease %v, renew %v, margin %v, poll %v, period %v, %v simulated; planted %d records, held: %v\n",
				o.Lease, o.Renew, o.Margin, o.Poll, o.Period, o.Duration, len(plant), planted(plant))
		}
	}
	res.Balanced, res.Hostile, res.Simulated = v.balance, o.hostile, o.Duration
	if o.NoMargin {
		c.Margin, c.CheckMargin = 0, o.Margin
	}
	out, err := vcluster.Run(ctx, c)
	if err != nil {
		return res, err
	}
	res.Events, res.Checks, res.Faults, res.Rejected, res.Beyond = out.Events, out.Checks, out.FaultsInjected, out.Rejected, beyond
	res.Violation = out.Violation
	if res.Violation == nil {
		res.Violation = liveness(ctx, o, c, st, &res)
	}
	damaged := planted(plant)
	if res.Violation == nil {
		res.Violation = untouched(ctx, o, st, plant)
	}
	if res.Violation == nil {
		// Every name is held at the end, long after the last fault.
		for i := 0; i <= o.Names; i++ {
			name := vcluster.Job
			if i > 0 {
				name = fmt.Sprintf("shard-%d", i)
			}
			if slices.Contains(damaged, name) {
				continue // checked by untouched
			}
			if out.HeldAtEnd[name] != 1 {
				res.Violation = &vcluster.Violation{At: o.Duration.Seconds(), Invariant: fmt.Sprintf(
					"liveness: %s is held by %d nodes at the end, %v after the last fault", name, out.HeldAtEnd[name], o.Duration/4)}
				break
			}
		}
	}
	if res.Violation == nil && v.balance {
		res.Violation = balanced(o, out, len(damaged))
	}
	return res, nil
}

// balanced: at the end, long after the last fault, every live node of a
// balanced run holds N/P of the N names rounded down or up (P the live
// nodes), which is where the pull rule stops: no node holds two more than
// another.
func balanced(o Options, out vcluster.Outcome, damaged int) error {
	n, p := o.Names+1-damaged, 0
	for _, h := range out.HeldByNode {
		if h >= 0 {
			p++
		}
	}
	if p == 0 {
		return nil
	}
	lo, hi := n/p, (n+p-1)/p
	for i, h := range out.HeldByNode {
		if h >= 0 && (h < lo || h > hi) {
			return &vcluster.Violation{At: o.Duration.Seconds(), Invariant: fmt.Sprintf(
				"balance: %d names on %d live nodes held %v per node at the end, %v after the last fault; node-%d holds %d, want %d to %d",
				n, p, out.HeldByNode, o.Duration/4, i, h, lo, hi)}
		}
	}
	return nil
}

// untouched: every planted record that is held (damaged) is as it was
// planted at the end: no node took it over or wrote it free.
func untouched(ctx context.Context, o Options, st store.Store, plant []store.Record) error {
	for _, p := range plant {
		if p.Free() {
			continue
		}
		r, err := st.Get(ctx, p.Name)
		if err != nil {
			return err
		}
		if r.Holder != p.Holder || r.Token != p.Token || r.Lease != p.Lease {
			return &vcluster.Violation{At: o.Duration.Seconds(), Invariant: fmt.Sprintf(
				"damaged record %s (lease %v) was written: holder %q token %d, planted %q token %d", p.Name, p.Lease, r.Holder, r.Token, p.Holder, p.Token)}
		}
	}
	return nil
}

// liveness: every period due by Duration - Settle - the catch-up time is
// done. The fault schedule heals everything by then (see draw).
func liveness(ctx context.Context, o Options, c vcluster.Config, st store.Store, res *Result) error {
	rows, err := st.Runs(ctx, vcluster.Job, "", 0)
	if err != nil {
		return err
	}
	// A period skipped by the catch-up cap counts: the checker verified
	// the skip against the cap when it was written.
	done := map[string]bool{}
	for _, r := range rows {
		if r.State == store.Done || (r.State == store.Skipped && strings.Contains(r.Output, "outside the catch-up window: ")) {
			done[r.Period] = true
		}
	}
	every, _ := schedule.Every(24*time.Hour, 0)
	// After the heal the new leader works off the backlog one period at a
	// time, four store round trips each (read the job, read the ledger,
	// claim, complete): at worst every period due by then.
	heal := o.Duration * 3 / 4
	catchUp := time.Duration(heal/o.Period+1) * 8 * c.Latency
	limit := c.Wall(o.Duration - o.Settle() - catchUp)
	for w := every.Next(vcluster.Epoch); !w.After(limit); w = every.Next(w) {
		res.Periods++
		if k := schedule.Key(w); !done[k] {
			return &vcluster.Violation{At: o.Duration.Seconds(), Invariant: fmt.Sprintf(
				"liveness: period %s (due at %.3fs) was not done %v after the last fault", k, c.Virtual(w).Seconds(), o.Settle()+catchUp)}
		}
	}
	return nil
}

// variant is how a seed's cluster runs its names.
type variant struct {
	sessions    []bool // per node: holds its names through a session
	notify      bool   // change notifications (else polling alone, as when a watch is broken)
	callLatency bool   // election requests travel the latency before the store applies them
	balance     bool   // balanced holding (every node through a session)
}

// drawVariant says which nodes of a seed hold their names through a
// session, whether the nodes get change notifications and whether the
// election's requests, not only its answers, take the store's latency
// (each half the seeds). It draws from a stream of its own, so that a
// seed's fault schedule does not depend on it.
func drawVariant(o Options, seed uint64) variant {
	// Consecutive seeds make correlated first draws of a PCG: mix the seed.
	rng := rand.New(rand.NewPCG(mix(seed), 0x73657373696f6e)) // "session"
	mode := o.Sessions
	if mode == SessionsSeeded {
		mode = []SessionMode{SessionsOn, SessionsOff, SessionsMixed}[rng.IntN(3)]
		if o.Balance == BalanceOn {
			mode = SessionsOn
		}
	}
	on := make([]bool, o.Nodes)
	switch mode {
	case SessionsOn:
		for i := range on {
			on[i] = true
		}
	case SessionsMixed:
		for i := range on {
			on[i] = rng.IntN(2) == 0
		}
		if o.Nodes > 1 && !slices.Contains(on, true) {
			on[rng.IntN(o.Nodes)] = true
		}
		if o.Nodes > 1 && !slices.Contains(on, false) {
			on[rng.IntN(o.Nodes)] = false
		}
	}
	v := variant{sessions: on, notify: rng.IntN(2) == 0, callLatency: rng.IntN(2) == 0}
	// Drawn last, so that the draws above stay what they were before
	// balanced runs existed.
	v.balance = mode == SessionsOn && (o.Balance == BalanceOn || o.Balance == BalanceSeeded && rng.IntN(2) == 0)
	return v
}

// drawSuspension draws, in a quarter of the seeds, an operator's
// suspension of the job and its resume (from a stream of its own, so that
// the other faults of a seed stay as they were): suspended from between
// 10% and 35% of the run for 5% to 25% of it, resumed well before the
// heal, so that the periods due meanwhile are caught up before the end.
func drawSuspension(o Options, seed uint64) []vcluster.Fault {
	rng := rand.New(rand.NewPCG(mix(seed), 0x73757370656e64)) // "suspend"
	if rng.IntN(4) != 0 {
		return nil
	}
	t := o.Duration/10 + time.Duration(rng.Int64N(int64(o.Duration/4)))
	d := o.Duration/20 + time.Duration(rng.Int64N(int64(o.Duration/5)))
	return []vcluster.Fault{{At: t, Kind: vcluster.Suspend}, {At: t + d, Kind: vcluster.Resume}}
}

// mix is SplitMix64's finalizer: nearby seeds give distant states.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// draw makes the fault schedule of a seed. Faults begin and end within the
// first 70% of the run; at 75% everything is healed, so the rest of the run
// shows liveness.
func draw(o Options, seed uint64) (faults []vcluster.Fault, latency time.Duration, beyond bool) {
	rng := rand.New(rand.NewPCG(seed, 0x62617a6f6e))        // "baton"
	names := rand.New(rand.NewPCG(mix(seed), 0x6e616d6573)) // "names"
	// The store's one-way latency: a local store to a distant one.
	latency = o.scaled(time.Duration(1+rng.IntN(100)) * time.Millisecond)
	window := o.Duration * 7 / 10
	at := func() time.Duration { return 2*o.Lease + time.Duration(rng.Int64N(int64(window-2*o.Lease))) }
	length := func() time.Duration {
		// Any length: most short, some longer than several leases.
		return time.Duration(rng.ExpFloat64() * float64(o.Lease))
	}
	node := func() int {
		if rng.IntN(2) == 0 {
			return 0 // the first leader, most often still leading
		}
		return rng.IntN(o.Nodes)
	}
	add := func(f vcluster.Fault) { faults = append(faults, f) }
	// Hostile is a kind of seed, not of episode (hostile.go): its seeds
	// draw their episodes from the other classes.
	classes := slices.DeleteFunc(slices.Clone(o.Faults), func(c FaultClass) bool { return c == Hostile })
	if len(classes) == 0 && len(o.Faults) > 0 {
		classes = slices.DeleteFunc(slices.Clone(AllFaults), func(c FaultClass) bool { return c == Hostile })
	}
	episodes := 1 + rng.IntN(10)
	for i := 0; i < episodes && len(classes) > 0; i++ {
		class := classes[rng.IntN(len(classes))]
		t, d, n := at(), length(), node()
		switch class {
		case Partition:
			add(vcluster.Fault{At: t, Node: n, Kind: vcluster.Cut})
			add(vcluster.Fault{At: t + d, Node: n, Kind: vcluster.Reconnect})
		case Pause:
			add(vcluster.Fault{At: t, Node: n, Kind: vcluster.Freeze})
			add(vcluster.Fault{At: t + d, Node: n, Kind: vcluster.Thaw})
		case PauseBeforeEffect:
			// Frozen after the Valid() check (only fencing stops the
			// write that follows), just before it (the check must stop
			// the effect), or with a ledger call in flight (its answer
			// leads to writes under the old token: the ledger's fence
			// stops them).
			arm := []vcluster.FaultKind{vcluster.ArmFreeze, vcluster.ArmPause, vcluster.ArmPauseInFlight}[rng.IntN(3)]
			add(vcluster.Fault{At: t, Node: n, Kind: arm})
			add(vcluster.Fault{At: t + d + o.Lease, Node: n, Kind: vcluster.Disarm})
		case Crash:
			add(vcluster.Fault{At: t, Node: n, Kind: vcluster.Crash})
			add(vcluster.Fault{At: t + d, Node: n, Kind: vcluster.Restart})
		case Drift:
			// Within the margin most of the time, beyond it sometimes.
			bound := float64(o.Margin) / float64(o.Lease) // rates 1±bound stay within (1+b)/(1-b) < 1+2e/lease for small b
			dev := rng.Float64() * bound * 0.9
			if rng.IntN(4) == 0 {
				dev = bound * (2 + 8*rng.Float64())
				beyond = true
			}
			rate := 1 + dev
			if rng.IntN(2) == 0 {
				rate = 1 - min(dev, 0.5)
			}
			add(vcluster.Fault{At: t, Node: n, Kind: vcluster.SetRate, Rate: rate})
			add(vcluster.Fault{At: t + d + o.Lease, Node: n, Kind: vcluster.SetRate, Rate: 1})
		case StoreOutage:
			for x := 0; x < o.Nodes; x++ {
				add(vcluster.Fault{At: t, Node: x, Kind: vcluster.Cut})
				add(vcluster.Fault{At: t + d, Node: x, Kind: vcluster.Reconnect})
			}
		case SlowStore:
			lat := o.scaled(time.Duration(1+rng.IntN(1000)) * time.Millisecond * time.Duration(1+rng.IntN(3)))
			add(vcluster.Fault{At: t, Node: n, Kind: vcluster.SetLatency, Latency: lat})
			add(vcluster.Fault{At: t + d, Node: n, Kind: vcluster.SetLatency, Latency: latency})
		case Operator:
			// The job's name half the time, else one of the others (drawn
			// from a stream of its own: the job's schedule stays the same
			// whatever the number of names).
			name := 0
			if o.Names > 0 && names.IntN(2) == 0 {
				name = 1 + names.IntN(o.Names)
			}
			resign, all := rng.IntN(2) == 0, names.IntN(4) == 0
			if resign || all {
				kind := vcluster.Resign
				if all {
					kind = vcluster.ResignAll // the process gives every name up at once
				}
				add(vcluster.Fault{At: t, Node: n, Kind: kind, Name: name})
			} else {
				add(vcluster.Fault{At: t, Node: n, Kind: vcluster.Transfer, To: rng.IntN(o.Nodes), Name: name})
			}
		case Skew:
			// A leader stops at the worst moment. Node n's clock runs slow
			// and every other fast, their ratio close to the largest the
			// margin covers; then n stops renewing. If n leads, its term
			// stays valid by its slow clock until its last renewal's send
			// time + lease, while a fast contender counts lease + 2e from
			// when it read that renewal: a takeover that waits only the
			// lease lands inside n's term unless store round trips make up
			// for the margin, so the store answers within a few
			// milliseconds while n is cut off or frozen. Or n freezes at
			// its next ledger call (within a period), the call in flight,
			// and wakes about when a contender takes over, the others'
			// store replies slow: the call's answer leads to ledger writes
			// under the old token, which only the ledger's fence refuses
			// while the successor holds the term but has not written yet.
			ratio := 1 + 2*float64(o.Margin)/float64(o.Lease)*(0.6+0.35*rng.Float64())
			if o.hostile {
				// At the very edge of what the margin covers.
				ratio = 1 + 2*float64(o.Margin)/float64(o.Lease)*(1-1e-9)
			}
			slow, fast := 1/math.Sqrt(ratio), math.Sqrt(ratio)
			stop := t + time.Duration(rng.Int64N(int64(o.Renew)))
			end := stop + o.Lease + 2*o.Margin + d
			lat, inFlight := o.scaled(time.Duration(1+rng.IntN(5))*time.Millisecond), false
			switch rng.IntN(3) {
			case 0:
				add(vcluster.Fault{At: stop, Node: n, Kind: vcluster.Cut})
				add(vcluster.Fault{At: end, Node: n, Kind: vcluster.Reconnect})
			case 1:
				add(vcluster.Fault{At: stop, Node: n, Kind: vcluster.Freeze})
				add(vcluster.Fault{At: end, Node: n, Kind: vcluster.Thaw})
			default:
				end = stop + o.Lease + 2*o.Margin + time.Duration(rng.Int64N(int64(o.Renew)))
				lat, inFlight = o.scaled(time.Duration(100+rng.IntN(200))*time.Millisecond), true
				add(vcluster.Fault{At: stop, Node: n, Kind: vcluster.ArmPauseInFlight})
				add(vcluster.Fault{At: end, Node: n, Kind: vcluster.Disarm})
			}
			for x := 0; x < o.Nodes; x++ {
				rate := fast
				if x == n {
					rate = slow
				}
				add(vcluster.Fault{At: t, Node: x, Kind: vcluster.SetRate, Rate: rate})
				add(vcluster.Fault{At: end, Node: x, Kind: vcluster.SetRate, Rate: 1})
				if x != n || !inFlight {
					add(vcluster.Fault{At: t, Node: x, Kind: vcluster.SetLatency, Latency: lat})
					add(vcluster.Fault{At: end, Node: x, Kind: vcluster.SetLatency, Latency: latency})
				}
			}
		}
	}
	if slices.Contains(o.Faults, Operator) {
		faults = append(faults, drawSuspension(o, seed)...)
	}
	heal := o.Duration * 3 / 4
	for i, f := range faults {
		faults[i].At = min(f.At, heal) // episodes that would outlast the window end at the heal
	}
	for x := 0; x < o.Nodes; x++ {
		for _, k := range []vcluster.FaultKind{vcluster.Reconnect, vcluster.Thaw, vcluster.Disarm, vcluster.Restart} {
			add(vcluster.Fault{At: heal, Node: x, Kind: k})
		}
		add(vcluster.Fault{At: heal, Node: x, Kind: vcluster.SetRate, Rate: 1})
		add(vcluster.Fault{At: heal, Node: x, Kind: vcluster.SetLatency, Latency: latency})
	}
	return faults, latency, beyond
}

// ErrViolation is wrapped by Summary.Err when some seed violated an
// invariant.
var ErrViolation = errors.New("invariant violated")
