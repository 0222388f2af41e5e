//go:build unix

package supervise

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// File descriptors of the supervisor's pipes to its parent.
const (
	// controlFD is read: a line "deadline N" for every new lease deadline
	// (N: CLOCK_MONOTONIC nanoseconds); end-of-file asks for a stop (or
	// means the parent died).
	controlFD = 3
	eventsFD  = 4 // write: one event a line (see reporter)
)

// settle is how often the supervisor looks whether the command's process
// group is empty while it stops it.
const settle = 20 * time.Millisecond

// Main is the supervisor: "Arg GRACE DEADLINE [record:N] -- COMMAND
// [ARGS...]", started by Run with its control and event pipes as file
// descriptors 3 and 4. DEADLINE is the first lease deadline
// (CLOCK_MONOTONIC nanoseconds) or "none"; the command is not started when
// it is within GRACE already. It returns the process exit code, 0 once the
// command's status has been reported. It never writes to its standard
// output or error but the command's own bytes: they belong to the command.
//
// Main records no outcome: a supervisor asked to (Config.Record) reports
// that it cannot, and the parent records it. MainRecording is Main with a
// Recorder.
func Main(args []string) int { return MainRecording(args, nil) }

// MainRecording is Main with rec, which records the command's outcome
// when Run was given a Config.Record (see Recorder).
func MainRecording(args []string, rec Recorder) int {
	// The command's parent-death signal fires when the thread that started
	// it exits; this thread lives as long as the process.
	runtime.LockOSThread()
	syscall.CloseOnExec(controlFD)
	syscall.CloseOnExec(eventsFD)
	ctl := os.NewFile(controlFD, "control")
	rep := reporter{os.NewFile(eventsFD, "events")}

	tailMax, recording := 0, false
	if len(args) >= 5 && strings.HasPrefix(args[2], "record:") && args[3] == "--" {
		n, err := strconv.Atoi(strings.TrimPrefix(args[2], "record:"))
		if err != nil || n < 0 {
			rep.send("error", fmt.Sprintf("invalid record argument %q", args[2]))
			return 2
		}
		tailMax, recording = n, true
		args = append(args[:2:2], args[3:]...)
	}
	if len(args) < 4 || args[2] != "--" {
		// Also what a baton started before an upgrade gets from the new
		// binary it re-executes: the command is not started.
		rep.send("error", fmt.Sprintf("supervisor usage: %s GRACE DEADLINE -- COMMAND [ARGS...]; restart baton if its binary was replaced while it ran", Arg))
		return 2
	}
	grace, err := time.ParseDuration(args[0])
	if err != nil || grace <= 0 {
		rep.send("error", fmt.Sprintf("invalid grace %q", args[0]))
		return 2
	}
	first, err := parseFirst(args[1])
	if err != nil {
		rep.send("error", fmt.Sprintf("invalid deadline %q", args[1]))
		return 2
	}
	argv := args[3:]

	// Before the command exists: a stop request must never be missed.
	sigs := make(chan os.Signal, 16)
	// SIGPIPE is caught (not ignored, which the command would inherit) so
	// that a write to a dead parent's pipe is an error, not a death.
	// The job-control signals are caught too, and ignored: the supervisor
	// holds the deadline, so nothing but SIGSTOP may stop it. Caught, not
	// ignored, so that the command gets their default action.
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGCHLD, syscall.SIGPIPE,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	if err := becomeSubreaper(); err != nil {
		rep.send("error", err.Error())
		return 1
	}
	// The deadline is held from here on, on this process's own clock,
	// whatever the parent does.
	l := leash{grace: grace, at: first}
	// Renewals baton sent while this process started count: on a loaded
	// machine starting it can take longer than the lease had left when
	// baton asked, and the newest deadline is as safe to hold as the first.
	rd := bufio.NewReader(ctl)
	if at, ok, err := pendingDeadline(rd, controlFD); err != nil {
		rep.send("error", err.Error())
		return 1
	} else if ok {
		l.at = at
	}
	if l.termIn(monoNow()) <= 0 {
		rep.send("expired", fmt.Sprint(-l.killIn(monoNow())))
		return 1
	}
	deadlines, leaseReq := make(chan int64), make(chan string, 2)
	quit := make(chan struct{})
	defer close(quit)
	// Stored before hold runs: a command that exits before that goroutine
	// is first scheduled (a loaded machine) exited inside the lease, not
	// after a deadline of zero (TestRecord saw that once in CI).
	var deadline atomic.Int64
	deadline.Store(l.at)
	go hold(l, monoNow, deadlines, leaseReq, &deadline, quit)
	stopReq := make(chan string, 1)
	go func() {
		// Ends when the parent closes the pipe or dies.
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				break // end-of-file; a partial line is the parent dying mid-write
			}
			at, err := parseDeadline(strings.TrimSuffix(line, "\n"))
			if err != nil {
				// Not from baton: stop rather than guess.
				rep.send("error", err.Error())
				stopReq <- "garbled"
				return
			}
			select {
			case deadlines <- at:
			case <-quit:
				return
			}
		}
		stopReq <- "asked"
	}()

	var out *outcome // the outcome this process records, if asked to
	if recording {
		if out, err = newOutcome(rec, tailMax); err != nil {
			rep.send("error", err.Error())
			return 1
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		rep.send("error", err.Error())
		return 1
	}
	files := []uintptr{0, 1, 2}
	if out != nil {
		files = out.files()
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: files,
		Sys:   commandAttr(),
	})
	if out != nil {
		out.started()
	}
	if err != nil {
		rep.send("error", fmt.Sprintf("cannot start %s: %v", argv[0], err))
		return 1
	}
	rep.send("pid", fmt.Sprint(pid))
	pgid := pid

	var (
		status   *syscall.WaitStatus // the first process's, once it exited
		byItself bool                // it exited before any stop began
		exitedAt int64               // when it was reaped (CLOCK_MONOTONIC)
		stopping bool
		killed   bool
		killAt   <-chan time.Time
		tick     *time.Ticker
		giveUp   <-chan time.Time
	)
	tickC := func() <-chan time.Time {
		if tick == nil {
			return nil
		}
		return tick.C
	}
	reap := func() {
		for {
			var ws syscall.WaitStatus
			p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if p <= 0 || err != nil {
				return
			}
			if p == pid {
				status, exitedAt = &ws, monoNow()
				// Exited by itself, before any stop: an outcome to
				// record (a stop after it only clears what it left).
				byItself = !stopping
			}
		}
	}
	termed := map[int]bool{} // children sent SIGTERM
	stoppedFor := ""         // why the first stop began
	stop := func(why string) {
		if stopping {
			return
		}
		// A command that exited before this stop (its SIGCHLD not yet
		// taken: this process was starved or stopped meanwhile, and the
		// stop came first in the select below) exited by itself.
		reap()
		stopping, stoppedFor = true, why
		for _, c := range children() {
			termed[c] = true
		}
		if signalAll(pgid, syscall.SIGTERM) {
			rep.send("signal", "SIGTERM "+why)
		}
		// At the latest at the deadline: hold sends leaseOver then.
		killAt = time.After(grace)
		if tick == nil {
			tick = time.NewTicker(settle)
		}
	}
	kill := func(why string) {
		stop(why)
		if killed {
			return
		}
		killed, killAt = true, nil
		reap()
		if signalAll(pgid, syscall.SIGKILL) {
			rep.send("signal", "SIGKILL "+why)
			giveUp = time.After(time.Second)
		}
	}
	for {
		select {
		case why := <-stopReq:
			stop(why)
		case why := <-leaseReq:
			if why == leaseOver {
				kill(why)
			} else {
				stop(why)
			}
		case s := <-sigs:
			switch s {
			case syscall.SIGCHLD:
			case syscall.SIGPIPE:
			case syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU:
				rep.send("ignored", unix.SignalName(s.(syscall.Signal)))
			default:
				stop("got-" + unix.SignalName(s.(syscall.Signal)))
			}
		case <-killAt:
			if stoppedFor == leaseEnding {
				// SIGTERM came grace before the deadline, so this is the
				// deadline: the same instant as hold's leaseOver, whichever
				// timer fires first, and reported as it.
				kill(leaseOver)
			} else {
				kill("grace")
			}
		case <-tickC():
		case <-giveUp:
			// Only processes that cannot die are left (uninterruptible
			// sleep); stop waiting for them.
			rep.send("error", fmt.Sprintf("process group %d still has processes 1s after SIGKILL", pgid))
			status = orKilled(status)
			goto done
		}
		reap()
		if stopping && giveUp == nil {
			// A process of the tree whose parent died since the SIGTERM
			// is an orphan of this one now: it gets its SIGTERM too.
			fresh := false
			for _, c := range children() {
				if g, _ := syscall.Getpgid(c); g != pgid && !termed[c] {
					termed[c] = true
					syscall.Kill(c, syscall.SIGTERM)
					fresh = true
				}
			}
			if fresh {
				rep.send("signal", "SIGTERM orphan")
			}
		}
		if status != nil {
			if !groupAlive(pgid) && len(children()) == 0 {
				if stopping {
					// Reported, so that the order can be checked: the
					// group is gone, and how long before the deadline.
					rep.send("gone", strconv.FormatInt(subSat(deadline.Load(), monoNow()), 10))
				}
				break
			}
			// The first process is gone, others of its group or its
			// orphans are not: a finished run leaves nothing behind.
			stop("leftover")
		}
	}
done:
	code, sig := 0, 0
	switch {
	case status.Signaled():
		sig = int(status.Signal())
	default:
		code = status.ExitStatus()
	}
	if out != nil {
		st := Status{Code: code, Signal: syscall.Signal(sig)}
		switch {
		case !byItself:
			// Stopped: the parent decides what that means. (Exited by
			// itself means before the deadline this process held: at
			// it, the command is stopped.)
		default:
			// Before the exit report, so that a parent frozen from now
			// on finds it recorded. Reaped before the deadline: seen
			// inside the term, which the Recorder may record after it
			// (scheduler.CompleteSeen); reaped after it (this process
			// was frozen too), fenced by the term's token.
			if err := out.record(st, deadline.Load(), exitedAt); err != nil {
				rep.send("unrecorded", escapeLine(err.Error()))
			} else {
				// How long after the exit the outcome was safe: the window
				// a freeze of the whole node still hits.
				rep.send("recorded", strconv.FormatInt(subSat(monoNow(), exitedAt), 10)+" "+st.String())
			}
		}
	}
	rep.send("exit", fmt.Sprintf("%d %d", code, sig))
	return 0
}

// pendingDeadline reads the control lines already written to rd's pipe
// (descriptor fd), without waiting for more, and returns the last deadline
// among them, if there is one. Each line is written whole, in one
// write of less than PIPE_BUF bytes, so a readable pipe holds whole lines;
// end-of-file (a stop asked before the command started) is left for the
// control loop to find.
func pendingDeadline(rd *bufio.Reader, fd int) (last int64, ok bool, err error) {
	for {
		if rd.Buffered() == 0 {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 || fds[0].Revents&unix.POLLIN == 0 {
				return last, ok, nil
			}
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			return last, ok, nil // end-of-file
		}
		at, err := parseDeadline(strings.TrimSuffix(line, "\n"))
		if err != nil {
			return 0, false, err
		}
		last, ok = at, true
	}
}

// orKilled returns ws, or a status of death by SIGKILL if it is nil.
func orKilled(ws *syscall.WaitStatus) *syscall.WaitStatus {
	if ws != nil {
		return ws
	}
	k := syscall.WaitStatus(syscall.SIGKILL)
	return &k
}

// signalAll sends sig to the process group pgid and to every child of
// this process: a child subreaper, it is the parent of every orphan of the
// command's tree, also of one that left the group (setsid: a daemon). It
// reports whether there was anything to signal. A child's pid cannot be
// reused before this process reaps it, so signalling it by pid is safe.
func signalAll(pgid int, sig syscall.Signal) bool {
	sent := false
	if groupAlive(pgid) {
		syscall.Kill(-pgid, sig)
		sent = true
	}
	for _, pid := range children() {
		syscall.Kill(pid, sig)
		sent = true
	}
	return sent
}

// groupAlive reports whether the process group pgid has a process left
// that has not exited. A zombie has: on the portable path the group's
// orphans are init's to reap, which may take seconds (see onlyZombies).
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return (err == nil || err == syscall.EPERM) && !onlyZombies(pgid)
}

// reporter writes events to the parent, one a line: "KIND TEXT". A dead
// parent's pipe fails with EPIPE; the supervisor goes on stopping the
// command all the same.
type reporter struct{ w io.Writer }

func (r reporter) send(kind, text string) { fmt.Fprintf(r.w, "%s %s\n", kind, text) }
