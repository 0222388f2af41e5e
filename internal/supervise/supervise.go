package supervise

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Arg is the hidden subcommand under which a program re-executed by Run
// acts as the supervisor: its main calls Main with the arguments after it.
const Arg = "__baton-supervise"

// ErrStopped is wrapped by Run's error when the command was stopped before
// it exited by itself: because its context ended (context.Cause of that
// context is wrapped too), or because its lease deadline came (ErrDeadline
// is wrapped too).
var ErrStopped = errors.New("command stopped")

// ErrDeadline is wrapped by Run's error, with ErrStopped, when the
// supervisor stopped the command on its own clock because Config.Lease's
// deadline came within Grace without a newer one, or when it did not start
// the command because the deadline was that close already (the Status is
// then zero).
var ErrDeadline = errors.New("lease deadline reached without a renewal")

// ErrNotStarted is wrapped by Run's error, with ErrStopped and
// ErrDeadline, when the supervisor did not start the command because its
// lease deadline was within Grace already.
var ErrNotStarted = errors.New("command not started")

// Config says what Run runs and how.
type Config struct {
	// Argv is the command and its arguments; Argv[0] is looked up in PATH.
	Argv []string
	// Env is the command's whole environment.
	Env []string
	// Stdin is the command's standard input (nil: /dev/null). An *os.File
	// is passed as it is, so the command reads it directly.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output (nil: discarded).
	// Run returns only after everything written to them was copied.
	Stdout, Stderr io.Writer
	// Grace is how long the command's process group has between SIGTERM
	// and SIGKILL. It must be positive.
	Grace time.Duration
	// Logger gets a line for every signal sent to the command (default:
	// discard).
	Logger *slog.Logger
	// Self is the program re-executed as the supervisor; its main must call
	// Main when its first argument is Arg. Default: os.Executable().
	Self string
	// Lease, when not nil, is the deadline the supervisor holds: the
	// command starts only if Lease.Deadline is more than Grace away, and
	// its process group gets SIGTERM Grace before the latest deadline Run
	// forwarded and SIGKILL at it, whatever the program running Run is
	// doing (stopped, frozen, starved). Run forwards every new deadline
	// as Lease.Renewed announces it.
	Lease Lease
	// Record, when not nil, asks the supervisor to record the command's
	// outcome itself when it exits by itself (see Record); the program's
	// main must then call MainRecording.
	Record *Record
}

// Status is how a command ended.
type Status struct {
	// Code is the exit status of a command that exited.
	Code int
	// Signal is the signal that killed it, or 0.
	Signal syscall.Signal
}

// ExitCode returns the status as a shell reports it: Code, or 128 + the
// signal's number for a command killed by a signal.
func (s Status) ExitCode() int {
	if s.Signal != 0 {
		return 128 + int(s.Signal)
	}
	return s.Code
}

// String says "exit N" or "killed by SIGNAME".
func (s Status) String() string {
	if s.Signal != 0 {
		return "killed by " + signalName(s.Signal)
	}
	return "exit " + strconv.Itoa(s.Code)
}

// Run runs cfg.Argv in a new process group under a supervisor (see the
// package documentation) and waits until the command's first process has
// exited and no process of its group is left.
//
// When ctx ends first, Run asks the supervisor to stop the command
// (SIGTERM to the group, SIGKILL Grace later), waits for it, and returns
// the command's Status with an error wrapping ErrStopped and
// context.Cause(ctx). An error that wraps neither means the command could
// not be started or the supervisor failed; the Status is then meaningless.
// If the program running Run dies, the supervisor stops the command by
// itself.
func Run(ctx context.Context, cfg Config) (Status, error) {
	if err := Supported(); err != nil {
		return Status{}, err
	}
	if len(cfg.Argv) == 0 {
		return Status{}, errors.New("supervise: empty command")
	}
	if cfg.Grace <= 0 {
		return Status{}, fmt.Errorf("supervise: invalid grace %v; want a positive duration", cfg.Grace)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	self := cfg.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return Status{}, fmt.Errorf("supervise: cannot find this program to re-execute: %w", err)
		}
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return Status{}, err
	}
	defer ctlW.Close()
	evR, evW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		return Status{}, err
	}
	defer evR.Close()

	first := int64(never)
	var firstAt time.Time
	if cfg.Lease != nil {
		firstAt = cfg.Lease.Deadline()
		first = instant(firstAt, monoNow, time.Now)
	}
	sargs := []string{Arg, cfg.Grace.String(), formatFirst(first)}
	if cfg.Record != nil {
		sargs = append(sargs, recordArg(cfg.Record))
	}
	cmd := exec.Command(self, append(append(sargs, "--"), cfg.Argv...)...)
	cmd.Env = cfg.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	cmd.ExtraFiles = []*os.File{ctlR, evW} // descriptors 3 and 4
	if cfg.Record != nil {
		// Descriptor 5: the data, read to its end by the supervisor.
		recR, recW, err := os.Pipe()
		if err != nil {
			ctlR.Close()
			evW.Close()
			return Status{}, err
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, recR)
		go func() {
			recW.Write(cfg.Record.Data)
			recW.Close()
		}()
		defer recR.Close()
	}
	// Its own process group: a terminal's ^C goes to baton, which decides.
	// On Linux a parent-death signal backs up the control pipe's
	// end-of-file.
	cmd.SysProcAttr = supervisorAttr()
	// A process that left the group (a daemon) may hold the output pipes.
	cmd.WaitDelay = time.Second

	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		// The parent-death signal fires when the thread that started the
		// supervisor exits: keep it for the supervisor's lifetime.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := startSupervisor(cmd.Start, func() int { return cmd.Process.Pid }); err != nil {
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		forgetSupervisor(cmd.Process.Pid)
		exited <- err
	}()
	err = <-started
	ctlR.Close()
	evW.Close()
	if err != nil {
		return Status{}, fmt.Errorf("supervise: cannot start the supervisor: %w", err)
	}

	quit := make(chan struct{})
	defer close(quit)
	if cfg.Lease != nil {
		go forward(cfg.Lease, firstAt, ctlW, quit)
	}
	evs := make(chan event, 8)
	go readEvents(evR, evs)
	var (
		pgid     int
		status   *Status
		failure  string
		stopped  bool
		expired  bool // stopped, or not started, at the lease deadline
		werr     error
		swept    int // orphans of a dead supervisor killed
		evsOpen  = true
		procDone = false
	)
	ctxDone := ctx.Done()
	for evsOpen || !procDone {
		select {
		case <-ctxDone:
			ctxDone = nil
			stopped = true
			log.Info("stopping the command", "pgid", pgid, "cause", context.Cause(ctx))
			ctlW.Close()
		case ev, ok := <-evs:
			if !ok {
				evsOpen, evs = false, nil
				if status == nil {
					// The supervisor died without its report: with
					// Adopt, its orphans are this process's now. Kill
					// them before the output pipes they may hold are
					// given up on (WaitDelay).
					swept += sweep(cmd.Process.Pid, log)
				}
				continue
			}
			switch ev.kind {
			case "pid":
				pgid, _ = strconv.Atoi(ev.text)
				log.Info("command started", "pid", pgid, "pgid", pgid)
			case "signal":
				sig, why, _ := strings.Cut(ev.text, " ")
				text, ok := reasons[why]
				if !ok {
					text = "the supervisor got " + strings.TrimPrefix(why, "got-")
				}
				level := slog.LevelInfo
				if sig == "SIGKILL" {
					level = slog.LevelWarn
				}
				if why == leaseEnding || why == leaseOver {
					expired = true
					level = slog.LevelWarn
				}
				log.Log(context.Background(), level, "signal sent to the command's process group", "signal", sig, "pgid", pgid, "why", text)
			case "exit":
				var s Status
				var sig int
				fmt.Sscan(ev.text, &s.Code, &sig)
				s.Signal = syscall.Signal(sig)
				status = &s
			case "error":
				failure = ev.text
			case "expired":
				expired = true
				ns, _ := strconv.ParseInt(ev.text, 10, 64)
				log.Warn("command not started: its lease deadline is within the grace period", "past_deadline", time.Duration(ns), "grace", cfg.Grace)
			case "recorded":
				ns, st, _ := strings.Cut(ev.text, " ")
				took, _ := strconv.ParseInt(ns, 10, 64)
				log.Info("the supervisor recorded the command's outcome", "status", st, "after_exit", time.Duration(took))
			case "unrecorded":
				log.Warn("the supervisor could not record the command's outcome; baton records it", "err", ev.text)
			case "ignored":
				log.Warn("the supervisor ignored a job-control signal: it holds the lease deadline", "signal", ev.text)
			case "gone":
				attrs := []any{"pgid", pgid}
				if cfg.Lease != nil {
					ns, _ := strconv.ParseInt(ev.text, 10, 64)
					attrs = append(attrs, "before_deadline", time.Duration(ns))
				}
				log.Info("the command's process group is gone", attrs...)
			}
		case werr = <-exited:
			procDone = true
		}
	}
	if status == nil && expired {
		return Status{}, fmt.Errorf("%w: %w (%w)", ErrStopped, ErrNotStarted, ErrDeadline)
	}
	if status == nil {
		if pgid != 0 && killGroup(pgid) {
			log.Warn("signal sent to the command's process group", "signal", "SIGKILL", "pgid", pgid, "why", "its supervisor died")
		}
		// With Adopt, the dead supervisor's orphans are this process's
		// children now, those that left the group too.
		if swept += sweep(cmd.Process.Pid, log); swept > 0 {
			log.Warn("signal sent to the orphans of the command's dead supervisor", "signal", "SIGKILL", "processes", swept)
		}
		if failure != "" {
			return Status{}, errors.New(failure)
		}
		return Status{}, fmt.Errorf("supervise: the supervisor failed without a report: %v", werr)
	}
	if failure != "" {
		log.Warn("the supervisor reports a problem", "err", failure)
	}
	switch {
	case stopped && expired:
		return *status, fmt.Errorf("%w (%s): %w; %w", ErrStopped, status, context.Cause(ctx), ErrDeadline)
	case stopped:
		return *status, fmt.Errorf("%w (%s): %w", ErrStopped, status, context.Cause(ctx))
	case expired:
		return *status, fmt.Errorf("%w (%s): %w", ErrStopped, status, ErrDeadline)
	}
	return *status, nil
}

// forward writes every new deadline of lease after sent (the one the
// supervisor was started with) to the control pipe, until lease ends,
// quit is closed or the pipe fails (Run closed it, or the supervisor is
// gone).
func forward(lease Lease, sent time.Time, ctl io.Writer, quit <-chan struct{}) {
	for {
		// Renewed before Deadline: a change between the two wakes the
		// next round.
		renewed := lease.Renewed()
		if d := lease.Deadline(); !d.Equal(sent) {
			sent = d
			if _, err := io.WriteString(ctl, formatDeadline(instant(d, monoNow, time.Now))); err != nil {
				return
			}
		}
		select {
		case <-lease.Done():
			return
		default:
		}
		select {
		case <-renewed:
		case <-quit:
			return
		}
	}
}

// reasons explains the supervisor's reasons for a signal, for logs.
var reasons = map[string]string{
	"asked":     "baton asked to stop it",
	leaseEnding: "the lease could expire within the grace period: the supervisor got no renewal from baton in time",
	leaseOver:   "the lease deadline passed: the supervisor got no renewal from baton in time",
	"garbled":   "the supervisor read a garbled control line",
	"leftover":  "its first process exited; stopping what it left in its group",
	"grace":     "still running after the grace period",
	"orphan":    "a process of the command outside its group, orphaned since the stop began",
}

// event is one line of the supervisor's report.
type event struct{ kind, text string }

func readEvents(r io.Reader, out chan<- event) {
	defer close(out)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		kind, text, _ := strings.Cut(sc.Text(), " ")
		out <- event{kind, text}
	}
}
