// Package supervise runs a command so that it never outlives the process
// that started it, whatever kills that process.
//
// A parent-death signal on the command alone is not enough: it reaches the
// direct child only, and "sh -c 'a & b'" or any command that forks leaves
// its other processes running, re-parented to init, beside the next
// leader's copy. So Run does not start the command itself. It re-executes
// the current program as a small supervisor (the hidden subcommand named by
// Arg; the program's main must call Main for it), which:
//
//   - is told of its parent's death twice over: a control pipe whose write
//     end only the parent holds reads end-of-file when the parent dies by
//     any signal, SIGKILL included, and a parent-death signal (SIGTERM) is
//     set on it with the parent's creating thread locked, with the
//     "parent already gone" race closed by os/exec's getppid check;
//   - starts the command as the leader of a new process group, with a
//     parent-death signal (SIGKILL) of its own, and becomes a child
//     subreaper, so that the group's orphans are re-parented to it and
//     reaped by it;
//   - on a stop request (the pipe closed by the parent or by its death,
//     SIGTERM, SIGINT, SIGHUP or SIGQUIT), sends SIGTERM to the whole group
//     and to its own children, and SIGKILL grace later to whatever is
//     left; being the subreaper, its children include every orphan of the
//     command's tree, also one that left the group (setsid, a daemon that
//     double-forks), and an orphan that appears during the stop gets its
//     SIGTERM then;
//   - also stops what is left of the group, and its orphans, when the
//     command's first process exits by itself, so that no background child
//     of a finished run lives on;
//   - holds the lease deadline itself (Config.Lease): it is started with
//     the first one, and refuses to start the command within Grace of it;
//     Run writes every newer one on the control pipe the moment the lease
//     is renewed; on its own clock, the supervisor sends SIGTERM to the
//     group Grace before the latest deadline and SIGKILL at it when no
//     newer one came in time, whatever its parent is doing: stopped
//     (SIGSTOP, or SIGTSTP by default), frozen, deadlocked or starved. A
//     stop begun is not undone by a renewal that comes late;
//   - is not stopped by job-control signals (SIGTSTP, SIGTTIN, SIGTTOU):
//     it catches and ignores them, and reports them; caught, not ignored,
//     so that the command gets their default action back;
//   - reports every signal it sends, the moment the group is gone after a
//     stop, and the command's exit status on an event pipe, which Run
//     turns into log lines and a Status.
//
// With Config.Record (baton run's scheduled runs) the supervisor also
// records the command's outcome, because it is the process that sees it:
// when the command's first process exits by itself (not stopped) and its
// group is gone, it calls the Recorder its main was given
// (MainRecording) before it reports the exit, so an exit inside the term
// is recorded even while the parent is stopped or frozen, and the next
// leader does not run the period again. The Record's data (for baton: the
// store URL, which may hold a password, and the run's job, period, node
// and token) travels on an inherited pipe, descriptor 5, never in the
// supervisor's arguments or environment, and the command does not inherit
// it. The supervisor then owns the command's output pipes and passes the
// bytes on unchanged, keeping the tail the Recorder gets. The Recorder is
// told whether the supervisor reaped the command before the lease
// deadline it held (inLease): then the command ended inside the term,
// whenever the record lands. baton's Recorder writes the scheduler
// machine's own completion (scheduler.CompleteSeen): an outcome seen
// inside the term is fenced by the row (still running under this token,
// unchanged since the claim), so it counts even once a newer term exists,
// and the newer term waits a takeover grace before it takes the row over;
// an outcome seen after the deadline is fenced by the term's token. An
// outcome seen inside the lease is tried again, while the store cannot
// answer, until RecordPatience after the deadline: on SQLite a baton
// frozen inside a write transaction holds the file's write lock, and
// every other writer (this record, and the other nodes' campaigns) waits
// until it is let go. The machine, when it records the same outcome
// later, reads the row back and counts it as its own. What remains: a
// parent frozen together with its supervisor (a whole node) between the
// exit and the reaping or the record, which the supervisor reports
// (after_exit: from the reaping to the record; docs/run.md, "Three
// modes, and what baton does with the command", has the numbers
// measured); a record that lands after the next term's takeover grace (a
// lock held past RecordPatience after the deadline, a supervisor starved
// for longer than the grace once the lock is let go); and a store the
// supervisor cannot reach or open
// at that moment (it reports it, and the parent records as before). The
// next leader then runs the period again.
//
// Hence, when the parent dies, the group is gone within the grace period
// plus the time it takes to notice (a pipe read, microseconds); and when
// the parent lives but cannot act, the group is gone at the lease
// deadline, on time as long as the supervisor itself gets the CPU.
//
// Deadlines travel as instants of CLOCK_MONOTONIC, which both processes
// share and which Go's monotonic readings and timers use on Linux; never
// as a duration left, which, written after the parent was stopped for a
// while, would mean a later deadline. Run reads CLOCK_MONOTONIC before the
// clock the deadline is measured on, so a pause between the two reads can
// only make the instant earlier. The instant is the lease's own deadline
// (for baton run, the Term's: the renewal's send time plus the lease, the
// very deadline Valid checks), so the supervisor never lets the command
// outlive the lease; all its arithmetic saturates.
//
// A SIGKILL of the supervisor itself (or the OOM killer) is covered one
// level up, when the program running Run called Adopt (baton run does):
// that process is a child subreaper too, so the dead supervisor's orphans
// (the command's first process, which also gets its parent-death SIGKILL,
// and every process that left the group: a setsid, double-forked daemon)
// are re-parented to it; Run sees the supervisor die without a report,
// sends SIGKILL to the group, and kills every child of its process that
// is not a supervisor it started, reaping each and going on until none is
// left, before it returns (TestSupervisorKilled). Without Adopt they go
// to init and live on.
//
// What it does not cover: a process that left the group while its parent
// lives on outside the command's tree, or that was handed to another
// service (systemd-run, a container runtime); the supervisor and the
// program running Run both killed at once (their orphans go to init, or
// to a subreaper above them; TestSupervisorAndParentKilledLimit shows
// it); and a supervisor that cannot run: a SIGSTOP of the supervisor
// (which no process can catch), or both processes, or the whole host,
// frozen or suspended. No supervisor covers those: the command runs on
// past the lease, and only a fence (the resource checking the command's
// token, see package fence) refuses its late work.
//
// # Platforms
//
// All of the above is Linux (reaper_linux.go holds its calls). Other Unix
// systems (macOS, FreeBSD) run the portable path, which Linux runs too
// when built with the batonportable tag (CI runs this package's tests
// so): the supervisor learns of its parent's death from the control pipe
// alone; it starts the command as the leader of a new process group but
// is no subreaper, and the command has no parent-death signal; it
// signals that group, and only that group, on every stop; and Run sends
// SIGKILL to the group when its supervisor dies without a report (Adopt
// does nothing). The deadline is held as on Linux: on CLOCK_MONOTONIC,
// which macOS and FreeBSD share between processes too (package
// monoclock). What it does not cover besides the above: a process that
// left the group (setsid, a double-forked daemon) is out of its reach
// whatever happens, and a supervisor killed while Run's process is
// stopped leaves the group running until that process runs again.
// Windows has no supervisor yet: Run, and so baton run, refuses with one
// line (Supported); the library and the stores need none.
//
// What stops the command's processes, by platform (TestParentKilled,
// TestSupervisorKilledGroup, TestParentStopped, TestEscapedProcess,
// TestSupervisorKilled, this last one on the Linux path only; CI runs
// the others on both paths):
//
//	                       Linux                      other Unix (portable path)   Windows
//	baton SIGKILLed        the supervisor: SIGTERM    the supervisor: SIGTERM      no supervised
//	                       to the group and its       to the group, SIGKILL        commands: baton
//	                       orphans, SIGKILL grace     grace later                  run refuses to
//	                       later                                                   start
//	supervisor SIGKILLed   parent-death SIGKILL to    baton: SIGKILL to the        -
//	                       the first process; baton   group, once it runs
//	                       (Adopt): SIGKILL to the
//	                       group and every orphan
//	baton frozen           the supervisor: SIGTERM    the same, to the group       -
//	(SIGSTOP, deadlock)    grace before the lease
//	                       deadline, SIGKILL at it
//	escaped setsid         stopped with the rest      never stopped: lives on      -
//	grandchild             (but see above: both
//	                       killed at once)
//
// On every platform, a SIGSTOP of the supervisor, both processes killed or
// frozen at once, and the host frozen or suspended are left to a fence.
package supervise
