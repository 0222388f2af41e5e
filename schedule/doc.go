// Package schedule runs scheduled jobs under baton's election: persistent
// triggers, a run ledger keyed by (job, period), catch-up of periods missed
// while nobody led, and at most one committed run per period.
//
// A job has a Schedule (Every: an interval aligned to the Unix epoch; Cron:
// a cron expression in a time zone, which follows cron's rule across
// daylight saving changes: see Cron). Each scheduled instant is a Period
// whose key is the instant in UTC to the second (KeyLayout), the same on
// every node. A job's first period is the first instant after the job was
// first registered in the store (store.Job.Created): a new job never
// catches up on the past. A job has one schedule and catch-up policy,
// stored at registration (Describe, Register): a node with another one is
// refused unless it reschedules. A manual trigger is a pending ledger row
// written by anybody (see Trigger) under a key of its own (ManualKey) that
// never collides with a scheduled period; it is durable, so it is not lost
// while nobody leads. With a Retention (WithRetention) the leader prunes
// old done and skipped rows in fenced batches.
//
// The package has two layers, like the election:
//   - The work loop of a leader's term is a deterministic state machine
//     inside baton (internal/scheduler): read the ledger, decide which
//     periods to skip and which to claim (catch-up policy), claim with
//     fenced store.SwapRun writes, have Term.Valid checked right before an
//     effect starts, record the outcome with a fenced write, plan again,
//     take over a deposed leader's running row, retry a completion whose
//     outcome is unknown after reading it back. It reads no clock and
//     touches no store.
//   - Runner is its thin runtime: the clock, the store, the Executor in a
//     goroutine under a context that ends with the term.
//
// One machine, three runtimes: Runner drives it for "baton run", for
// library users and in every node process of "baton drill --procs"; the
// virtual cluster drives it on virtual time for "baton sim" and the
// in-process "baton drill". So the simulator's seeds and the drill's
// tables are evidence about the code that ships.
//
// # What it guarantees
//
// Every ledger write of a Runner is fenced: the store applies it only if
// the row's token is the election's current token, in the same atomic
// step. A done row never changes again. Hence at most one done row per
// period, ever, and a completion by a leader that was deposed is refused
// with fence.ErrStaleToken.
//
// Every period that comes due is run, skipped by the catch-up policy (the
// skipped row says why) or still due: periods that came due while nobody
// led are run by the next leader. A running row left by a deposed or
// crashed leader (an older token) is taken over: claimed again with a new
// token, the attempt counter raised, and run again.
//
// # What it does not guarantee
//
// A period's effect may START twice: a leader can be deposed, or pause,
// after it claimed a period and while its effect runs; the next leader then
// runs the period again, under a higher token. Exactly one of the two
// completions is recorded, but the effect itself happened twice unless the
// effect is fenced: the resource it writes to checks the token (passed to
// the Executor, and as BATON_TOKEN to commands run by "baton run") and
// refuses the older one. Only fenced effects are exactly-once. An unfenced
// effect is at-least-once per period. A run its executor stopped early
// (ErrInterrupted, e.g. a command stopped because the lease was about to
// expire, or because the Runner's caller stopped it) is also started
// again, possibly under the same token: its row is given back, pending,
// so that the next claim is at once.
//
// A failed run (non-zero exit) is retried Policy.Retries times,
// Policy.RetryBackoff apart, each attempt counted in the row's Attempt;
// then it is final. An operator re-runs a final failure with a manual
// trigger of its period key, which the leader sees within its rescan
// interval (WithRescan).
package schedule
