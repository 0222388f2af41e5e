// Package scenario runs scripted scenario tests of baton's pure machines
// (internal/election, internal/scheduler), in the manner of etcd raft's
// testdata: a file of steps, each a command line, a line "----" and the
// output the step must produce, up to a blank line.
//
//	# a comment
//	start token=2 node=n1
//	----
//	register
//
// Run the tests with -update to rewrite the expected outputs from what the
// machine does (then read the diff: the files are the specification).
package scenario

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/store"
)

var update = flag.Bool("update", false, "rewrite the scenario files' expected outputs")

// Step is one command: its name and its key=value arguments (an argument
// without "=" has the value "").
type Step struct {
	Line string
	Cmd  string
	Args []Arg
}

// Arg is one argument of a step.
type Arg struct{ Key, Val string }

// Get returns the value of the argument named key, and whether it is there.
func (s Step) Get(key string) (string, bool) {
	for _, a := range s.Args {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// Files runs every file matching glob (e.g. "testdata/*.txt") as a subtest.
// newRun is called once per file and returns the function that executes a
// step and returns its output (without a trailing newline); a step that
// cannot be executed fails the test through t.
func Files(t *testing.T, glob string, newRun func(t *testing.T) func(Step) string) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files match %s (%v)", glob, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { file(t, f, newRun(t)) })
	}
}

func file(t *testing.T, path string, run func(Step) string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l + "\n")
			continue
		}
		step := parse(l)
		var want []string
		j := i + 1
		if j < len(lines) && lines[j] == "----" {
			for j++; j < len(lines) && lines[j] != ""; j++ {
				want = append(want, lines[j])
			}
		}
		got := run(step)
		if !*update && got != strings.Join(want, "\n") {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, i+1, l, got, strings.Join(want, "\n"))
		}
		fmt.Fprintf(&out, "%s\n----\n", l)
		if got != "" {
			out.WriteString(got + "\n")
		}
		out.WriteString("\n")
		i = j // the blank line that ends the step, if any
		if j < len(lines) && lines[j] != "" {
			i = j - 1
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func parse(l string) Step {
	f := strings.Fields(l)
	s := Step{Line: l, Cmd: f[0]}
	for _, a := range f[1:] {
		k, v, _ := strings.Cut(a, "=")
		s.Args = append(s.Args, Arg{k, v})
	}
	return s
}

// Err returns the store error a scenario names: notfound, unavailable,
// conflict, invalid, stale (fence.ErrStaleToken), replaced, suspended, or boom (an
// error of no kind); "" is nil. ok is false for any other name.
func Err(name string) (err error, ok bool) {
	switch name {
	case "":
		return nil, true
	case "notfound":
		return store.ErrNotFound, true
	case "unavailable":
		return store.ErrUnavailable, true
	case "conflict":
		return store.ErrConflict, true
	case "invalid":
		return store.ErrInvalid, true
	case "stale":
		return fence.ErrStaleToken, true
	case "replaced":
		return store.ErrReplaced, true
	case "suspended":
		return store.ErrSuspended, true
	case "boom":
		return errors.New("boom"), true
	}
	return nil, false
}
