//go:build !nolab

package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"runtime/debug"
	"strings"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/lab/sim"
)

const simAbout = `Runs the real election machine, the real scheduler machine (the work loop
schedule.Runner drives in production), store and fence on a virtual cluster
under a random fault schedule per seed, and checks after every event that for
every name at most one node holds a valid term (while clocks stay within the
margin), that election tokens only increase, that the store refuses no swap
as invalid, that no write lands with a token lower than
one already landed, that every ledger write carries the current token, that
no effect starts on a term that is not valid, that no period completes
twice, and at the end that every period due early enough was done and
that every name is held by exactly one node.

Every node campaigns for the job's name and --names more (shard-1 to
shard-N) through one election group, as baton.NewGroup does. With
--sessions on it holds them all through one session record (baton.Group),
with off it renews each name's own record (baton.Elector); seeded (the
default) draws per seed all on, all off, or mixed, so that both kinds of
holder contend for the same names. Every fault hits a node and so all its
names. A seed also draws whether change notifications arrive (else polling
alone; with them and a session holder, a fifth of the seeds add a client
that forges notifications of every session record nobody renewed for
half a lease, during every read of it, as anyone connected to a
PostgreSQL store may) and whether election requests, not only their
answers, travel the store's latency (a node cut off with a call out then loses the answer:
an unknown outcome). The first line of --trace says what the seed drew.

With --balance seeded (the default), half the seeds whose nodes all hold
their names through a session run balanced, as baton.WithBalance: the
nodes share the names by asking each other for handovers, and at the end
every live node must hold N/P of the N names rounded down or up (P live
nodes). With on, every seed runs so. Half the other seeds with a session
holder end dead sessions by succession (docs/succession.md): the node that
finds a session dead names its own session the successor in the write
that ends it, and every name held through the dead one passes to it
without a write per name; the summary counts those sessions and the
terms taken from them. Half of those whose election requests travel the
latency also slow a session node's store to twice the lease just before
it resigns a name: its release is still out when its session is passed
on, and must then conflict. In every seed with a session holder, the
session nodes collect dead session records as baton.Group does: a pass
settles the names a succession passed on onto the successor (a few a
call), then deletes the dead session; half those seeds start a pass just
after every succession, half only every 8 to 20 leases, so that names are
passed on twice before they are settled. The summary counts the names
settled, the sessions deleted and the longest chain of successions.

The same seed gives the same run, event for event. On a violation it prints
the seed and the invariant and exits 1; --seed S --trace replays that seed
with its failover trace.

Fault classes: partition, pause, pause-before-effect (just before or after
the Valid() check, or with a ledger call in flight), crash, drift (within
the margin and beyond it), store-outage, slow-store, operator (resignations
and transfers), skew (a leader stops at the worst moment: its clock slow and
the others' fast at the edge of the margin with a fast store, or frozen with
a ledger call in flight until a successor takes over), hostile (a kind of
seed, one in eight among others, every seed when alone: lease, renew,
margin and poll at the bounds of their ranges or between, the lease from
50ms to 24h; every name's token near the largest; one name planted held by
a node that does not exist with a lease no valid configuration writes,
which no node may take; clocks at the very edge of the margin), clock-step
(a third of the seeds turn baton run's wall-clock guard on, with a
tolerance of a quarter period and, in most, a step-down after two periods,
and step nodes' wall clocks off the store's, within the tolerance and
beyond, ahead and behind: no node may claim or skip a period after a clock
check that found its clock off, and a leader held off must step down in
time and campaign again once its clock agrees), or all.
With operator, a quarter of the seeds also suspend the job for a while and
resume it (baton suspend): no node may claim or skip a period after it
read the suspension, while it lasts; and a third backfill one or two
ranges of past periods (baton backfill), each period it makes pending to
run once more, never skipped.

Each seed also draws the job's policy, as baton run's flags set it: the
catch-up policy (all, latest, none), a window, overlap queue or skip,
retries with a backoff, a retention, and whether runs take time (some
longer than the period, some failing) with a timeout; the jitter and the
catch-up cap are the flags'. The checker verifies every skip against its
reason (cap, window, latest or none, overlap: the period came due while
the term's previous run went on), every retry (retries left, after the
backoff), every run against the timeout (stopped no later), every first
claim against the jitter, every claim of a scheduled period against the
window, and every row a prune deletes against the retention (done or
skipped, not the newest scheduled row, older than the age by the true
time or with the rows newer). The second line of --trace says what the
seed drew.

Mutations (--mutate) turn a protection off; each must be caught:
no-fence (no fencing at all), no-margin (takeover without the 2e wait),
no-valid-check (effects start without the Valid() check), unfenced-ledger
(ledger writes without the token check), session-no-margin (another
process's session is ended after its lease without the 2e),
session-name-expiry (a name held through a session is taken over when its
own record stays unchanged for lease + 2e, ignoring the session),
session-read-first (an observer that a change was notified to while its
read was out reads again before it checks whether the session's wait ran
out: forged notifications keep a dead session alive), no-pull
(balanced nodes never ask for a handover: the balance check must fail),
no-shares (balanced nodes ignore their weights and aim at N/P: with
--shares, the weighted balance check must fail),
succession-no-raise (the store passes a dead session's names on to its
successor without raising their tokens), succession-stored-version (the
store compares a swap with the stored version, not the resolved one: a
dead holder's release that was out while its session was passed on
lands), succession-adopt-unread (a machine takes a term passed on to its
session from the record it read before, without reading it again),
succession-adopt-unsynced (a node whose change feed is in order takes
the terms passed on to its session from its reads at once, without
waiting for its feed to report the succession's write: a take elsewhere
that its lagging feed has not reported yet is missed),
succession-adopt-across-gap (such a node takes them from reads its
live feed does not cover: made before the feed last closed, when a
write went unreported),
succession-list-ended (a node that a succession passed names on to lists
the session that ended, not its own: names settled onto its session
first, that it does not campaign for, stay with it), succession-list-no-retry
(a release by that listing that failed, on an operator's transfer request
written meanwhile, say, is not tried again: the name stays with it),
settle-stored-token (the store settles a name passed on with its stored
token: the successor's token is handed out again), settle-new-version
(the store gives a settled record a new version: its holder finds it
changed and loses the term),
no-catch-up-cap (the planner ignores the catch-up cap),
no-catch-up-window (it ignores the catch-up window), no-jitter (it
ignores the jitter), ignore-suspension (it plans as if the job were never
suspended: it claims periods while the job is suspended),
sticky-suspension (a leader that read the job suspended keeps it so
until its term ends: a resume is seen only by the next term, and the
periods due meanwhile are not run; the liveness check at the end must
fail), no-overlap-skip
(overlap skip queues instead), no-retry-backoff (a failure is retried at
once), no-manual-exempt (backfilled periods are skipped by the catch-up
policy or window like scheduled ones), no-timeout (runs go on past the
timeout), node-jitter (every node derives its own jitter, so a handover
re-rolls it), no-clock-guard (every clock check is taken as agreeing),
no-step-down (a leader held off by its clock guard keeps its term),
prune-failed (retention prunes failed rows too), prune-early (it prunes
by half the retention's age and rows), no-own-completion (with
--supervisor-records: a leader counts its completion refused when the row
conflicts, though its own supervisor recorded it for that very attempt),
rerun-unknown-state (a ledger row in a state no baton writes is planned as
an open one and claimed again: hostile seeds hand one out),
no-takeover-grace (with --supervisor-records: a new term takes a row still
running under an older token over at once, before the supervisor that saw
its run end inside its term could record it), token-fenced-record (with
--supervisor-records: that record is fenced by the term's token, so it is
refused once a newer term began), release-after-finish (a run that ran to
its end after its term ended is given back pending, as if cut short, and
runs again), prefer-no-safe-point (with --prefer seeded or on: a leader
hands the job over to a preferred candidate whether or not a run is
under way), prefer-no-hysteresis (with --prefer seeded or on: it hands
over as soon as its term begins, without lasting the hysteresis),
prefer-no-defer (with --prefer seeded or on: a contender takes the job
over at once though it knows a live candidate preferred to it),
no-takeover (a contender never takes over a record left unrenewed, only
a free one: nothing unsafe, but once a leader dies without releasing,
nobody leads its names again; the liveness check at the end must fail).`

func runSim(ctx context.Context, e *env, args []string) int {
	const name = "sim"
	fs := e.newFlagSet(name, name+" [FLAGS]\n\n"+simAbout)
	o := sim.DefaultOptions()
	seeds := fs.Int("seeds", 1000, "number of seeds to run")
	first := fs.Uint64("seed", 1, "first seed (with --seeds 1: the one seed to replay)")
	trace := fs.Bool("trace", false, "print the trace of one seed (--seed S --trace replays seed S)")
	faults := fs.String("faults", "all", "comma list of fault classes, or all")
	mutate := fs.String("mutate", "", "turn a protection off to show the checker bites: "+mutationList)
	sessions := fs.String("sessions", string(o.Sessions), "which nodes hold their names through a session: seeded (drawn per seed), on, off or mixed")
	prefer := fs.String("prefer", string(o.Prefer), "which seeds draw a preference policy for the job, a hysteresis and each node's weight, version and zone (docs/prefer.md): off, seeded (a third of the unbalanced, not hostile seeds whose quiet end lasts five leases) or on (all of them)")
	balance := fs.String("balance", string(o.Balance), "which seeds run balanced (baton.WithBalance): seeded (half the seeds whose nodes all hold through a session), on (every seed; sessions on) or off")
	fs.BoolVar(&o.Shares, "shares", false, "every balanced seed draws each node's weight, 1 to 4 (baton.WithShare), runs 10 leases longer without faults, and checks at the end that the names lie in proportion to the weights: no name moved between two live nodes brings them closer to it, unless the node taking it holds N*w/W rounded up already")
	fs.IntVar(&o.Names, "names", o.Names, "names besides the job's (shard-1, shard-2, ...); every node campaigns for every one, except in a third of the unbalanced seeds, where each node leaves each to the others a third of the time (--trace says which)")
	fs.IntVar(&o.Nodes, "nodes", o.Nodes, "nodes per run")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "virtual time per seed")
	fs.DurationVar(&o.Lease, "lease", o.Lease, "lease")
	fs.DurationVar(&o.Renew, "renew", o.Renew, "renew interval")
	fs.DurationVar(&o.Margin, "clock-margin", o.Margin, "clock uncertainty e")
	fs.BoolVar(&o.SupervisorRecords, "supervisor-records", false, "every run's own process records its success the moment it ends, before its node's machine is told, as baton run's supervisor does, and a new term waits baton run's takeover grace (the renew interval) before it takes over a running period; with the pause faults, half the seeds also freeze a leader holding the store's write lock as its run starts")
	asJSON := fs.Bool("json", false, "print the summary as JSON (durations in seconds); not with --trace")
	if done, code := e.parseNoArgs(name, fs, args); done {
		return code
	}
	fc, err := sim.ParseFaults(*faults)
	if err != nil {
		return e.fail(name, usagef("--faults: %v", err))
	}
	o.Faults = fc
	if o.Sessions, err = sim.ParseSessionMode(*sessions); err != nil {
		return e.fail(name, usagef("--sessions: %v", err))
	}
	if o.Balance, err = sim.ParseBalanceMode(*balance); err != nil {
		return e.fail(name, usagef("--balance: %v", err))
	}
	if o.Prefer, err = sim.ParsePreferMode(*prefer); err != nil {
		return e.fail(name, usagef("--prefer: %v", err))
	}
	switch *mutate {
	case "":
	case "no-fence":
		o.NoFence = true
	case "no-margin":
		o.NoMargin = true
	case "no-valid-check":
		o.Mutate.Work.NoValidCheck = true
	case "unfenced-ledger":
		o.Mutate.UnfencedLedger = true
	case "session-no-margin":
		o.Mutate.Election.NoSessionMargin = true
	case "session-name-expiry":
		o.Mutate.Election.SessionNameExpiry = true
	case "session-read-first":
		o.Mutate.Election.ReadBeforeExpiry = true
	case "no-pull":
		o.Mutate.Election.NoPull = true
	case "no-shares":
		o.Mutate.Election.NoShares = true
	case "succession-stored-version":
		o.Mutate.Succession.StoredVersion = true
	case "succession-no-raise":
		o.Mutate.Succession.NoRaise = true
	case "succession-adopt-unread":
		o.Mutate.Election.AdoptUnread = true
	case "succession-adopt-unsynced":
		o.Mutate.Election.AdoptUnsynced = true
	case "succession-adopt-across-gap":
		o.Mutate.Election.AdoptAcrossGap = true
	case "succession-list-ended":
		o.Mutate.Election.ListEnded = true
	case "succession-list-no-retry":
		o.Mutate.Election.ListNoRetry = true
	case "settle-stored-token":
		o.Mutate.Succession.SettleStoredToken = true
	case "settle-new-version":
		o.Mutate.Succession.SettleNewVersion = true
	case "wrap-deadline":
		o.Mutate.Election.WrapDeadline = true
	case "prefer-no-safe-point":
		o.Mutate.Election.NoSafePoint = true
	case "prefer-no-hysteresis":
		o.Mutate.Election.NoHysteresis = true
	case "prefer-no-defer":
		o.Mutate.Election.NoDefer = true
	case "no-takeover":
		o.Mutate.Election.NoTakeover = true
	case "no-catch-up-cap":
		o.Mutate.Work.NoCatchUpCap = true
	case "no-catch-up-window":
		o.Mutate.Work.NoCatchUpWindow = true
	case "no-jitter":
		o.Mutate.Work.NoJitter = true
	case "ignore-suspension":
		o.Mutate.Work.IgnoreSuspension = true
	case "sticky-suspension":
		o.Mutate.Work.StickySuspension = true
	case "no-overlap-skip":
		o.Mutate.Work.NoOverlapSkip = true
	case "no-retry-backoff":
		o.Mutate.Work.NoRetryBackoff = true
	case "no-manual-exempt":
		o.Mutate.Work.NoManualExempt = true
	case "no-timeout":
		o.Mutate.Work.NoTimeout = true
	case "node-jitter":
		o.Mutate.Work.NodeJitter = true
	case "no-clock-guard":
		o.Mutate.Work.NoClockGuard = true
	case "no-step-down":
		o.Mutate.Work.NoStepDown = true
	case "prune-failed":
		o.Mutate.Work.PruneFailed = true
	case "no-own-completion":
		o.Mutate.Work.NoOwnCompletion = true
	case "prune-early":
		o.Mutate.Work.PruneEarly = true
	case "rerun-unknown-state":
		o.Mutate.Work.RerunUnknownState = true
	case "no-takeover-grace":
		o.Mutate.Work.NoTakeoverGrace = true
	case "token-fenced-record":
		o.Mutate.TokenFencedRecord = true
	case "release-after-finish":
		o.Mutate.Work.ReleaseAfterFinish = true
	default:
		return e.fail(name, usagef("--mutate %q: want %s", *mutate, mutationList))
	}
	if *seeds < 1 {
		return e.fail(name, usagef("--seeds must be at least 1, got %d", *seeds))
	}
	if last := *first + uint64(*seeds-1); last < *first {
		return e.fail(name, usagef("--seed %d with --seeds %d runs past the largest seed, %d: lower --seed or --seeds", *first, *seeds, uint64(math.MaxUint64)))
	}
	if *trace && *asJSON {
		return e.fail(name, usagef("--trace prints text; leave out --json"))
	}
	if *trace && !flagsSet(fs)["seeds"] {
		*seeds = 1 // --seed S --trace replays seed S
	}
	if *trace && *seeds != 1 {
		return e.fail(name, usagef("--trace replays one seed: leave out --seeds or give --seeds 1"))
	}
	if err := o.Validate(); err != nil {
		return e.fail(name, usagef("%v", err))
	}
	if *trace {
		o.Trace = e.stdout
		r, err := sim.Run(ctx, o, *first)
		if err != nil {
			return e.fail(name, err)
		}
		if r.Violation != nil {
			fmt.Fprintf(e.stdout, "seed %d: VIOLATION %v\n", r.Seed, r.Violation)
			return exitFailure
		}
		fmt.Fprintf(e.stdout, "seed %d: %d events, %d invariant checks, no violation\n", r.Seed, r.Events, r.Checks)
		return exitOK
	}
	replay := replayFlags(fs)
	// The simulator allocates little that lives long (a few MB: seeds are
	// independent), so garbage is collected rarely: when the heap grew
	// twenty-fold, or reached 512 MiB, whichever comes first (see
	// BENCHMARKS.md).
	defer debug.SetGCPercent(debug.SetGCPercent(2000))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(512 << 20))
	s, err := sim.RunSeeds(ctx, o, *first, *seeds)
	if err != nil {
		return e.fail(name, err)
	}
	if *asJSON {
		code := exitOK
		if len(s.Violations) > 0 {
			code = exitFailure
		}
		return e.writeJSON(name, simJSON(s, replay), code)
	}
	fmt.Fprint(e.stdout, s)
	for _, v := range s.Violations {
		fmt.Fprintf(e.stdout, "seed %d: VIOLATION %v (replay: baton sim --seeds 1 --seed %d --trace%s)\n", v.Seed, v.Violation, v.Seed, replay)
	}
	if len(s.Violations) > 0 {
		return exitFailure
	}
	return exitOK
}

const mutationList = "no-fence, no-margin, no-valid-check, unfenced-ledger, session-no-margin, session-name-expiry, session-read-first, no-pull, no-shares, succession-stored-version, succession-no-raise, succession-adopt-unread, succession-adopt-unsynced, succession-adopt-across-gap, succession-list-ended, succession-list-no-retry, settle-stored-token, settle-new-version, no-catch-up-cap, no-catch-up-window, no-jitter, ignore-suspension, sticky-suspension, no-overlap-skip, no-retry-backoff, no-manual-exempt, no-timeout, node-jitter, no-clock-guard, no-step-down, prune-failed, prune-early, no-own-completion, rerun-unknown-state, no-takeover-grace, token-fenced-record, release-after-finish, wrap-deadline, prefer-no-safe-point, prefer-no-hysteresis, prefer-no-defer or no-takeover"

// replayFlags are the flags given that shape a seed's run, for the
// replay line of a violation: the seed alone would run another cluster.
func replayFlags(fs *flag.FlagSet) string {
	var b strings.Builder
	set := flagsSet(fs)
	for _, name := range []string{"faults", "mutate", "sessions", "balance", "shares", "prefer", "names", "nodes", "duration", "lease", "renew", "clock-margin", "supervisor-records"} {
		if !set[name] {
			continue
		}
		v := fs.Lookup(name).Value
		if bf, ok := v.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			fmt.Fprintf(&b, " --%s=%s", name, v)
			continue
		}
		fmt.Fprintf(&b, " --%s %s", name, v)
	}
	return b.String()
}

// simSummary is sim --json.
type simSummary struct {
	Seeds            int            `json:"seeds"`
	SimulatedSeconds float64        `json:"simulated_seconds"`
	Events           int            `json:"events"`
	Checks           int            `json:"invariant_checks"`
	Periods          int            `json:"periods_checked"`
	Rejected         int            `json:"stale_writes_rejected"`
	Beyond           int            `json:"seeds_beyond_margin"`
	Balanced         int            `json:"seeds_balanced"`
	Faults           map[string]int `json:"faults"`
	Violations       []simViolation `json:"violations"`
	ElapsedSeconds   float64        `json:"elapsed_seconds"`
	SeedsPerSecond   float64        `json:"seeds_per_second"`
}

type simViolation struct {
	Seed      uint64 `json:"seed"`
	Violation string `json:"violation"`
	Replay    string `json:"replay"`
}

func simJSON(s sim.Summary, replay string) simSummary {
	out := simSummary{Seeds: s.Seeds, SimulatedSeconds: bound.Seconds(s.Simulated), Events: s.Events, Checks: s.Checks,
		Periods: s.Periods, Rejected: s.Rejected, Beyond: s.Beyond, Balanced: s.Balanced, Faults: map[string]int{}, Violations: []simViolation{},
		ElapsedSeconds: bound.Seconds(s.Elapsed)}
	if s.Elapsed > 0 {
		out.SeedsPerSecond = float64(s.Seeds) / s.Elapsed.Seconds()
	}
	for k, v := range s.Faults {
		out.Faults[fmt.Sprint(k)] = v
	}
	for _, v := range s.Violations {
		out.Violations = append(out.Violations, simViolation{v.Seed, fmt.Sprint(v.Violation),
			fmt.Sprintf("baton sim --seeds 1 --seed %d --trace%s", v.Seed, replay)})
	}
	return out
}
