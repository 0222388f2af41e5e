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

	"golang.org/x/sys/unix"
)

// ErrStopped is wrapped by Run's error when the command was stopped because
// its context ended, before it exited by itself. context.Cause of that
// context is wrapped too.
var ErrStopped = errors.New("command stopped")

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
		return "killed by " + unix.SignalName(s.Signal)
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

	cmd := exec.Command(self, append([]string{Arg, cfg.Grace.String(), "--"}, cfg.Argv...)...)
	cmd.Env = cfg.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	cmd.ExtraFiles = []*os.File{ctlR, evW} // descriptors 3 and 4
	// Its own process group: a terminal's ^C goes to baton, which decides.
	// Pdeathsig backs up the control pipe's end-of-file.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	// A process that left the group (a daemon) may hold the output pipes.
	cmd.WaitDelay = time.Second

	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		// The parent-death signal fires when the thread that started the
		// supervisor exits: keep it for the supervisor's lifetime.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	err = <-started
	ctlR.Close()
	evW.Close()
	if err != nil {
		return Status{}, fmt.Errorf("supervise: cannot start the supervisor: %w", err)
	}

	evs := make(chan event, 8)
	go readEvents(evR, evs)
	var (
		pgid     int
		status   *Status
		failure  string
		stopped  bool
		werr     error
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
				log.Log(context.Background(), level, "signal sent to the command's process group", "signal", sig, "pgid", pgid, "why", text)
			case "exit":
				var s Status
				var sig int
				fmt.Sscan(ev.text, &s.Code, &sig)
				s.Signal = syscall.Signal(sig)
				status = &s
			case "error":
				failure = ev.text
			}
		case werr = <-exited:
			procDone = true
		}
	}
	if status == nil {
		if pgid != 0 && groupAlive(pgid) {
			syscall.Kill(-pgid, syscall.SIGKILL)
			log.Warn("signal sent to the command's process group", "signal", "SIGKILL", "pgid", pgid, "why", "its supervisor died")
		}
		if failure != "" {
			return Status{}, errors.New(failure)
		}
		return Status{}, fmt.Errorf("supervise: the supervisor failed without a report: %v", werr)
	}
	if failure != "" {
		log.Warn("the supervisor reports a problem", "err", failure)
	}
	if stopped {
		return *status, fmt.Errorf("%w (%s): %w", ErrStopped, status, context.Cause(ctx))
	}
	return *status, nil
}

// reasons explains the supervisor's reasons for a signal, for logs.
var reasons = map[string]string{
	"asked":    "baton asked to stop it",
	"leftover": "its first process exited; stopping what it left in its group",
	"grace":    "still running after the grace period",
	"orphan":   "a process of the command outside its group, orphaned since the stop began",
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
