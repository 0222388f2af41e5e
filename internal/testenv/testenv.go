// Package testenv decides what a test does when something it needs from the
// environment (a PostgreSQL server, an etcd member) is missing.
//
// Locally such a test skips with a message naming what is missing. In CI the
// variable BATON_REQUIRE lists the components that must be present (a comma
// list such as "postgres,etcd"); a test that needs a listed component fails
// instead of skipping, so a broken CI environment cannot pass silently.
package testenv

import (
	"os"
	"strings"
	"testing"
)

// RequireVar is the environment variable that lists the required
// components.
const RequireVar = "BATON_REQUIRE"

// Require ends the test because component is unavailable, for the reason
// why: with t.Fatalf if BATON_REQUIRE lists component, with t.Skipf
// otherwise. It never returns.
func Require(t testing.TB, component, why string) {
	t.Helper()
	if Required(component) {
		t.Fatalf("%s is required (%s=%q) but unavailable: %s", component, RequireVar, os.Getenv(RequireVar), why)
	}
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
