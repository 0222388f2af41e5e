//go:build !nolab

package main

import (
	"context"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/lab/explore"
)

// baton explore --list names every configuration and the mutations.
func TestExploreList(t *testing.T) {
	code, out, stderr := runBaton(t, "explore", "--list")
	if code != exitOK || stderr != "" || !strings.Contains(out, "2x1-tiny ") || !strings.Contains(out, "3x1 ") ||
		!strings.Contains(out, "2x1-hostile ") || !strings.Contains(out, "sched-2x1-tiny ") ||
		!strings.Contains(out, "mutations: ignore-suspension, no-catch-up-cap, ") || !strings.Contains(out, " unfenced-ledger, wrap-deadline\n") ||
		!strings.Contains(out, "sched-2x1-clock ") ||
		strings.Contains(out, "not expressible yet") != (len(explore.NotExpressibleMutations()) > 0) ||
		(len(explore.NotExpressibleMutations()) > 0 && !strings.Contains(out, "not expressible yet (baton sim's others): "+strings.Join(explore.NotExpressibleMutations(), ", ")+"\n")) {
		t.Fatalf("exit %d, stderr %q:\n%s", code, stderr, out)
	}
}

// A bad flag is one line, exit 2.
func TestExploreBadFlags(t *testing.T) {
	bad := [][]string{
		{"--config", "9x9"},
		{"--mutate", "no-pull", "--config", "group-2x1"},
		{"--mutate", "nonsense"},
		{"--mutate", "wrap-deadline", "--config", "2x1-tiny"},
		{"--mutate", "no-margin", "--config", "2x1-hostile"},
		{"--mutate", "no-margin", "--config", "sched-2x1-tiny"},
		{"--mutate", "no-catch-up-cap", "--config", "2x1-tiny"},
		{"--mutate", "rerun-unknown-state", "--config", "sched-2x1-tiny"},
		{"--mutate", "prefer-no-safe-point", "--config", "2x1-prefer"},
		{"--mutate", "prefer-no-defer", "--config", "2x1-tiny"},
		{"--mutate", "no-margin", "--config", "2x1-prefer"},
		{"--mutate", "no-takeover", "--config", "2x1-tiny"},
		{"--mutate", "no-fence", "--config", "2x1-live"},
		{"--config", "2x1-live", "--depth", "5"},
		{"--depth", "-1"},
		{"--depth", "x"},
		{"extra"},
	}
	if ne := explore.NotExpressibleMutations(); len(ne) > 0 {
		bad = append(bad, []string{"--mutate", ne[0]}) // not expressible yet: exit 2, and why
	}
	for _, args := range bad {
		code, out, stderr := runBaton(t, append([]string{"explore"}, args...)...)
		if code != exitUsage || out != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "baton explore") {
			t.Errorf("explore %v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
	}
}

// The tiny configuration completes with 0 violations, exit 0.
func TestExploreTiny(t *testing.T) {
	t.Parallel() // computes alone
	code, out, stderr := runBaton(t, "explore", "--config", "2x1-tiny")
	if code != exitOK || stderr != "" || !strings.Contains(out, "(complete)") || !strings.Contains(out, "0 violations") {
		t.Fatalf("exit %d, stderr %q:\n%s", code, stderr, out)
	}
}

// A mutation exits 1 and prints a shortest counterexample as a scenario
// script: the one explore.Script writes for it, which the scenario runner
// replays from a file with the same output at every step
// (internal/lab/explore's TestMutationsAreCaught; this package cannot
// link the runner, whose -update flag its tests define too).
func TestExploreMutationPrintsAReplayableScript(t *testing.T) {
	code, out, stderr := runBaton(t, "explore", "--config", "2x1-tiny", "--mutate", "no-valid-check")
	i := strings.Index(out, "# baton explore --config 2x1-tiny --mutate no-valid-check\n")
	if code != exitFailure || stderr != "" || i < 0 || !strings.Contains(out, "VIOLATION after 10 events") {
		t.Fatalf("exit %d, stderr %q:\n%s", code, stderr, out)
	}
	script := out[i:]
	if !strings.Contains(script, "\nviolation: node-0 began a write with token 1 outside its term") {
		t.Fatalf("the script does not end in the violation:\n%s", script)
	}
	c, _ := explore.Lookup("2x1-tiny")
	c, _ = c.Mutated("no-valid-check")
	r, err := explore.Explore(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	want, err := explore.Script(c, r.Path, r.Violation)
	if err != nil || script != want {
		t.Fatalf("the printed script is not explore.Script's (%v):\n%s\nwant:\n%s", err, script, want)
	}
}

// Every mutation of baton sim is either one the explorer runs or one it
// refuses in one line, exit 2, saying that it is not expressible yet and
// why; a name that is no mutation is refused as such.
func TestExploreEveryMutationOfTheSimulator(t *testing.T) {
	sims := strings.Split(strings.ReplaceAll(mutationList, " or ", ", "), ", ")
	if len(sims) < 30 {
		t.Fatalf("the simulator's mutations: %q", sims)
	}
	runs := explore.Mutations()
	for _, m := range sims {
		if slices.Contains(runs, m) {
			continue
		}
		code, out, stderr := runBaton(t, "explore", "--mutate", m)
		if code != exitUsage || out != "" || strings.Count(stderr, "\n") != 1 ||
			!strings.HasPrefix(stderr, "baton explore: --mutate "+m+": not expressible in the explorer yet: ") {
			t.Errorf("explore --mutate %s: exit %d, stdout %q, stderr %q", m, code, out, stderr)
		}
	}
	for _, m := range append(runs, explore.NotExpressibleMutations()...) {
		if !slices.Contains(sims, m) {
			t.Errorf("%s is no mutation of baton sim", m)
		}
	}
	code, _, stderr := runBaton(t, "explore", "--mutate", "nonsense")
	if code != exitUsage || !strings.Contains(stderr, "no such mutation") {
		t.Errorf("explore --mutate nonsense: exit %d, stderr %q", code, stderr)
	}
}

// wrap-deadline, without --config, runs only where it fits (the planted
// record of 2x1-hostile) and is caught there at once.
func TestExploreWrapDeadline(t *testing.T) {
	code, out, stderr := runBaton(t, "explore", "--mutate", "wrap-deadline")
	if code != exitFailure || stderr != "" || !strings.HasPrefix(out, "2x1-hostile --mutate wrap-deadline: ") ||
		!strings.Contains(out, "VIOLATION after 3 events") || !strings.Contains(out, "\nviolation: node-0's swap wrote over the record planted held by ghost") {
		t.Fatalf("exit %d, stderr %q:\n%s", code, stderr, out)
	}
}

// TestExploreGC: the explorer collects at 400% unless the environment
// chose a GOGC or GOMEMLIMIT, which it leaves alone.
func TestExploreGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	limit := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(limit)
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		exploreGC(func(k string) string {
			if k == env {
				return "200"
			}
			return ""
		})
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("with $%s set, GC percent %d, want the runtime's 100 untouched", env, got)
		}
	}
	exploreGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("GC percent %d, want 400", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 4<<30 {
		t.Errorf("memory limit %d, want 4 GiB", got)
	}
}
