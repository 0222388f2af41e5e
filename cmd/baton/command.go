package main

import (
	"bytes"
	"io"
	"sync"
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

// lockedWriter serialises writes to w. baton's log lines and the lines of
// its commands' output share one mutex, so a line is never cut by another.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// maxLine is the longest line a lineWriter holds back; a longer one is
// written in pieces of this size, each ended by a newline. maxLineText
// says it in --help.
const (
	maxLine     = 64 << 10
	maxLineText = "64 KiB"
)

// lineWriter passes whole lines to a lockedWriter (--output-lines): a
// command's output is written line by line, never interleaved mid-line
// with baton's log or with the command's other stream. It changes the
// bytes: Flush ends a last unterminated line with a newline, and a line
// longer than maxLine is cut by newlines. Without --output-lines the
// output goes through byte for byte (rawWriter).
type lineWriter struct {
	mu  sync.Mutex
	out lockedWriter
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		if _, err := l.out.Write(l.buf[:i+1]); err != nil {
			return 0, err
		}
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	for len(l.buf) >= maxLine {
		if _, err := l.out.Write(append(l.buf[:maxLine:maxLine], '\n')); err != nil {
			return 0, err
		}
		l.buf = append(l.buf[:0], l.buf[maxLine:]...)
	}
	return len(p), nil
}

// Flush writes what is left of an unterminated last line, with a newline.
func (l *lineWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.out.Write(append(l.buf, '\n'))
		l.buf = l.buf[:0]
	}
}

// rawWriter passes a command's output to a lockedWriter byte for byte,
// each write as the command made it (the default, as flock passes it): a
// log line may come after a partial line. Flush does nothing.
type rawWriter struct{ out lockedWriter }

func (r rawWriter) Write(p []byte) (int, error) { return r.out.Write(p) }

// Flush is a no-op: nothing is held back.
func (rawWriter) Flush() {}

// outputWriter is where a command's stream goes: rawWriter or lineWriter.
type outputWriter interface {
	io.Writer
	// Flush writes what is held back once the command has exited.
	Flush()
}
