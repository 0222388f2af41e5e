package sim

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store/memstore"
)

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
	ClockStep         FaultClass = "clock-step"          // the wall-clock guard on, and nodes' wall clocks stepped off the store's, within its tolerance and beyond (clock.go)
)

// AllFaults lists every fault class.
var AllFaults = []FaultClass{Partition, Pause, PauseBeforeEffect, Crash, Drift, StoreOutage, SlowStore, Operator, Skew, Hostile, ClockStep}

// SharesSettle is how many leases longer than Duration a seed that draws
// weights (Shares) runs, with no fault, before the check of its shares.
const SharesSettle = 10

// The balance modes.
const (
	// BalanceSeeded runs half of the seeds whose nodes all hold their
	// names through a session balanced.
	BalanceSeeded BalanceMode = "seeded"
	BalanceOn     BalanceMode = "on"  // every seed balanced (sessions on)
	BalanceOff    BalanceMode = "off" // no seed balanced
)

// The session modes.
const (
	// SessionsSeeded draws the mode per seed: a third of the seeds run
	// SessionsOn, a third SessionsOff, a third SessionsMixed.
	SessionsSeeded SessionMode = "seeded"
	SessionsOn     SessionMode = "on"    // every node holds its names through a session
	SessionsOff    SessionMode = "off"   // every node renews each name's own record
	SessionsMixed  SessionMode = "mixed" // each node one way or the other, both kinds present
)

// FaultClass is a family of faults a seed may draw.
type FaultClass string

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
	// Mutate turns protections of the machines off (baton sim --mutate
	// NAME sets one; its --help lists them): each is a mutation
	// whose check must then find a violation. Some need the seeds to
	// draw what they break, and Validate says which: a catch-up cap
	// (CatchUpMax) for Work.NoCatchUpCap, a jitter for Work.NoJitter and
	// Work.NodeJitter, the operator faults for Work.IgnoreSuspension
	// (with the in-memory store's own check off too:
	// memstore.WithoutSuspensionCheck), Work.StickySuspension and
	// Work.NoManualExempt, the
	// clock-step faults for Work.NoClockGuard and Work.NoStepDown, balanced
	// seeds for Election.NoPull, and with Shares for Election.NoShares. The seeds draw the rest in a share of
	// runs: overlap skip and runs longer than the period in half of them,
	// retries and failing runs, timeouts that long runs outlast, a
	// retention (with failed rows for Work.PruneFailed), hostile records
	// for Election.WrapDeadline.
	Mutate vcluster.Mutation
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
	// Shares makes every balanced seed draw each node's weight, 1 to 4
	// (election.Config.Share, baton.WithShare); at the end, for every two
	// live nodes, no name moved from one to the other may bring them
	// closer to holding in proportion to their weights, unless the one
	// taking it holds N*w/W rounded up already (W the live nodes'
	// weights). A seed that draws weights runs SharesSettle leases
	// longer, all of them quiet. Off by default, so that every seed runs
	// as before weights existed.
	Shares bool
	// CatchUpMax is the job's catch-up cap (scheduler.Policy.Max): after a
	// leaderless stretch only the newest CatchUpMax missed periods run;
	// older ones are skipped, and the checker verifies every claim and
	// skip against the cap. 0: no cap.
	CatchUpMax int
	// Jitter is the job's jitter in virtual time (a fraction of Period):
	// every period's first claim waits a delay in [0, Jitter] derived
	// from the job's name and the period key, and the checker verifies
	// that no claim comes earlier. 0: none.
	Jitter time.Duration
	// NoSuccession keeps every seed from ending dead sessions by
	// succession (election.Config.Succession), which half the unbalanced
	// seeds with a session node draw otherwise.
	NoSuccession bool
	// SupervisorRecords makes every run's own process record its success
	// the moment it ends, before its node's machine is told, as baton
	// run's supervisor does (vcluster.Config.SupervisorRecords), with
	// the nodes' takeover grace (the renew interval) that baton run sets;
	// with the pause faults, half the seeds then also freeze a leader
	// holding the store's write lock as its run starts (drawLockFreeze).
	// The no-own-completion, no-takeover-grace and token-fenced-record
	// mutations need it.
	SupervisorRecords bool
	// Prefer says which seeds draw a preference policy for the job
	// (vcluster.Config.Prefer, docs/prefer.md): none (PreferOff, the
	// default, so that every seed runs as before preferences existed), a
	// third of those that can (PreferSeeded) or all of them (PreferOn).
	// A seed can when it is neither balanced nor hostile, its quiet end
	// (a quarter of Duration) lasts five leases or more (time for a
	// failover, the hysteresis and the handover before the end), and its
	// change feed lags by less than half a lease (drawPrefer).
	Prefer PreferMode
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

// PreferMode says which seeds of a run draw a preference policy.
type PreferMode string

// The preference modes.
const (
	PreferOff    PreferMode = "off"
	PreferSeeded PreferMode = "seeded"
	PreferOn     PreferMode = "on"
)

// ParsePreferMode parses a --prefer value.
func ParsePreferMode(s string) (PreferMode, error) {
	switch m := PreferMode(s); m {
	case PreferOff, PreferSeeded, PreferOn:
		return m, nil
	}
	return "", fmt.Errorf("unknown preference mode %q: want off, seeded or on", s)
}

// BalanceMode says which seeds of a run are balanced.
type BalanceMode string

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
		Jitter: 250 * time.Millisecond, Prefer: PreferOff,
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
	case o.Mutate.Work.NoCatchUpCap && o.CatchUpMax == 0:
		return fmt.Errorf("sim: the no-catch-up-cap mutation needs a catch-up cap: catch-up max 1 or more")
	case o.Jitter < 0 || o.Jitter >= o.Period:
		return fmt.Errorf("sim: jitter must be from 0 to less than the period (%v), got %v", o.Period, o.Jitter)
	case (o.Mutate.Work.NoJitter || o.Mutate.Work.NodeJitter) && o.Jitter == 0:
		return fmt.Errorf("sim: the no-jitter and node-jitter mutations need a jitter")
	case o.Mutate.Work.IgnoreSuspension && !slices.Contains(o.Faults, Operator):
		return fmt.Errorf("sim: the ignore-suspension mutation needs the operator faults, which suspend the job")
	case o.Mutate.Work.StickySuspension && !slices.Contains(o.Faults, Operator):
		return fmt.Errorf("sim: the sticky-suspension mutation needs the operator faults, which suspend and resume the job")
	case o.Mutate.Work.NoManualExempt && !slices.Contains(o.Faults, Operator):
		return fmt.Errorf("sim: the no-manual-exempt mutation needs the operator faults, which backfill")
	case (o.Mutate.Work.NoTakeoverGrace || o.Mutate.TokenFencedRecord) && (!o.SupervisorRecords || !slices.Contains(o.Faults, Pause)):
		return fmt.Errorf("sim: the no-takeover-grace and token-fenced-record mutations need the supervisor's records (--supervisor-records) and the pause faults, which freeze a leader holding the store's write lock")
	case o.Mutate.Work.NoOwnCompletion && !o.SupervisorRecords:
		return fmt.Errorf("sim: the no-own-completion mutation needs the supervisor's records (--supervisor-records), which finish a row before its machine does")
	case (o.Mutate.Work.NoClockGuard || o.Mutate.Work.NoStepDown) && !slices.Contains(o.Faults, ClockStep):
		return fmt.Errorf("sim: the no-clock-guard and no-step-down mutations need the clock-step faults, which turn the clock guard on")
	}
	if _, err := ParseSessionMode(string(o.Sessions)); err != nil {
		return err
	}
	if _, err := ParseBalanceMode(string(o.Balance)); err != nil {
		return err
	}
	if _, err := ParsePreferMode(string(o.Prefer)); err != nil {
		return err
	}
	if (o.Mutate.Election.NoSafePoint || o.Mutate.Election.NoHysteresis || o.Mutate.Election.NoDefer) && (o.Prefer == PreferOff || o.Balance == BalanceOn || o.Duration < 20*o.Lease) {
		return fmt.Errorf("sim: the prefer mutations need seeds that draw a preference: prefer seeded or on, balance not on, a duration of 20 leases or more")
	}
	if o.Balance == BalanceOn && o.Sessions != SessionsOn && o.Sessions != SessionsSeeded {
		return fmt.Errorf("sim: balance on needs every node to hold its names through a session: sessions on (or seeded), got %s", o.Sessions)
	}
	m := o.Mutate
	if (m.Succession != (memstore.SuccessionMutation{}) || m.Election.AdoptUnread || m.Election.AdoptUnsynced || m.Election.AdoptAcrossGap || m.Election.ListEnded || m.Election.ListNoRetry) &&
		(o.NoSuccession || o.Balance == BalanceOn || o.Sessions == SessionsOff) {
		return fmt.Errorf("sim: the succession mutations need seeds that end sessions by succession: sessions not off, balance not on, succession not turned off")
	}
	if o.Mutate.Election.NoShares && (o.Balance == BalanceOff || !o.Shares) {
		return fmt.Errorf("sim: the no-shares mutation needs balanced seeds that draw weights: balance on or seeded, and --shares")
	}
	if o.Mutate.Election.NoPull && o.Balance == BalanceOff {
		return fmt.Errorf("sim: the no-pull mutation needs balanced seeds: balance on or seeded")
	}
	return nil
}

// Settle is how long after the last fault every period due must be done:
// a lease plus 2e for a takeover, two polls and the jitter
// (vcluster.Settle, the explorer's bound too).
func (o Options) Settle() time.Duration {
	return vcluster.Settle(o.Lease, o.Margin, o.Poll, o.Jitter)
}
