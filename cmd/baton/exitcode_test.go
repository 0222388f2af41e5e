package main

import (
	"strings"
	"testing"
)

// One convention for every backend: a store that cannot be reached is a
// runtime failure (exit 1), a bad URL or path a usage error (exit 2), but
// for a read command, which never creates a store: there a missing store
// is "no baton store at PATH" (exit 1). The message is one line and never
// shows a password. 'baton run' without --once waits for a store that
// cannot be reached (TestRunWaitsForPostgres) but not for a path in a
// directory that does not exist: waiting will not make it.
func TestStoreExitCodes(t *testing.T) {
	t.Parallel() // waits on unreachable addresses
	tests := []struct {
		url               string
		wantRead, wantRun int
	}{
		{"postgres://baton:s3cret@127.0.0.1:1/db?connect_timeout=2", exitFailure, exitFailure},
		{"etcd://127.0.0.1:1?dial-timeout=300ms&request-timeout=300ms", exitFailure, exitFailure},
		{"sqlite:/nonexistent/dir/baton.db", exitFailure, exitUsage},
	}
	for _, tt := range tests {
		runs := [][]string{{"status", "--store", tt.url, "j"}, {"run", "--once", "--store", tt.url, "j", "--", "true"}}
		if tt.wantRun == exitUsage {
			runs = append(runs, []string{"run", "--store", tt.url, "j", "--", "true"})
		}
		for _, args := range runs {
			want := tt.wantRun
			if args[0] == "status" {
				want = tt.wantRead
			}
			code, _, stderr := runBaton(t, args...)
			if code != want || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "s3cret") {
				t.Errorf("baton %s: exit %d, want %d; stderr %q", strings.Join(args, " "), code, want, stderr)
			}
		}
	}
}
