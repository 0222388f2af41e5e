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
// outcome is unknown after reading it back, stopping at the first
// fence.ErrStaleToken (a newer leader exists), planning again after a
// conflict, the read cursor (rows after the newest scheduled period before
// which every row is final, and the whole ledger every Rescan), and
// store.Permanent errors ending its work.
//
// Runtimes, one machine:
//   - schedule.Runner (real clock, real store, the executor in a
//     goroutine): "baton run", library users, and every node process of
//     "baton drill --procs" (which reaches its drill-only settings through
//     RunnerHooks);
//   - internal/vcluster (virtual time, store replies after a latency,
//     faults at exact instants): "baton sim" and the in-process "baton
//     drill".
//
// The drill's plain and fencing columns need two settings no user gets:
// Momentary (a trigger is a moment that reaches only the node leading then,
// not a ledger row) and Unfenced (ledger writes without the token check).
// The simulator's mutations turn protections off on purpose (NoValidCheck,
// Unfenced) to show that its checker notices.
//
// Room for what comes next: a retry of a failed period is a new Attempt of
// the same row, claimed by the plan once its backoff has passed (a Decide
// rule over the row's Attempt and Finished, plus Wake); pruning old final
// rows is one more kind of fenced ledger write issued while idle, after the
// cursor, in batches; a wall-clock guard is an event (the trusted reference
// agrees or not) that gates the plan's Claim and Skip moves.
package scheduler
