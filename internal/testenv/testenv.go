// Package testenv decides what a test does when something it needs from the
// environment (a PostgreSQL server, an etcd member, a Chromium browser) is
// missing.
//
// Locally such a test skips with a message naming what is missing. In CI the
// variable BATON_REQUIRE lists the components that must be present (a comma
// list such as "postgres,etcd"); a test that needs a listed component fails
// instead of skipping, so a broken CI environment cannot pass silently.
//
// Run, called from a package's TestMain, ends its tests with one line per
// missing component saying how many tests skipped for it, so that a plain
// `go test ./...` says what it did not test (see Run for where that line
// shows and where it does not).
package testenv

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// RequireVar is the environment variable that lists the required
// components.
const RequireVar = "BATON_REQUIRE"

// Require ends the test because component is unavailable, for the reason
// why: with t.Fatalf if BATON_REQUIRE lists component, with t.Skipf
// otherwise. It never returns. A skip is recorded for the report that Run
// prints at the end of the package's tests.
func Require(t testing.TB, component, why string) {
	t.Helper()
	if Required(component) {
		t.Fatalf("%s is required (%s=%q) but unavailable: %s", component, RequireVar, os.Getenv(RequireVar), why)
	}
	recordSkip(component, why, t.Name())
	t.Skipf("skipping: %s unavailable: %s (set %s=%s to make this a failure)", component, why, RequireVar, component)
}

// Required reports whether BATON_REQUIRE lists component.
func Required(component string) bool {
	for _, c := range strings.Split(os.Getenv(RequireVar), ",") {
		if strings.EqualFold(strings.TrimSpace(c), component) {
			return true
		}
	}
	return false
}

// ChromiumVar names the environment variable that points to a Chromium
// binary when it is not on PATH under a usual name.
const ChromiumVar = "BATON_CHROMIUM"

// Chromium returns the path of a Chromium (or Chrome) binary for browser
// tests: $BATON_CHROMIUM, else the first of chromium, chromium-browser,
// google-chrome on PATH. Without one it ends the test through Require with
// the component "chromium": a skip locally, a failure when BATON_REQUIRE
// lists chromium (CI installs Debian's chromium package).
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(ChromiumVar); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			Require(t, "chromium", fmt.Sprintf("%s=%s: %v", ChromiumVar, p, err))
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Require(t, "chromium", "no chromium, chromium-browser or google-chrome on PATH (apt-get install chromium)")
	return ""
}

// LongVar names the environment variable that asks for the full-length
// versions of the long tests outside CI.
const LongVar = "BATON_LONG"

// Long reports whether the long tests run at full length: when CI=true
// (.ci/run sets it) or BATON_LONG=1. Otherwise they run a shorter version
// that can still fail (fewer seeds, days or rounds, never none), so that
// `go test ./...` stays quick on a developer's machine. A test that
// shortens itself says by how much in its doc comment and logs the length
// it ran.
func Long() bool {
	return os.Getenv("CI") == "true" || os.Getenv(LongVar) == "1"
}

// ParallelUnlessLong marks t to run in parallel with the package's other
// parallel tests, unless the long tests run (Long: CI). It is for real-time
// tests that mostly wait (on leases, rounds, processes) and bound timing
// with slack: beside each other they cost a developer's run little CPU,
// while CI, which runs them under the race detector at full length, keeps
// them one at a time so that their slack holds on two loaded cores.
func ParallelUnlessLong(t *testing.T) {
	if !Long() {
		t.Parallel()
	}
}

// DefaultParallel, called from a TestMain, lets n parallel tests run at
// once (instead of one per CPU) unless -test.parallel is given. It is for
// packages whose parallel tests mostly wait on real time or on other
// processes.
func DefaultParallel(n int) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}
