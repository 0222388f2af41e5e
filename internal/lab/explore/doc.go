// Package explore is an exhaustive, breadth-first explorer of every
// interleaving of events of a small configuration (issue 48): nodes that
// each run baton's election machine for one name, as baton.Elector does,
// and, in the sched-* configurations, the scheduler machine of the job of
// that name in each term they win, as baton run does (work.go); a store,
// its run ledger and a fence. Where the simulator (package sim) samples seeded
// schedules, the explorer visits every state reachable within a horizon
// and a fault budget, checks the invariants in each, and returns a
// shortest path to the first violation, which Script writes as a scenario
// script (package scenario) that the scenario runner replays byte for
// byte (this package's tests do, for every mutation's counterexample).
//
// What it drives is what ships, with no copy of any rule: every node's
// decisions are election.Machine's (internal/election), stepped on the
// node's own clock; a term's validity is election.Valid; a swap is
// decided by storedriver.CheckSwap, the rule memstore applies to a record
// without sessions; a write is accepted or refused by fence.Guard; the
// scheduler's decisions are scheduler.Machine's, its ledger writes are
// decided by storedriver.CheckRunSwap, CheckRunSuspended, CheckPrune and
// PruneDeletes (memstore's rules), and every committed ledger write,
// prune, run's end and refused completion is checked with the
// simulator's own checks (vcluster.WorkRules, Suspended, Damaged,
// Release, LedgerToken, Timeout, PruneCheck, OwnCompletion); with a
// preference, every handover and takeover with the simulator's
// vcluster.Handover and vcluster.Takeover. What lives here is the
// runtime: the events, the clocks, the requests in flight, the visited
// set and the invariants of the election.
//
// # The events
//
// In a state, any of these may come next, in every order: a node's timer
// fires (at or after the instant its machine asked for; timers of a
// running node fire before time moves on); the store applies a request, or
// fails it unapplied (its node told unavailable); an applied request's
// answer reaches its node, or is lost (its node told unavailable: the
// outcome unknown to it); a node crashes (its machine and the answers on
// their way to it are gone; requests not yet applied may still be) and
// later restarts as a new incarnation that campaigns again; a node pauses
// (no timer, no answer, no write) and later resumes; a leader whose term
// is valid begins a fenced write with its token, and a write in flight
// lands at the fence; time advances. The fault budget (Config.Faults and
// the kinds' own) bounds the crashes, pauses and failed or lost answers
// of a path, Config.Writes its writes.
//
// A configuration may start from a planted start (Config.Start): fixed
// events after its settled one, each of which must be enabled, so that
// the shipping machines themselves reach the state the exploration
// begins from (sched-2x1-supervisor-late: a term's run ended inside it,
// its record in flight, its renewal held back until a newer term is won).
// Its result is evidence for the paths that begin so, not for others.
//
// A configuration may start with the name's record planted in the store
// (Config.Plant, 2x1-hostile), as a hostile simulator seed plants one:
// held by a node that does not exist, with a lease no valid Config
// writes. The machine must refuse to take it; the wrap-deadline mutation
// (the machine's own, election.Mutations.WrapDeadline) takes it.
//
// Time moves only to the next instant at which a decision can change:
// just before and at every node's timer, and just before, at and just
// after every term's deadline, each read on the node's own clock (the
// clocks run at fixed rates, Config.Rates, whose ratios stay within
// 1 + 2*Margin/Lease, the bound the protocol assumes), never past
// Config.End. So continuous time becomes a finite set of instants; an
// answer that arrives between two of them is explored at one of them.
//
// # The scheduler
//
// With Config.Work, a node's election machine winning a term starts its
// scheduler machine (scheduler.Start with the term's token), losing it
// ends it. The scheduler's store calls travel as the election's do
// (a node may then have two in flight, one of each machine); a run
// started ends at any later event (evDone; evFailRun too with
// Work.Failures), and its node's machine is told only while the term
// that started it is still the node's; with Work.Supervisor the run's
// own process records its success first (scheduler.CompleteSeen). With
// Work.LateRecords (sched-2x1-supervisor-late, late.go) that record is in
// flight from the run's end and lands at any later event (evRecord), its
// machine told only then, but before a newer term's Work.TakeoverGrace
// has passed on its node's wall clock: time does not advance past that
// instant while it is in flight. That is the bound package scheduler's
// doc says the shipping machine relies on (a record of a run seen ending
// inside its term, fenced by the row, counts as long as the newer term
// has not taken the row over, which it does only the grace after it
// began; one that lands later is not covered), and the simulator's
// frozen holder of the store's write lock keeps to it. An
// operator may suspend the job once (Work.Suspend), and then resume it
// once (Work.Resume). With the clock guard
// (Work.ClockTolerance), a node's scheduler machine runs on its wall
// clock, which may step once (Work.Step, evStep); its clock checks are
// answered at once with the true time, and its step-down
// (scheduler.StepDown) is a resignation of its election (evStepDown),
// before time moves on. The ledger (rows by
// period, their version counter, the planted Work.Rows and the damaged
// Work.Damaged handed out with every read) is part of the state.
//
// # Preferred leaders
//
// With Config.Prefer (sched-2x1-prefer, 2x1-prefer; prefer.go) every
// node's machine has the name's policy, hysteresis and the node's own
// candidacy in its election.Config, as the simulator's, and the runtime
// is vcluster's: a node reads the candidacies every renew interval on its
// clock (evCandTick, a store call like the others; one out at a time,
// the next due a renew interval after its answer; a term's first at
// once) and steps them into its machine (election.Candidates); a leader
// with a scheduler is told its safe point (election.SafePoint,
// scheduler.Machine.AtSafePoint) before each read's candidacies and
// whenever its scheduler machine comes to one or leaves it, at once. A
// node renews its candidacy while its process runs: a read finds its age
// 0 then, else the time since it crashed or paused. An election-only
// runtime reports no safe point (a Term.SafePoint never called), so its
// leader never hands over; its contenders defer. The hysteresis, the
// safe point and the deferral are the machine's (preferDue, deferTake)
// and its mutations are the machine's own (election.Mutations
// NoSafePoint, NoHysteresis, NoDefer). Each handover (Lost with
// election.ErrHandedOver) is checked, before the term's work ends, with
// vcluster.Handover (no ledger call or run of its token out, the
// hysteresis lasted on its clock, the term begun after the previous
// handover), and each takeover a contender's swap makes with
// vcluster.Takeover (deferred, on its clock, for the record's wait and
// the deferral when its last candidacies, told before the swap went out,
// showed a live candidate preferred to it whose process is up).
//
// # Groups and sessions
//
// With Config.Group every node is an election.Group in session mode and
// the store is memstore itself (group.go): a Group and a memstore.Store
// are not values, so a state copies them when they change (deepCopy, by
// reflection: every map, slice and pointer, the pointers into a Group's
// own fields into the copy's) and hashes them by reflection, maps in key
// order. The invariant is per name: no two valid terms of it at one true
// instant, each term's validity its machine's deadline (the session's).
//
// # Balanced Groups
//
// With Sessions.Balance every Group is balanced (election.Config.Balance,
// of the weight Sessions.Shares gives it, election.Config.Share, as
// vcluster configures a session node): the Groups share the names by
// the pulls of election's balance rule (a Group that sees another hold
// more than its share asks for names, the holder hands one over at its
// next read of it), and group-2x2-balance, group-2x2-shares and
// group-2x2-weighted check the balance, with the simulator's own check (vcluster.Unbalanced, which
// baton sim applies at a balanced run's end). Balance is a liveness
// property (the names end up in proportion once faults stop), checked
// here as a property of states, precisely: from the true instant
// Sessions.Heal on, the store answers promptly (time does not advance
// while a store call is in flight: every call is applied and answered
// within the instant it is sent, in every order; before Heal a call may
// wait, as in every configuration); and in every state at or after the
// true instant Sessions.Quiet in which no store call is in flight, the
// names each live node holds (a valid term on its own clock, as
// vcluster counts Outcome.HeldByNode; -1 for a node down or paused)
// pass vcluster.Unbalanced: each N/P rounded down or up, or with
// weights, no name moved between two nodes brings them closer to
// proportion unless its taker holds its share rounded up. These
// configurations have no crash, pause or lost answer. Quiet is a bound
// on how long the shipping Groups take to balance from the settled
// start, measured, not derived: in group-2x2-balance with Quiet at 4s
// the shipping Groups are found unbalanced (the handover completes at
// 4.09s), at 5s not; it is 6s, and the horizon 9s, so every state of
// three seconds more is checked too.
//
// # The invariants, after every event
//
//   - No two valid terms of the name at one true instant (election.Valid
//     on each node's own clock).
//   - Every term is won with a token above every token a term was won
//     with before: a token is never reused and only rises.
//   - The fence accepts no write with a token below one that landed
//     before: a stale-token fenced write is refused.
//   - No write begins outside its term (Valid on the writer's clock).
//   - The store refuses no swap as invalid (nor a collector's Settle, nor
//     a planted dead process's release).
//   - With Sessions.Skip: no node holds a name it does not campaign for
//     through its live session with no listing of its under way or due
//     and no store call of its in flight (succession.go's checkLeft).
//   - With Sessions.Collect: no node loses a name as deposed while the
//     store holds it for that very term (checkLost).
//   - No swap writes over a planted record (Config.Plant).
//   - A timer that fired is not due again at the same instant (a machine
//     that spins would also hold time still), the scheduler's too.
//   - With work: no run starts outside its term; every committed ledger
//     write, prune, run's end and refused completion passes the
//     simulator's checks (work.go's comment names them; docs/explore.md
//     says what each checks); with the clock guard, no claim or skip
//     after a clock check that found the wall clock off beyond the
//     tolerance (vcluster.ClockGuard, when it is sent), and a held-off
//     leader steps down in time (vcluster.StepDown, after every event);
//     with late records, no claim or skip commits over the row still
//     running under an attempt whose run ended inside its term, which its
//     supervisor records (vcluster.EndedRowTakeover).
//   - With balanced Groups: in every quiet state, the names in
//     proportion (vcluster.Unbalanced; above).
//   - With Config.Live (2x1-live), once the exploration completed: from
//     every state reached at or before End - Live, some path of events
//     that are not faults reaches a state in which a running node holds
//     a valid term: no state from which nobody can lead again (live.go).
//   - With a preference: every handover and every takeover passes the
//     simulator's checks (vcluster.Handover, vcluster.Takeover).
//   - With Work.Live (sched-2x1-live), in every state at the horizon End:
//     every period due after the job's creation and at or before
//     Config.PeriodLimit is finished, unless the job is suspended then
//     (below).
//
// # Due periods done once faults stop
//
// Work.Live checks the liveness half of "every due period is done
// exactly once once faults stop" (the other half, no period completed
// twice, is a check of every state), judged as baton sim judges it at a
// run's end, by the same code: vcluster.Finishes (a committed completion,
// done or failed, or a skip by the policy finishes a period),
// vcluster.Settle and vcluster.CatchUp (how long the machines may take,
// once faults stop, to lead again and to work off the backlog) and
// vcluster.Unfinished (the periods due by a limit, each finished). It
// is a property of every path, sound because every path reaches the
// horizon with its faults long stopped: the store is prompt
// (Config.Prompt) and a run on a running node ends within the instant it
// starts, so nothing but the nodes' own timers holds time still, and
// those fire before it moves on; the horizon is an instant time moves
// to; the faults, the operator's suspension and resume come only before
// the limit L = End - Settle - CatchUp (periodlive.go says how each term
// is derived from the configuration: no slack is chosen), and a crashed
// node may restart at any instant. So every state at End lies on a path
// whose faults stopped at least Settle + CatchUp before it, and in each
// every period due by L must be finished; a job suspended at End is held
// to none (the machine claims and skips nothing while it is suspended,
// and a fault may have come just before the suspension), a job resumed
// to all. Finishing only grows in sched-2x1-live (no retention, no
// backfill), so the first state at End decides. The suspension spends
// the fault budget there: a path has a crash or a suspension, not both,
// which keeps the exploration complete within its budget; runs that
// take time and a slow store are not explored with it, nor a failed or
// lost answer, a pause, or a crash and a suspension in one path (each
// of these three took it past two million edges in a minute, measured).
// The negative controls: sticky-suspension (the scheduler machine's own
// mutation, scheduler.Mutations.StickySuspension: a leader that read the
// job suspended keeps it so until its term ends, so a resume is seen only
// by the next term; baton sim's period check catches it too) is caught at
// the horizon in 161 events, no-takeover in 62; neither is caught with
// the period check left out (TestPeriodLivenessBlind). no-takeover's
// counterexample is kept beside 2x1-live's shorter one as
// testdata/counterexamples/no-takeover.sched-2x1-live.txt and replayed
// with the others.
//
// # States and soundness
//
// The search is stateful: a state is a value (true time, the nodes'
// machines, incarnations and flags, the stored record and the store's
// version counter, the fence's highest token, the requests and writes in
// flight, the supervisors' records in flight with their bounds, the budget
// spent), cloned by copy. A Machine is copied when it
// steps (copy on write): it is a value but for a slice it only rewrites
// with the same element, the session pointer of a Group's machine, nil
// here, and its preference state, copied with it (ownPref); a
// scheduler.Machine likewise (its plan's moves are only
// re-sliced, its inbox grows only with Momentary, which is not set here).
// The canonical hash covers every field of every machine,
// unexported ones included (read by reflection), but its Config, which
// the node and incarnation hashed beside it decide; the requests in
// flight are kept per node in the order sent, so that two nodes' steps in
// either order reach one state. Two states with one hash therefore have
// the same successors, and merging them loses no behaviour. The hash is
// 128 bits (two maphash sums); a collision among the millions of states
// explored has a probability near 1e-26.
//
// Time is absolute in the hash, not relative to now: a state at 2s and
// the same state shifted to 3s count twice. Relative time would merge far
// more, but it is sound only if no machine compares two stale instants of
// its own to each other in a way a shift changes, which this package
// cannot check from outside the machine; the horizon keeps the graph
// finite instead. Nodes are not reduced by symmetry: their ids live inside
// the machines' configurations and the stored record, and the clock rates
// differ, so two nodes are rarely interchangeable. There is no
// partial-order reduction beyond the hash's merging of diamonds.
//
// # The change feed
//
// With Sessions.Feed (group-2x1-forge) every node's Group gets the
// store's change feed as package baton's driver delivers memstore's
// (feed.go): opened when its process starts, every write applied queued
// in order and delivered at any later event (Changed, then Synced), a
// feed that closes (its queue lost, Feed{}) and opens again within
// Feed.Gaps, and forged notifications of held session records within
// Feed.Forges. It adds an invariant: a Group answered a session record
// it has seen unchanged (and nobody wrote) for the record's lease plus
// 2e does not read it again in that step but ends the session. Not
// modelled: a notification lost while its feed stays live, batches of
// several changes, the driver's wait before it watches again.
//
// # What is not explored (yet)
//
// One name per node (two in the group-1x2 and group-2x2 ones); an election.Group in session mode only in
// group-2x1 and group-2x1-succession (one name, polling: no change
// notifications, no collector, no listing, explored from their settled
// start, Config.Settle, to a depth bound; group.go) and group-2x1-forge
// (the change feed, forged notifications, one crash; no succession),
// group-2x1-unsynced and group-2x1-gap (group-2x1-unread's planted
// start with the change feed, no forgery, no crash; in group-2x1-gap one
// break of a feed, which may open again; their settled start leaves
// node-0's notifications queued, so that its feed lags behind the
// release and node-1's take), and in
// group-2x1-settle, group-2x1-release, group-2x1-unread,
// group-1x2-left, group-1x2-transfer and group-1x1-check, which start from a planted dead
// process's session (a succession's chain not settled, with the
// collector's Settle at any instant; or the dead process's release in
// flight, landing at any instant or, in group-2x1-unread, between the
// two nodes' first reads; or, with one node and two names, a name the
// node does not campaign for, with the collector's Settle or an
// operator's transfer request at any instant; succession.go), but for
// the collector's deletes; in group-2x2-succession (two Groups, two
// names, both planted held through a dead process's session, lease
// 500ms: a Group ends it naming its own session the successor, which
// passes both names on in that one write, and the other's swap ending it
// conflicts; no collector, no release, no fault but the store's delays,
// to a depth bound of 17 after the settled start, within which each
// node's adoption of both names, and each after the other lost the race,
// are reached: TestSuccessionOfTwoNames); balanced in
// group-2x2-balance, group-2x2-shares and group-2x2-weighted (two
// names, polling, no fault but the store's delays until Heal, none at
// all in group-2x2-weighted, complete to their horizon; no join, no
// leave, no dead session's names split: balance.go); no clock that
// drifts beyond its rate, and none that steps but one node's wall clock
// in sched-2x1-clock (Work.Step: once, never set right again), no fault
// but the store's delays in the scheduler configurations (but one crash
// in sched-2x1-live, with a prompt store), no
// supervisor's record that is delayed but in sched-2x1-supervisor-late
// (from its planted start, within the takeover grace, never later:
// a record that lands after the grace is not covered by the shipping
// machine either). Every one of baton sim's 42 mutations is caught
// (NotExpressible names none). A
// preference only in sched-2x1-prefer and 2x1-prefer (one policy, two
// candidates, no fault but the store's delays, so no candidacy ages
// and no change of policy (SetPolicy) or of a node's attributes, to
// depth bounds: 2x1-prefer's reaches one contender's deferral to its
// end). An
// answer is explored only at the instants above. A configuration that
// does not complete stops at its depth bound (Config.MaxDepth), and the
// result says so (Result.Bounded): it is evidence for paths that short,
// not a proof. Liveness (a node can lead again once faults stop) is
// checked in 2x1-live only, whose store answers promptly (Config.Prompt:
// answers delayed across time would make it millions of states), and
// as the balance of balanced Groups in their quiet states (above); a
// due period done once faults stop in sched-2x1-live only (above).
package explore
