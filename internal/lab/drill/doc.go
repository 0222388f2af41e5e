// Package drill runs the course lesson's experiment on baton's real code.
//
// The lesson measured a toy round model: five nodes, a lease of three
// rounds, the first leader unreachable in rounds 6 to 10, an end-of-day
// batch due at rounds 6, 12, 18 and 24. The drill runs the same scenario on
// the real implementation: every node runs the election state machine that
// baton.Elector drives (internal/election) and the scheduler's work loop
// that schedule.Runner drives (internal/scheduler: plan, claim, check
// Valid(), run, record, take over), the election record and the run
// ledger live in a real store (SQLite by default), and every batch writes
// its invoice lines into a real SQLite table, through the fence
// (fence.CheckTx) in the columns that fence, with the fence log
// (vcluster.Fence), so that `baton verify` can judge a drill's files.
// Duplicates and gaps are counted from those rows, not from counters.
//
// Time is virtual: a discrete-event loop delivers timers, store replies and
// faults at exact instants in a fixed order, so a drill takes a second and
// the same parameters always give the same numbers.
//
// With Config.Procs the same scenario runs on real OS processes and real
// time ("baton drill --procs"): every node is a process (NodeMain, the
// hidden "baton drill node") running baton.Elector and internal/scheduler/runner
// (the runtime schedule.Runner wraps; both are what "baton run" uses), with
// the drill's momentary triggers and unfenced ledger where its column has
// them, on one SQLite store file shared by all, with
// an executor whose batch writes fenced lines into a second SQLite file.
// Both modes inject the same fault events (vcluster.Fault) and use the
// same business calendar (vcluster.Calendar).
// The faults are real: the node stops itself with SIGSTOP once no store
// call of it is in flight (a process stopped inside an SQLite write would
// keep the file's lock and stall every node, which is SQLite's doing, not
// the protocol's) and gets SIGCONT after the outage; pause before effect
// stops it the same way between its Valid() check and its write; a crash is
// SIGKILL and a new process (a new incarnation); unreachable makes its
// store calls fail with store.ErrUnavailable; drift runs its Elector's
// clock fast. The parent delivers momentary triggers to every node's stdin
// (a stopped node reads its trigger when it resumes, and drops it as its
// term is no longer valid) or, in the fencing+trigger column, writes a
// durable pending row with schedule.Trigger. Measures come from the nodes'
// timestamped reports (elections, deadlines, rejections, stops) and from
// the rows: two running leaders are overlapping Valid() intervals of nodes
// that are not stopped. The report has the same shape; the times vary from
// run to run, the guarantees do not.
//
// With Config.Net the process mode runs on test hosts (Config.Lab: package
// netdrill, on internal/lab/netns, linked only into the lab build of baton):
// network namespaces on a private bridge, one host per node, the store on
// hosts of its own (etcd member processes, or a PostgreSQL server), and
// the resource file shared on disk. The parent reaches no store: the
// nodes write the durable triggers and read the ledger for it. The
// unreachable fault is the leader's link cut; the network faults
// (NetFaults: partition, isolate, one-way either way, flapping, 30% loss,
// a member killed) are nftables rules and links taken down. Every node
// records its history (internal/history) and the history checker's
// verdict is in Result.History. Soak runs the fencing+trigger column for
// a while under a schedule of faults of every class drawn from a seed,
// a host with a slow clock among them (Skew).
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
