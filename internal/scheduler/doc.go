// Package scheduler is the leader's per-term work loop of package schedule
// as a deterministic state machine, in the manner of internal/election: it
// is fed the wall time and an event (a term started or ended, ledger rows
// read, a write's reply, a read-back, an effect finished, a timer fired, a
// trigger seen) and answers with actions (read the ledger, whole or after a
// cursor; a fenced write; start the effect, with the term's Valid() checked
// atomically with starting it; act no more until the term ends; stop on a
// store error that will never heal). It never reads a clock, starts a
// goroutine or touches a store.
//
// It owns: planning (Decide: which due periods to skip and which to claim
// under the catch-up policy), claiming, the Valid() check before an effect,
// recording the outcome, planning again at once after a run, taking over a
// running row of a deposed or crashed leader, retrying a completion whose
// outcome is unknown after reading it back, reading back a completion that
// conflicts too (a row finished in the same state under this token and
// attempt, by another process that saw the effect end, such as baton
// run's supervisor, counts as this leader's success; the simulator's
// no-own-completion mutation, with its --supervisor-records, shows that the
// checker notices when it does not), waiting Config.TakeoverGrace from
// the start of a term before taking over a row still running under an
// older token (the no-takeover-grace mutation does not), stopping at the
// first
// store.ErrStaleToken (a newer leader exists), planning again after a
// conflict, the read cursor (rows after the newest scheduled period before
// which every row is final, and the whole ledger every Rescan),
// store.Permanent errors ending its work, and a ledger row in a state that
// is none of store.RunStates ending it too (store.CheckRunState: a damaged
// row is never claimed again, whatever the store handed out).
//
// Outcomes recorded by who sees them: the process that ran an effect
// (baton run's supervisor) records its outcome with CompleteSeen. When it
// saw the effect end before its term's deadline, on its own clock, the
// effect ended inside the term, and the record is fenced by the row alone
// (its version, unchanged since the claim), not by the election token: it
// still counts when it lands after a newer term began (the writer was
// frozen, or blocked behind a write lock that a frozen process held), as
// long as that term has not taken the row over, which it does only
// TakeoverGrace after it began. What this does not cover: an effect whose
// end was not seen inside the term (the whole node frozen between the end
// and the reaping), and a record that lands after the grace (a writer
// starved or blocked longer): the period runs again, at least once, as
// any effect cut short by the end of its term does.
//
// A run cut short that this process knows of (EffectDone NotStarted, or
// an error wrapping ErrInterrupted: stopped, its process group with it,
// before it finished) is given back: the machine writes Release, the
// claimed row pending again with its token and attempt kept (the next
// claim is attempt + 1), fenced by the row alone like CompleteSeen, also
// after End. The runtime makes that write before it gives the term up (a
// graceful stop: baton run resigns only once Run returned, bounded by
// ReleaseTimeout), so the next term claims the period at once instead of
// waiting TakeoverGrace. A release the row refuses (a newer term took it
// over, or the run's own process recorded it) changes nothing. A run that
// ran to its end is never given back, or it would run twice (the
// simulator's release-after-finish mutation does, and its checker
// notices). What this does not cover: an executor that reports an
// interruption of an effect that in fact finished (baton run hears of its
// command's exit only after its supervisor's record, which then wins the
// row). A term resigned before its runtime stops (an operator's resign
// or transfer ends the term at once) releases after the next term's first
// read, perhaps: that term, waiting for the grace, reads the row again
// every TakeoverRead and claims it once it is pending; a release that
// never lands is covered by the grace.
//
// Runtimes, one machine:
//   - internal/scheduler/runner (real clock, real store, the executor in a
//     goroutine), which takes this machine's whole Config: wrapped by
//     schedule.Runner, built from the public options, for "baton run" and
//     library users, and used directly, with the drill-only settings
//     below, by every node process of "baton drill --procs";
//   - internal/lab/vcluster (virtual time, store replies after a latency,
//     faults at exact instants): "baton sim" and the in-process "baton
//     drill".
//
// The drill's plain and fencing columns need two settings no user gets
// (schedule.Runner has no option for them):
// Momentary (a trigger is a moment that reaches only the node leading then,
// not a ledger row) and Unfenced (ledger writes without the token check).
// The simulator's mutations turn protections off on purpose (Unfenced, and
// each of Config.Mutate's Mutations) to show that its checker notices.
//
// What operators steer is decided here too, so the simulator checks it:
// the catch-up cap (Policy.Max: a scheduled period with Max or more newer
// instants due is skipped, "outside the catch-up window", also when the
// claim is applied after skips that took time), the overlap policy
// (Policy.Overlap skip: a period that came due while this leader's
// previous run went on is skipped), the jitter (Policy.Jitter: a period's
// first claim waits JitterOf(job, key), the same on every node), a
// backfill's plan (PlanBackfill) and the suspension: every pass reads the
// job first (ReadJob) and, while it is suspended (store.Job.Suspension),
// claims and skips nothing and reads it again at the next poll, in the
// same term, so that a run in progress finishes; the periods that came due
// meanwhile are caught up on resume by the catch-up policy. A suspension
// that commits between that read and a claim is caught by the store,
// which refuses the claim (or skip) in the write's own atomic step
// (store.ErrSuspended): the machine notes it and reads the job again at
// once. (The simulator's ignore-suspension mutation turns off both: this
// machine's Mutate.IgnoreSuspension and the in-memory store's check,
// memstore.WithoutSuspensionCheck.)
// Config.Validate bounds them (bounds.go).
//
// Retries of a failed period (Policy.Retries, RetryBackoff) are a Decide
// rule: a failed row with attempts left is due once Finished + backoff has
// passed (and is Wake until then), so the claim is the ordinary Move.Swap
// with Attempt + 1; finalPrefix does not count such a row as final, or the
// cursor would hide it until the rescan.
//
// The run timeout (Policy.Timeout) is the machine's too: while an effect
// runs, Next is its start plus the timeout; the Tick then asks the runtime
// to stop it (StopEffect), and the EffectDone that follows is recorded
// failed, "timeout" (ErrTimeout), whatever the effect reported, and
// retried like any failure.
//
// Retention (retention.go) is part of the loop: with Config.Retention on,
// a machine that would otherwise wait (a plan with no moves) and whose
// round is due deletes one batch of done and skipped rows past the
// retention with a fenced store.PruneRuns, and goes on batch by batch, a
// pass between two batches, until one comes back short; a stale token
// halts it like any other fenced write.
//
// The wall-clock guard (Config.ClockTolerance): before a pass that may
// claim or skip, the machine asks for a reference time (CheckClock); while
// its wall clock differs from the reference by more than the tolerance it
// plans no Claim or Skip moves and prunes nothing (it only completes what
// runs) and asks again at the poll. It says so once (a Note, and ClockHeld
// for metrics), and again when the clocks agree.
package scheduler
