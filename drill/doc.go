// Package drill runs the course lesson's experiment on baton's real code.
//
// The lesson measured a toy round model: five nodes, a lease of three
// rounds, the first leader unreachable in rounds 6 to 10, an end-of-day
// batch due at rounds 6, 12, 18 and 24. The drill runs the same scenario on
// the real implementation: every node runs the election state machine that
// baton.Elector drives (internal/core), the scheduler's planner
// (schedule.Decide) decides what is due, the election record and the run
// ledger live in a real store (SQLite by default), and every batch writes
// its invoice lines into a real SQLite table, through the fence
// (fence.CheckTx) in the columns that fence. Duplicates and gaps are counted
// from those rows, not from counters.
//
// Time is virtual: a discrete-event loop delivers timers, store replies and
// faults at exact instants in a fixed order, so a drill takes a second and
// the same parameters always give the same numbers.
//
// The three columns show what each layer buys, as in the lesson:
//   - plain: election alone. A batch that comes due while nobody leads is
//     lost; a leader that passed its Valid() check and then froze writes
//     its batch when it wakes, on top of the new leader's.
//   - fencing: the resource refuses writes with a token older than one it
//     has seen, and a new leader raises the fence before it acts, so the
//     stale write is rejected.
//   - fencing+trigger: the batch is a durable period in the run ledger, so
//     one that came due while nobody led is run by the next leader, late
//     but once.
package drill
