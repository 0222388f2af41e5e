package testenv

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// skips records the tests that Require skipped in this test binary, by
// component, for Run's report.
var skips struct {
	mu    sync.Mutex
	by    map[string]*skipped
	order []string // components in the order of their first skip
}

// skipped is what Require skipped for one component: the reasons it gave,
// the first first, and the names of the tests.
type skipped struct {
	whys  []string
	tests []string
}

// recordSkip notes that the test name skipped because component is
// unavailable, for why.
func recordSkip(component, why, name string) {
	skips.mu.Lock()
	defer skips.mu.Unlock()
	if skips.by == nil {
		skips.by = map[string]*skipped{}
	}
	s := skips.by[component]
	if s == nil {
		s = &skipped{}
		skips.by[component] = s
		skips.order = append(skips.order, component)
	}
	if !slices.Contains(s.whys, why) {
		s.whys = append(s.whys, why)
	}
	s.tests = append(s.tests, name)
}

// Run runs the tests (m.Run) and then says which components were missing
// and how many tests skipped because of each: one line per component,
// such as
//
//	baton: github.com/batonhq/baton/fence/pgfence: skipped 9 tests (TestA, TestB, TestC, …): postgres unavailable: … (set BATON_REQUIRE=postgres to make this a failure)
//
// It returns m.Run's exit code. A package whose tests can call Require
// calls it from its TestMain (os.Exit(testenv.Run(m)); pgtest.Main does),
// so that a newcomer's `go test ./...` says what it did not test.
//
// go test shows a passing package's output only with -v (or when it tests
// the package in the current directory, `go test` without arguments), so
// the report goes to standard error, where -v and a failing package show
// it, and, without -v, also to the controlling terminal (/dev/tty) if the
// tests run on one: that is how a plain `go test ./...` on a terminal
// shows it. Not guaranteed: a cached result (`ok … (cached)`) replays no
// report, since the tests did not run (-count=1 runs them); and without a
// terminal (CI, a pipe into a file) only -v shows it, which is why CI sets
// BATON_REQUIRE and fails instead of skipping.
func Run(m *testing.M) int {
	atExit.mu.Lock()
	atExit.running = true
	atExit.mu.Unlock()
	code := m.Run()
	atExit.mu.Lock()
	fs := atExit.fs
	atExit.fs, atExit.running = nil, false
	atExit.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	report := skipReport(packagePath())
	if report == "" {
		return code
	}
	fmt.Fprint(os.Stderr, report)
	if !testing.Verbose() {
		if tty := openTTY(); tty != nil {
			io.WriteString(tty, report)
			tty.Close()
		}
	}
	return code
}

// maxNamed bounds the test names a report line lists.
const maxNamed = 3

// skipReport returns the lines that say what Require skipped, for the
// package pkg, or "" if it skipped nothing.
func skipReport(pkg string) string {
	skips.mu.Lock()
	defer skips.mu.Unlock()
	var b strings.Builder
	for _, c := range skips.order {
		s := skips.by[c]
		names := append([]string(nil), s.tests...)
		sort.Strings(names)
		listed := strings.Join(names[:min(len(names), maxNamed)], ", ")
		if len(names) > maxNamed {
			listed += ", …"
		}
		noun := "tests"
		if len(names) == 1 {
			noun = "test"
		}
		why := oneLine(s.whys[0])
		if n := len(s.whys) - 1; n == 1 {
			why += "; and 1 other reason (go test -v shows each)"
		} else if n > 1 {
			why += fmt.Sprintf("; and %d other reasons (go test -v shows each)", n)
		}
		fmt.Fprintf(&b, "baton: %s: skipped %d %s (%s): %s unavailable: %s (set %s=%s to make this a failure)\n",
			pkg, len(names), noun, listed, c, why, RequireVar, c)
	}
	return b.String()
}

// oneLine keeps a reason to its first line, so that each component's
// report stays one line.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// packagePath returns the import path of the package under test, from the
// directory go test runs its binary in (the package's) and the module's
// go.mod; the directory itself if there is no go.mod above it.
func packagePath() string {
	dir, err := os.Getwd()
	if err != nil {
		return "?"
	}
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
					rel, err := filepath.Rel(d, dir)
					if err != nil {
						return dir
					}
					return path.Join(strings.Trim(f[1], `"`), filepath.ToSlash(rel))
				}
			}
			return dir
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// atExit holds what AtExit registered.
var atExit struct {
	mu      sync.Mutex
	running bool // inside Run's m.Run
	fs      []func()
}

// AtExit registers f to run once the package's tests are over, in Run
// (the last registered first), and reports true; outside Run (a TestMain
// that does not call it, or none) it registers nothing and reports false,
// and the caller keeps what it would share per test instead. It is for
// what the tests of a binary share (a browser) and must stop before the
// binary exits.
func AtExit(f func()) bool {
	atExit.mu.Lock()
	defer atExit.mu.Unlock()
	if !atExit.running {
		return false
	}
	atExit.fs = append(atExit.fs, f)
	return true
}
