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
//   - reports every signal it sends and the command's exit status on an
//     event pipe, which Run turns into log lines and a Status.
//
// Hence, when the parent dies, the group is gone within the grace period
// plus the time it takes to notice (a pipe read, microseconds).
//
// What it does not cover: a process that left the group while its parent
// lives on outside the command's tree, or that was handed to another
// service (systemd-run, a container runtime); and a SIGKILL of the
// supervisor itself (only the command's first process then gets its
// parent-death SIGKILL; Run sends SIGKILL to the group when it sees the
// supervisor die without a report). Linux only.
package supervise
