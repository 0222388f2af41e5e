package vcluster

import (
	"time"

	"github.com/batonhq/baton/store"
)

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
	// HeldAtEnd counts, per name, the running nodes whose term of it is
	// valid on their own clock at the end (names nobody holds are absent).
	HeldAtEnd map[string]int
	// HeldByNode counts, per node, the names whose term is valid on its
	// own clock at the end; -1 for a node that is down or frozen then.
	HeldByNode     []int
	FaultsInjected map[FaultKind]int
	// Finished is, per period, its last committed write that finished it
	// (done, failed or skipped), kept when retention prunes the row.
	Finished map[string]store.Run
	// Backfilled is, per period a backfill made pending (added or re-run),
	// when it did so: the last backfill's.
	Backfilled map[string]time.Duration
	// Covered counts what the run exercised of the job's rules.
	Covered Coverage
	// Violation is the first invariant that failed (Check only).
	Violation error
	// Timeline is what each node did and suffered, in order (Config.Timeline only).
	Timeline []Happening
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

// observe counts the valid running leaders after every event. The count
// changes only when a node's term, clock, life or freeze changes (which
// clears e.observed: see unobserve) or when a counted term runs out,
// at the earliest at observedUntil: a term only runs out (see expiry),
// and e.now only grows. Until then, it stands.
func (e *engine) observe() {
	if !e.observed || e.now >= e.observedUntil || observeAlways {
		e.recount()
	}
}

// recount is observe's count.
func (e *engine) recount() {
	count, until := 0, farAway
	for _, n := range e.termed { // the nodes with a term, the test valid makes first
		if e.valid(n) {
			count++
			until = min(until, n.expiry())
		}
	}
	e.observed, e.observedUntil = true, until
	if count != e.leaders {
		e.account(e.lastAt, e.now, e.leaders)
		e.leaders, e.lastAt = count, e.now
	}
}

// observeAlways makes observe count at every event (tests: the count
// it skips is the one it would have made).
var observeAlways = false

// unobserve says that what observe counts may have changed in this event:
// a node's term of Job, its deadline, its clock, whether it is up or
// frozen.
func (e *engine) unobserve() { e.observed = false }

// Coverage counts what a run exercised of the rules operators steer, from
// the ledger writes that committed and the effects that ran: evidence that
// a run of seeds draws what ships.
type Coverage struct {
	ClockHeld      int // times a leader's clock guard held it off
	SteppedDown    int // times a held-off leader gave its term up
	ClockWithin    int // claims by a node whose wall clock was off, within the tolerance
	OverlapSkips   int // periods skipped by the overlap policy
	CapSkips       int // by the catch-up cap
	WindowSkips    int // by the catch-up window
	PolicySkips    int // by catch-up latest or none
	Retries        int // claims of a period whose last attempt failed
	Failures       int // effects that failed
	LongRuns       int // effects longer than a period (Config.Day)
	BackfillRuns   int // claims of a period a backfill made pending
	Pruned         int // ledger rows pruned by retention
	SuspendRefused int // claims and skips the store refused because the job was suspended
	DamagedRefused int // machines that ended their work on a damaged ledger row (Config.DamagedRows)
	Timeouts       int // runs stopped by the timeout
	Successions    int // dead sessions passed on to a successor (election.Config.Succession)
	Adopted        int // terms taken from a record a succession passed on
	Forged         int // notifications sent by the forging client (Config.Forge)
	// Settled counts the names a pass of collection rewrote to point at
	// a successor (store.Succeeder.Settle); Deleted the dead session
	// records it deleted, DeletedSucceeded those that named a successor.
	Settled, Deleted, DeletedSucceeded int
	// LongestChain is the most successions a name's record was passed
	// on by, not settled (the store's longest resolution), right after
	// each succession: the longest chain the run formed.
	LongestChain int
	// LockFreezes counts nodes frozen holding the store's write lock
	// (ArmFreezeLocked); LateRecords the supervisors' records of an
	// effect seen to end inside its term that committed once a newer
	// term had begun (scheduler.CompleteSeen).
	LockFreezes, LateRecords int
	// Releases counts the rows of runs cut short (not started, or
	// interrupted) that their machine gave back, pending
	// (scheduler.Release); LateReleases those that committed once a
	// newer term had begun.
	Releases, LateReleases int
	// Preferred counts the handovers of Job to a preferred candidate
	// (Config.Prefer).
	Preferred int
	// Deferred counts the takeovers of Job that the deferral check
	// judged: by a contender that knew a live candidate preferred to it.
	Deferred int
}
