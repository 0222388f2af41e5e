//go:build !batonportable

package supervise

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// subreaper is true where the supervisor is a child subreaper and the
// command gets a parent-death signal: Linux, unless built with the
// batonportable tag (which CI uses to test the portable path on Linux).
const subreaper = true

// becomeSubreaper makes the supervisor a child subreaper, so that every
// orphan of the command's tree is re-parented to it (see children).
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot become a child subreaper: %w", err)
	}
	return nil
}

// supervisorAttr starts the supervisor in a process group of its own,
// with a parent-death SIGTERM that backs up the control pipe's
// end-of-file.
func supervisorAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// commandAttr starts the command as the leader of a new process group,
// with a parent-death SIGKILL: should the supervisor die, its first
// process dies too.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// children returns the ids of the processes whose parent is this one,
// zombies included, from /proc.
func children() []int {
	self := os.Getpid()
	ps, _ := processes()
	var out []int
	for _, p := range ps {
		if p.ppid == self {
			out = append(out, p.pid)
		}
	}
	return out
}

// adopted is set once Adopt made this process a child subreaper.
var adopted atomic.Bool

// started counts the supervisors Run started and has not reaped yet, by
// process id: the only children of an adopting process that a sweep
// leaves alone. A count, not a flag: a reaped supervisor's id may come
// back as the next one's before the first is struck off. Process-wide,
// as the subreaper attribute and the children it brings are.
var started struct {
	sync.Mutex
	pids map[int]int
}

// Adopt makes the calling process a child subreaper (Linux
// PR_SET_CHILD_SUBREAPER), so that the orphans of a supervisor that dies
// without stopping its command (SIGKILL, the OOM killer) are re-parented
// to this process instead of init: the command's first process, and any
// process that left its group (setsid, a daemon that double-forks). Run
// then notices the supervisor's death and kills them all: every child of
// this process that is not a supervisor Run started (see sweep).
//
// So a program that calls Adopt must start no other child processes than
// through Run: a sweep would kill them. baton run calls it; a library or a
// test process that starts other children must not. Adopt is not undone.
//
// What it does not cover: this process and the supervisor both killed at
// once (the orphans then go to init, or to a subreaper above this process,
// such as a service manager), and a freeze of both or of the whole host;
// a fence covers those.
func Adopt() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("supervise: cannot become a child subreaper: %w", err)
	}
	adopted.Store(true)
	return nil
}

// startSupervisor starts cmd's process under the lock of started, so that
// no sweep sees it as an orphan before it is counted. forget strikes it
// off once it has been reaped.
func startSupervisor(start func() error, pid func() int) error {
	started.Lock()
	defer started.Unlock()
	if err := start(); err != nil {
		return err
	}
	if started.pids == nil {
		started.pids = map[int]int{}
	}
	started.pids[pid()]++
	return nil
}

func forgetSupervisor(pid int) {
	started.Lock()
	defer started.Unlock()
	if started.pids[pid]--; started.pids[pid] <= 0 {
		delete(started.pids, pid)
	}
}

// sweepFor is how long a sweep waits for the orphans it killed.
const sweepFor = 5 * time.Second

// sweep kills every child of this process that is not a supervisor Run
// started, reaps it, and goes on until none is left, once supervisor (a
// supervisor that died without its report) is a zombie or reaped: by then
// the kernel has re-parented its orphans to this process (it does so
// before the zombie state), and each orphan killed here hands its own
// children over the same way before it is reaped. When none is left, no
// process of the dead supervisor's tree is (one that was re-parented
// elsewhere aside: see Adopt). It returns the number killed. Without
// Adopt it does nothing.
func sweep(supervisor int, log *slog.Logger) int {
	if !adopted.Load() {
		return 0
	}
	killed := 0
	give := time.Now().Add(sweepFor)
	for {
		gone := supervisor == 0 || !running(supervisor)
		started.Lock()
		var orphans []int
		for _, pid := range ownChildren() {
			if started.pids[pid] == 0 {
				orphans = append(orphans, pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		started.Unlock()
		for _, pid := range orphans {
			var ws syscall.WaitStatus
			// Only an orphan's id: a supervisor is os/exec's to reap.
			if p, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); p == pid {
				killed++
			}
		}
		if gone && len(orphans) == 0 {
			return killed
		}
		if time.Now().After(give) {
			log.Warn("orphans of a dead supervisor still alive after SIGKILL", "pids", orphans, "after", sweepFor)
			return killed
		}
		time.Sleep(settle)
	}
}

// running reports whether pid is a process that has not exited: not a
// zombie, not reaped.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	st := s[i+2]
	return st != 'Z' && st != 'X'
}

// ownChildren returns the ids of this process's children, zombies
// included: from /proc/self/task/*/children (a child's parent is one of
// this process's threads), or by scanning /proc where the kernel lacks
// those files.
func ownChildren() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return children()
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			if os.IsNotExist(err) {
				// A thread that just exited, or no CONFIG_PROC_CHILDREN.
				if _, serr := os.Stat("/proc/self/task/" + t.Name()); serr == nil {
					return children()
				}
			}
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}
