package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// tailSize is how much of a command's output the ledger keeps.
const tailSize = 4 << 10

// tail keeps the last tailSize bytes written to it. It is safe for
// concurrent use: stdout and stderr write to it from two goroutines.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	// Do not start in the middle of a line when the tail was cut.
	b := t.buf
	if len(b) == tailSize {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// lockedWriter serialises writes to w, shared by commands' stdout and
// stderr copies and baton's own log lines.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// errInterrupted is the cause given to a command stopped by baton.
var errInterrupted = errors.New("stopped by baton")

// runCommand runs argv in its own process group with the inherited
// environment plus env, copying its output to stdout and stderr and
// keeping the tail. When ctx ends it sends SIGTERM to the process group and
// SIGKILL grace later; it then returns a non-nil error wrapping
// context.Cause(ctx). Otherwise it returns the exit status (-1 for a
// death by signal) and a nil error, or an error if the command could not
// be started.
func runCommand(ctx context.Context, argv, env []string, stdout, stderr io.Writer, grace time.Duration) (code int, out string, err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	tl := &tail{}
	cmd.Stdout = io.MultiWriter(stdout, tl)
	cmd.Stderr = io.MultiWriter(stderr, tl)
	// A background child still holding the pipes must not keep Wait.
	cmd.WaitDelay = grace
	if err := cmd.Start(); err != nil {
		return -1, "", err
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	stopped := false
	select {
	case werr = <-waited:
	case <-ctx.Done():
		stopped = true
		pgid := cmd.Process.Pid
		syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case werr = <-waited:
		case <-t.C:
			syscall.Kill(-pgid, syscall.SIGKILL)
			werr = <-waited
		}
		t.Stop()
	}
	code = cmd.ProcessState.ExitCode()
	if stopped {
		return code, tl.String(), fmt.Errorf("%w: %w", errInterrupted, context.Cause(ctx))
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) && !errors.Is(werr, exec.ErrWaitDelay) {
		return code, tl.String(), werr
	}
	return code, tl.String(), nil
}
