package explore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/lab/scenario"
)

// shortest is, for each mutation, the configuration in which the
// explorer finds its shortest counterexample (the smaller configuration
// on a tie), measured with baton explore --config C --mutate NAME in
// every configuration it fits (docs/explore.md).
var shortest = map[string]string{
	"no-margin":      "2x1",
	"no-fence":       "2x1-tiny",
	"no-valid-check": "2x1-tiny",
	"wrap-deadline":  "2x1-hostile",

	"ignore-suspension":    "sched-2x1-suspend",
	"no-catch-up-cap":      "sched-2x1-tiny",
	"no-catch-up-window":   "sched-2x1-window",
	"no-jitter":            "sched-2x1-retry",
	"no-overlap-skip":      "sched-2x1",
	"no-retry-backoff":     "sched-2x1-retry",
	"no-timeout":           "sched-2x1-window",
	"node-jitter":          "sched-2x1-retry",
	"release-after-finish": "sched-2x1",
	"rerun-unknown-state":  "sched-2x1-damaged",
	"unfenced-ledger":      "sched-2x1",
	"prune-early":          "sched-2x1-prune",
	"prune-failed":         "sched-2x1-prune",
	"no-manual-exempt":     "sched-2x1-manual",
	"no-own-completion":    "sched-2x1-supervisor",
	"no-clock-guard":       "sched-2x1-clock",
	"no-step-down":         "sched-2x1-clock",
	"no-takeover-grace":    "sched-2x1-supervisor-late",
	"token-fenced-record":  "sched-2x1-supervisor-late",

	"session-no-margin":   "group-2x1-succession",
	"session-name-expiry": "group-2x1",
	"succession-no-raise": "group-1x2-left",
	"settle-stored-token": "group-2x1-settle",

	"succession-stored-version":   "group-2x1-release",
	"succession-adopt-unread":     "group-2x1-unread",
	"succession-list-ended":       "group-1x2-left",
	"succession-list-no-retry":    "group-1x2-transfer",
	"settle-new-version":          "group-1x1-check",
	"succession-adopt-unsynced":   "group-2x1-unsynced",
	"succession-adopt-across-gap": "group-2x1-gap",

	"no-pull":              "group-2x2-balance",
	"no-shares":            "group-2x2-shares",
	"prefer-no-safe-point": "sched-2x1-prefer",
	"prefer-no-hysteresis": "sched-2x1-prefer",
	"prefer-no-defer":      "2x1-prefer",
	"session-read-first":   "group-2x1-forge",

	"no-takeover":       "2x1-live",
	"sticky-suspension": "sched-2x1-live",
}

// slow are the mutations whose recorded configuration takes seconds to
// explore to the violation (tens of thousands of states or more):
// TestCounterexamplesAreShortest explores them only with
// BATON_EXPLORE_ALL=1, which .ci/run sets for it; their kept scripts are
// replayed by every go test all the same (TestCounterexamplesReplay).
var slow = map[string]bool{
	"no-overlap-skip":      true,
	"no-retry-backoff":     true,
	"release-after-finish": true,
	"unfenced-ledger":      true,
	"no-step-down":         true,
	"session-name-expiry":  true,
	"session-no-margin":    true,
	"no-shares":            true,
	"prefer-no-safe-point": true,
	"sticky-suspension":    true,
	"session-read-first":   true,

	"succession-list-no-retry": true,
	"settle-new-version":       true,
}

// counterexampleFile is where mutation m's shortest counterexample is kept.
func counterexampleFile(m string) string {
	return filepath.Join("testdata", "counterexamples", m+".txt")
}

// TestCounterexamplesReplay replays every mutation's shortest
// counterexample kept under testdata/counterexamples with the scenario
// runner: every step's output must be the one written, byte for byte,
// and each ends in its violation. Every mutation the explorer runs has
// one.
func TestCounterexamplesReplay(t *testing.T) {
	for _, m := range Mutations() {
		data, err := os.ReadFile(counterexampleFile(m))
		if err != nil {
			t.Fatalf("%s: no counterexample kept: %v (write it: go test ./internal/lab/explore -run TestCounterexamplesAreShortest -accept)", m, err)
		}
		head := "# baton explore --config " + shortest[m] + " --mutate " + m + "\n"
		if !strings.HasPrefix(string(data), head) || !strings.Contains(string(data), "\nviolation: ") {
			t.Fatalf("%s: the kept script is not %s's counterexample in %s:\n%s", m, m, shortest[m], data)
		}
	}
	scenario.Files(t, filepath.Join("testdata", "counterexamples", "*.txt"), func(t *testing.T) func(scenario.Step) string {
		return replayer(t.Fatalf)
	})
}

// TestCounterexamplesAreShortest explores each mutation in the
// configuration recorded for it and requires the kept script to be the
// one Script writes for the shortest path found, byte for byte (-accept
// rewrites it); with BATON_EXPLORE_ALL=1 it also explores every other
// configuration the mutation fits and requires none to find a shorter
// path (minutes). Without it, only the recorded configuration is
// explored, and not for the slow mutations: each stops at its first
// violation, in seconds (no-margin in 2x1 reaches 30,560 states).
func TestCounterexamplesAreShortest(t *testing.T) {
	all := os.Getenv("BATON_EXPLORE_ALL") != ""
	for _, m := range Mutations() {
		t.Run(m, func(t *testing.T) {
			best, ok := shortest[m]
			if !ok {
				t.Fatalf("no configuration recorded for %s", m)
			}
			for _, n := range Configs() {
				c, _ := Lookup(n)
				if !c.Fits(m) {
					continue
				}
				if (n != best || slow[m]) && !all {
					t.Logf("%s in %s: not explored (seconds to a minute): set BATON_EXPLORE_ALL=1", m, n)
					continue
				}
				c, r := exploreMutated(t, c, m)
				if n != best {
					data, err := os.ReadFile(counterexampleFile(m))
					if err != nil {
						t.Fatal(err)
					}
					if r.Violation != nil && strings.Count(string(data), "\n----\n")-1 > len(r.Path) {
						t.Errorf("%s: %s finds a path of %d events, shorter than the one kept (%s)", m, n, len(r.Path), best)
					}
					continue
				}
				if r.Violation == nil {
					t.Fatalf("%s not caught in %s: %v", m, n, r)
				}
				script, err := Script(c, r.Path, r.Violation)
				if err != nil {
					t.Fatal(err)
				}
				f := counterexampleFile(m)
				if *accept {
					if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if data, err := os.ReadFile(f); err != nil || string(data) != script {
					t.Errorf("%s: the kept counterexample is not the one explored (%v): accept it with go test ./internal/lab/explore -run TestCounterexamplesAreShortest -accept\nexplored:\n%s", m, err, script)
				}
			}
		})
	}
}
