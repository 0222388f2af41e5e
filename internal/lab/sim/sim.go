// Package sim tests baton the way FoundationDB and TigerBeetle are tested:
// the real protocol code, many nodes, virtual time, random faults from a
// seed, every run checked, every failure replayable from its seed.
//
// Each seed draws a fault schedule: partitions between nodes and the store,
// pauses of any length (also between a Valid() check and a write), crashes
// and restarts as new incarnations, clock rates within the margin e and
// beyond it, store outages, slow store replies, operators' resignations
// and transfers, a leader stopping at the worst moment ("skew"), and, with
// the wall-clock guard on, wall clocks stepped off the store's (clock.go).
// The virtual cluster (internal/lab/vcluster) runs the real election machine (the
// election.Group that baton.Elector and baton.Group drive), the real
// scheduler machine (what schedule.Runner drives), a real store and the
// real fence under it and checks the invariants after every event; at the
// end it checks liveness: every period due early enough was completed.
//
// Every node campaigns for the job's name and Options.Names more (in a
// third of the unbalanced seeds, each node leaves each of those to the
// others a third of the time, every one keeping a candidate). Per seed
// (Options.Sessions), every node holds its names through one session
// record (baton.Group), or each on its own record (baton.Elector), or the
// nodes are mixed, so both kinds of holder contend for the same names; a
// seed also draws whether change notifications arrive (else polling
// alone), and, in a fifth of the seeds with them and a session node, a
// client of the store that forges notifications of every session record
// nobody renewed for half a lease (vcluster.Config.Forge), and whether
// the election's requests, not only its answers, take the store's
// latency. For every name, at no moment may two nodes hold a term that
// their own clocks say is valid. The store's latency is drawn per
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
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

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
	// Covered counts what the seed exercised of the job's rules.
	Covered vcluster.Coverage
	// Suspended and Backfills say whether the seed suspended the job and
	// how many backfills it drew.
	Suspended bool
	Backfills int
	// Prefer says whether the seed drew a preference policy (Options.Prefer).
	Prefer    bool
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
	mopts := []memstore.Option{memstore.WithTime(clock.Now)}
	if o.Mutate.Work.IgnoreSuspension {
		// The rule lives in the store: the mutation breaks it there too.
		mopts = append(mopts, memstore.WithoutSuspensionCheck())
	}
	if o.Mutate.Succession != (memstore.SuccessionMutation{}) {
		mopts = append(mopts, memstore.WithSuccessionMutation(o.Mutate.Succession))
	}
	st := memstore.New(mopts...)
	faults, latency, beyond := draw(o, seed)
	v := drawVariant(o, seed)
	w := drawWork(o, seed)
	g := drawClock(o, seed)
	faults = append(faults, w.backfills...)
	faults = append(faults, g.steps...)
	faults = append(faults, drawStaleWrite(o, seed, v, latency)...)
	faults = append(faults, drawFeedBreak(o, seed, v)...)
	faults = append(faults, drawLockFreeze(o, seed)...)
	c := vcluster.Config{
		Nodes: o.Nodes, Lease: o.Lease, Renew: o.Renew, Margin: o.Margin, Poll: o.Poll, WorkPoll: o.Period,
		Latency: latency, WorkLatency: true, Day: o.Period,
		Fence: !o.NoFence, Persistent: true, Schedule: every, InvoiceLines: 3,
		Store: st, Resource: vcluster.NewMemResource(), Faults: faults, End: o.Duration,
		Check: true, Trace: o.Trace, Clock: clock, Plant: plant, DamagedRows: damagedRows(o, seed),
	}
	c.Names, c.Sessions, c.Notify, c.CallLatency, c.Balance = o.Names, v.sessions, v.notify, v.callLatency, v.balance
	c.TakeStep, c.Succession, c.Ignores, c.FeedLag = v.takeStep, v.succession, v.ignores, v.feedLag
	c.Forge = drawForge(seed, v)
	c.Collect = drawCollect(o, seed, v, latency)
	c.Mutate = o.Mutate
	c.Prefer, c.Hysteresis, c.Attrs, c.Upgraded = drawPrefer(o, seed, v)
	c.Shares = drawShares(o, seed, v)
	if c.Shares != nil {
		// Weighted moves chain (a Group that took a name may then be over
		// its share as another sees it, and hand one on), each up to a
		// lease without change notifications: a quiet end of five leases
		// ended some seeds mid-chain (3 of 600 with 12 or 31 names;
		// none with ten more).
		c.End += SharesSettle * o.Lease
	}
	c.SupervisorRecords = o.SupervisorRecords
	if o.SupervisorRecords {
		c.TakeoverGrace = takeoverGrace(o)
	}
	c.Policy = w.policy
	c.Policy.Max, c.Policy.Jitter = o.CatchUpMax, vcluster.Calendar{Day: o.Period}.Business(o.Jitter)
	c.Retention, c.PruneEvery, c.PruneBatch, c.Effect = w.retention, w.pruneEvery, w.pruneBatch, w.effect
	c.ClockTolerance, c.ClockStepDown = g.tolerance, g.stepDown
	if o.Trace != nil {
		var kinds []string
		for i, on := range v.sessions {
			kinds = append(kinds, fmt.Sprintf("node-%d %s", i, map[bool]string{true: "session", false: "inline"}[on]))
		}
		onOff := map[bool]string{true: "on", false: "off"}
		fmt.Fprintf(o.Trace, "%d names besides %s; %s; balanced %s; change notifications %s; store latency %v, election requests travel it %s; takeovers %s names a step; succession %s\n",
			o.Names, vcluster.Job, strings.Join(kinds, ", "), onOff[v.balance], onOff[v.notify], latency, onOff[v.callLatency], takeStepText(v.takeStep), onOff[v.succession])
		if c.Shares != nil {
			fmt.Fprintf(o.Trace, "balanced by weight: %v\n", c.Shares)
		}
		if v.feedLag > 0 {
			fmt.Fprintf(o.Trace, "the change feed lags the store by %v\n", v.feedLag)
		}
		if c.Prefer.Kind != election.PreferNone {
			fmt.Fprintf(o.Trace, "%s\n", c.PreferTrace())
		}
		if c.Forge {
			fmt.Fprintf(o.Trace, "a client of the store forges notifications of every session record nobody renewed for half a lease\n")
		}
		for n, ignored := range v.ignores {
			var names []string
			for i, ig := range ignored {
				if ig {
					names = append(names, fmt.Sprintf("shard-%d", i))
				}
			}
			if len(names) > 0 {
				fmt.Fprintf(o.Trace, "node-%d does not campaign for %s\n", n, strings.Join(names, ", "))
			}
		}
		fmt.Fprintf(o.Trace, "policy: catch-up %s, max %d, window %v, overlap %s, jitter %v, %d retries (backoff %v), timeout %v; retention %+v; runs take time %s (longest %v); %d backfills\n",
			c.Policy.CatchUp, c.Policy.Max, c.Policy.Window, c.Policy.Overlap, c.Policy.Jitter, c.Policy.Retries, c.Policy.RetryBackoff,
			c.Policy.Timeout, c.Retention, onOff[w.effect != nil], w.longest, len(w.backfills))
		if c.Collect.Every > 0 {
			prompt := "none"
			if c.Collect.After != nil {
				prompt = fmt.Sprintf("within %v", 4*latency)
			}
			fmt.Fprintf(o.Trace, "collection: a pass every %v, after each succession %s; %d names a settle\n", c.Collect.Every, prompt, c.Collect.Page)
		}
		if g.tolerance > 0 {
			fmt.Fprintf(o.Trace, "clock guard: tolerance %v, step-down %v (business time); %d clock steps\n", g.tolerance, g.stepDown, (len(g.steps)-o.Nodes)/2)
		}
		if o.hostile {
			fmt.Fprintf(o.Trace, "hostile: lease %v, renew %v, margin %v, poll %v, period %v, %v simulated; planted %d records, held: %v\n",
				o.Lease, o.Renew, o.Margin, o.Poll, o.Period, o.Duration, len(plant), planted(plant))
			for _, d := range c.DamagedRows {
				fmt.Fprintf(o.Trace, "hostile: the store hands out a damaged ledger row %s in state %q: no period is run, none is written\n", d.Period, d.State)
			}
		}
	}
	res.Balanced, res.Hostile, res.Simulated = v.balance, o.hostile, c.End
	res.Prefer = c.Prefer.Kind != election.PreferNone
	if o.NoMargin {
		c.Margin, c.CheckMargin = 0, o.Margin
	}
	out, err := vcluster.Run(ctx, c)
	if err != nil {
		return res, err
	}
	res.Events, res.Checks, res.Faults, res.Rejected, res.Beyond = out.Events, out.Checks, out.FaultsInjected, out.Rejected, beyond
	res.Violation, res.Covered, res.Backfills = out.Violation, out.Covered, len(w.backfills)
	res.Suspended = out.FaultsInjected[vcluster.Suspend] > 0
	if res.Violation == nil && len(c.DamagedRows) == 0 {
		// With a damaged row every leader's work ends at its first read
		// of the ledger (checkDamaged judges that it never writes it).
		res.Violation = liveness(o, c, w, out, &res)
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
		res.Violation = balanced(o, out, len(damaged), c.Shares, c.End)
	}
	return res, nil
}

// balanced: at the end, long after the last fault, every live node of a
// balanced run holds N/P of the N names rounded down or up (P the live
// nodes), which is where the pull rule stops: no node holds two more than
// another. With weights (shares, one a node), every live node holds
// N*w/W rounded down or up instead, W the live nodes' weights. The check
// is vcluster.Unbalanced, the explorer's too.
func balanced(o Options, out vcluster.Outcome, damaged int, shares []int, end time.Duration) error {
	n := o.Names + 1 - damaged
	p, what := vcluster.Unbalanced(out.HeldByNode, n, shares)
	switch {
	case what == "":
		return nil
	case shares != nil:
		return &vcluster.Violation{At: end.Seconds(), Invariant: fmt.Sprintf(
			"balance: %d names on nodes of weights %v held %v per node at the end (-1: down), %v after the last fault; %s",
			n, shares, out.HeldByNode, end-o.Duration*3/4, what)}
	}
	return &vcluster.Violation{At: o.Duration.Seconds(), Invariant: fmt.Sprintf(
		"balance: %d names on %d live nodes held %v per node at the end, %v after the last fault; %s",
		n, p, out.HeldByNode, o.Duration/4, what)}
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
// finished: done, failed (its retries spent or given up by the policy) or
// skipped by the policy (the checker verified every skip when it was
// written); and every period a backfill made pending early enough was run
// again. The fault schedule heals everything by then (see draw), and runs
// are short after the heal (drawWork). A finished period counts also when
// retention has pruned its row since (Outcome.Finished).
func liveness(o Options, c vcluster.Config, w work, out vcluster.Outcome, res *Result) error {
	every, _ := schedule.Every(24*time.Hour, 0)
	// After the heal the new leader works off the backlog one period at a
	// time, four store round trips each (read the job, read the ledger,
	// claim, complete): at worst every period due by then; a run still
	// going at the heal, and the runs queued behind it, take w.slack more.
	// The judgement (what finishes a period, the bounds) is vcluster's,
	// the explorer's too.
	heal := o.Duration * 3 / 4
	catchUp := vcluster.CatchUp(int(heal/o.Period+1), c.Latency, w.slack)
	limit := c.Wall(o.Duration - o.Settle() - catchUp)
	k, t, n := vcluster.Unfinished(every, vcluster.Epoch, limit, func(k string) bool { return out.Finished[k].State != "" })
	res.Periods += n
	if k != "" {
		return &vcluster.Violation{At: o.Duration.Seconds(), Invariant: fmt.Sprintf(
			"liveness: period %s (due at %.3fs) was not finished %v after the last fault", k, c.Virtual(t).Seconds(), o.Settle()+catchUp)}
	}
	keys := make([]string, 0, len(out.Backfilled))
	for k := range out.Backfilled {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		at := out.Backfilled[k]
		if at+o.Settle()+catchUp+time.Duration(len(keys))*(w.longest+o.Period) > o.Duration {
			continue
		}
		if f := out.Finished[k]; f.State != store.Done && f.State != store.Failed {
			return &vcluster.Violation{At: o.Duration.Seconds(), Invariant: fmt.Sprintf(
				"backfill: period %s, made pending at %.3fs, was not run again by the end (%q)", k, at.Seconds(), f.State)}
		}
	}
	return nil
}

// ErrViolation is wrapped by Summary.Err when some seed violated an
// invariant.
var ErrViolation = errors.New("invariant violated")
