package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// outputSample is binary output: every byte value, a line of 200 KiB
// (more than lineWriter's 64 KiB) made of every byte but the newline, and
// no newline at the end.
func outputSample() []byte {
	var b []byte
	for i := range 256 {
		b = append(b, byte(i))
	}
	for len(b) < 256+200<<10 {
		for i := range 256 {
			if i != '\n' {
				b = append(b, byte(i))
			}
		}
	}
	return b
}

// baton run passes COMMAND's standard output and error through byte for
// byte by default (binary, no newline added at the end, no line split),
// and --output-lines frames them, as its help says.
func TestProcessRunOutputBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	sample := outputSample()
	file := filepath.Join(t.TempDir(), "sample")
	if err := os.WriteFile(file, sample, 0o600); err != nil {
		t.Fatal(err)
	}
	// What lineWriter makes of it: split every maxLine bytes after the
	// last newline, and a newline at the end.
	i := bytes.LastIndexByte(sample, '\n') + 1
	framed := append([]byte(nil), sample[:i]...)
	for rest := sample[i:]; len(rest) > 0; {
		n := min(len(rest), maxLine)
		framed = append(append(framed, rest[:n]...), '\n')
		rest = rest[n:]
	}
	for _, tc := range []struct {
		name  string
		flags []string
		want  []byte
	}{
		{"raw", nil, sample},
		{"output-lines", []string{"--output-lines"}, framed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := "sqlite:" + filepath.Join(t.TempDir(), "b.db")
			args := append([]string{"run", "--once", "--log-level", "error", "--store", db}, tc.flags...)
			args = append(args, "J", "--", "sh", "-c", `cat "$1"; cat "$1" >&2`, "sh", file)
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), "BATON_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("baton run --once: %v; stderr (%d bytes) ends %q", err, errb.Len(), tailOf(errb.Bytes()))
			}
			for _, s := range []struct {
				name string
				got  []byte
			}{{"standard output", out.Bytes()}, {"standard error", errb.Bytes()}} {
				if !bytes.Equal(s.got, tc.want) {
					t.Errorf("%s: %d bytes, want %d; first difference at %d; ends %q", s.name, len(s.got), len(tc.want), firstDiff(s.got, tc.want), tailOf(s.got))
				}
			}
		})
	}
}

// firstDiff returns the index of the first byte where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// tailOf returns the last 40 bytes of b.
func tailOf(b []byte) []byte { return b[max(0, len(b)-40):] }
