//go:build nolab

package main

import "context"

// The release build (scripts/release.sh: -tags nolab) is the operator's
// binary: it leaves out the lab's commands, 'baton drill', 'baton sim',
// 'baton explore' and 'baton bench', with the in-process drill, the virtual cluster and
// the simulator they link. Each is one clear line here, pointing to the
// default build, which has them.

func runDrill(ctx context.Context, e *env, args []string) int { return e.notInRelease("drill") }
func runSim(ctx context.Context, e *env, args []string) int   { return e.notInRelease("sim") }
func runBench(ctx context.Context, e *env, args []string) int { return e.notInRelease("bench") }
func runExplore(ctx context.Context, e *env, args []string) int {
	return e.notInRelease("explore")
}

// notInRelease is the one line (exit 2) of a lab command in the release
// build.
func (e *env) notInRelease(cmd string) int {
	return e.fail(cmd, usagef("not in this build: the release binary is the operator's and leaves the lab out; run it from the source: go run ./cmd/baton %s", cmd))
}
