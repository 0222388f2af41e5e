package supervise

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Record asks the supervisor to record the command's outcome itself, the
// moment the command has exited by itself and its group is gone, before
// it reports the exit to Run: so the outcome is recorded by the process
// that sees it, also while the program running Run is stopped or frozen
// (see the package documentation). Only an exit before any stop is
// recorded; a stopped command is Run's caller's to judge.
type Record struct {
	// Data is handed to the supervisor's Recorder. It travels on a pipe
	// the supervisor inherits (never in its arguments or environment, so
	// it may hold a secret such as a store URL with a password), which
	// the command does not inherit.
	Data []byte
	// Tail is how many of the last bytes of the command's output (its
	// standard output and error, as they came) the Recorder gets. The
	// supervisor then passes the output on through pipes of its own,
	// byte for byte.
	Tail int
}

// Recorder records the outcome st of a command run with Config.Record,
// in the supervisor (MainRecording): data is Record.Data, tail the last
// Record.Tail bytes of its output. inLease says the supervisor saw the
// command's exit (reaped it) before the lease deadline it held, on its
// own clock: the command ended inside the term, whatever time it is
// now (the supervisor may have been frozen, or blocked on the store,
// since). ctx ends at that deadline (at least a second from the call),
// or, with inLease, RecordPatience after it: an outcome seen inside the
// term may be recorded after it (scheduler.CompleteSeen). An error is
// reported to Run (its log says the outcome was not recorded), and Run's
// caller records it as it would without a Recorder.
type Recorder func(ctx context.Context, data []byte, st Status, inLease bool, tail []byte) error

// RecordPatience is how long after the lease deadline a supervisor keeps
// trying to record an outcome it saw inside the lease: long enough for a
// write lock held by a frozen process (baton itself, stopped inside a
// SQLite write) to be let go, short enough that a store that is down
// does not keep the supervisor, and so Run, for long.
const RecordPatience = 10 * time.Second

// recordFD is the supervisor's descriptor of Record.Data (read to its
// end at start).
const recordFD = 5

// recordArg is the supervisor's argument that says a Record follows on
// recordFD, with the tail's size.
func recordArg(r *Record) string { return fmt.Sprintf("record:%d", r.Tail) }

// outcome is the supervisor's side of a Record: the data, the command's
// output pipes and the tail kept from them.
type outcome struct {
	rec        Recorder
	data       []byte
	max        int
	outR, errR *os.File
	outW, errW *os.File
	copied     sync.WaitGroup
	mu         sync.Mutex
	tail       []byte
}

func newOutcome(rec Recorder, max int) (*outcome, error) {
	f := os.NewFile(recordFD, "record")
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the record request: %w", err)
	}
	o := &outcome{rec: rec, data: data, max: max}
	if o.outR, o.outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if sameFile(os.Stdout, os.Stderr) {
		// One file behind both (a terminal, the journal, os/exec given
		// one writer for both): one pipe keeps the order the command
		// wrote in, which two pipes read by two goroutines would not.
		return o, nil
	}
	if o.errR, o.errW, err = os.Pipe(); err != nil {
		return nil, err
	}
	return o, nil
}

// sameFile reports whether a and b are open on one file.
func sameFile(a, b *os.File) bool {
	ai, err := a.Stat()
	if err != nil {
		return false
	}
	bi, err := b.Stat()
	return err == nil && os.SameFile(ai, bi)
}

// files are the command's standard input, output and error.
func (o *outcome) files() []uintptr {
	if o.errW == nil {
		return []uintptr{0, o.outW.Fd(), o.outW.Fd()}
	}
	return []uintptr{0, o.outW.Fd(), o.errW.Fd()}
}

// started closes this process's write ends (the command holds them now,
// or nobody does if it did not start) and passes the output on.
func (o *outcome) started() {
	o.outW.Close()
	o.copied.Add(1)
	go o.copy(os.Stdout, o.outR)
	if o.errW != nil {
		o.errW.Close()
		o.copied.Add(1)
		go o.copy(os.Stderr, o.errR)
	}
}

// copy passes r on to w byte for byte, keeping the tail. A failed write
// (the parent is gone) does not stop the reading: the command is not to
// block on a full pipe.
func (o *outcome) copy(w io.Writer, r *os.File) {
	defer o.copied.Done()
	defer r.Close()
	buf := make([]byte, 32<<10)
	ok := true
	for {
		n, err := r.Read(buf)
		if n > 0 {
			o.keep(buf[:n])
			if ok {
				_, werr := w.Write(buf[:n])
				ok = werr == nil
			}
		}
		if err != nil {
			return
		}
	}
}

func (o *outcome) keep(p []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tail = append(o.tail, p...)
	if len(o.tail) > o.max {
		o.tail = append(o.tail[:0], o.tail[len(o.tail)-o.max:]...)
	}
}

// copyWait bounds the wait for the output once the command's processes
// are gone: a descriptor handed to a process outside its tree keeps a
// pipe open (as os/exec's WaitDelay).
const copyWait = time.Second

// record calls the Recorder with st once the output is copied (or
// copyWait has passed), with a context that ends at deadline (a
// CLOCK_MONOTONIC instant), at least a second from now, or RecordPatience
// after it when the command was reaped at exitedAt before deadline.
func (o *outcome) record(st Status, deadline, exitedAt int64) error {
	if o.rec == nil {
		return fmt.Errorf("this supervisor cannot record (restart baton if its binary was replaced)")
	}
	done := make(chan struct{})
	go func() { o.copied.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(copyWait):
	}
	o.mu.Lock()
	tail := append([]byte(nil), o.tail...)
	o.mu.Unlock()
	inLease := exitedAt < deadline
	left := time.Duration(subSat(deadline, monoNow()))
	if inLease {
		left = max(left, 0) + RecordPatience
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(left, time.Second))
	defer cancel()
	return o.rec(ctx, o.data, st, inLease, tail)
}

// escapeLine makes s one event line.
func escapeLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }
