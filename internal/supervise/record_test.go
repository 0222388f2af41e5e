//go:build unix

package supervise

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testRecorder is the test supervisor's Recorder: data names a file, which
// it writes with the status, " in lease" when the exit was seen before
// the lease deadline, a newline and the tail.
func testRecorder(_ context.Context, data []byte, st Status, inLease bool, tail []byte) error {
	head := st.String()
	if inLease {
		head += " in lease"
	}
	return os.WriteFile(string(data), append([]byte(head+"\n"), tail...), 0o600)
}

// A supervisor given a Record records the outcome of a command that exits
// by itself, with the tail of its output, before it reports the exit; the
// output still passes through byte for byte; the data reaches the
// Recorder, not the command's arguments or environment. A command stopped
// by Run is not recorded.
func TestRecord(t *testing.T) {
	dir := t.TempDir()
	t.Run("exited", func(t *testing.T) {
		file := filepath.Join(dir, "exited")
		var out, log syncBuffer
		// The command prints its parent's (the supervisor's) arguments and
		// its own environment, where the data must not be, then 300 bytes
		// without a newline to stderr. One writer for both is one pipe
		// (os/exec), so the supervisor keeps one pipe too, and the order
		// the command wrote in is the order of the tail and the output.
		st, err := Run(context.Background(), Config{
			Argv:   []string{"sh", "-c", `tr '\0' ' ' < /proc/$PPID/cmdline; env; echo a; echo b >&2; echo c; printf '%300s' x >&2; exit 3`},
			Env:    os.Environ(),
			Stdout: &out, Stderr: &out, Grace: time.Second,
			Logger: slog.New(slog.NewTextHandler(&log, nil)),
			Record: &Record{Data: []byte(file), Tail: 100},
		})
		if err != nil || st.Code != 3 {
			t.Fatalf("Run: %v, %v; log:\n%s", st, err, log.String())
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("not recorded: %v; log:\n%s", err, log.String())
		}
		if want := "exit 3 in lease\n" + strings.Repeat(" ", 99) + "x"; string(got) != want {
			t.Errorf("recorded %q, want %q", got, want)
		}
		if !strings.Contains(out.String(), "a\nb\nc\n") {
			t.Errorf("stdout and stderr out of the order written:\n%s", out.String())
		}
		if strings.Contains(out.String(), file) {
			t.Errorf("the record's data is in the command's view:\n%s", out.String())
		}
		if !strings.HasSuffix(out.String(), fmt.Sprintf("%300s", "x")) || !strings.Contains(log.String(), "the supervisor recorded the command's outcome") {
			t.Errorf("output ends %q; log:\n%s", out.String()[max(0, len(out.String())-20):], log.String())
		}
	})
	t.Run("stopped", func(t *testing.T) {
		file := filepath.Join(dir, "stopped")
		var out syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := Run(ctx, Config{Argv: []string{"sh", "-c", "echo up; exec sleep 300"}, Env: os.Environ(),
				Stdout: &out, Grace: time.Second, Record: &Record{Data: []byte(file), Tail: 100}})
			done <- err
		}()
		firstLine(t, &out)
		cancel()
		<-done
		if _, err := os.Stat(file); err == nil {
			t.Fatalf("a command stopped by Run was recorded")
		}
	})
	t.Run("binary", func(t *testing.T) {
		// Through the supervisor's own pipes: every byte value, no
		// newline at the end.
		var want []byte
		for i := range 256 {
			want = append(want, byte(i))
		}
		src := filepath.Join(dir, "bytes")
		os.WriteFile(src, want, 0o600)
		var out syncBuffer
		if _, err := Run(context.Background(), Config{Argv: []string{"cat", src}, Env: os.Environ(), Stdout: &out, Grace: time.Second,
			Record: &Record{Data: []byte(filepath.Join(dir, "binary")), Tail: 10}}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal([]byte(out.String()), want) {
			t.Fatalf("got %q", out.String())
		}
	})
}

// A command that exited before a stop reached its supervisor exited by
// itself, and is recorded, whichever the supervisor takes first once it
// runs: the command's SIGCHLD or the stop. The supervisor is stopped
// (SIGSTOP) while the command exits and Run asks it to stop; both are
// pending when it continues. Without the reaping that a stop does first,
// about one run in two took the stop first and recorded nothing.
func TestRecordExitBeforeStop(t *testing.T) {
	for i := range 6 {
		dir := t.TempDir()
		file, gate := filepath.Join(dir, "record"), filepath.Join(dir, "gate")
		var out syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := Run(ctx, Config{Argv: []string{"sh", "-c", `echo $$ $PPID; while [ ! -e "$1" ]; do sleep 0.01; done; exit 0`, "sh", gate},
				Env: os.Environ(), Stdout: &out, Grace: time.Second, Record: &Record{Data: []byte(file), Tail: 10}})
			done <- err
		}()
		var pid, sup int
		fmt.Sscan(firstLine(t, &out), &pid, &sup)
		syscall.Kill(sup, syscall.SIGSTOP)
		os.WriteFile(gate, nil, 0o600)
		for deadline := time.Now().Add(10 * time.Second); procState(pid) != "Z"; {
			if time.Now().After(deadline) {
				syscall.Kill(sup, syscall.SIGCONT)
				t.Fatalf("the command did not exit: state %q", procState(pid))
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel() // Run closes the control pipe: a stop, pending like the SIGCHLD
		time.Sleep(50 * time.Millisecond)
		syscall.Kill(sup, syscall.SIGCONT)
		<-done
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("run %d: a command that exited before the stop was not recorded: %v", i+1, err)
		}
		if !strings.HasPrefix(string(got), "exit 0 in lease\n") {
			t.Fatalf("run %d: recorded %q", i+1, got)
		}
	}
}
