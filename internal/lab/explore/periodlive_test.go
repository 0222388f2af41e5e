package explore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// periodControls are the negative controls of the period liveness check
// (Work.Live) whose mutation's shortest counterexample lies in another
// configuration (testdata/counterexamples/MUTATION.txt is that one's):
// each mutation's counterexample in the configuration named is kept as
// testdata/counterexamples/MUTATION.CONFIG.txt, which
// TestCounterexamplesReplay replays with the others.
var periodControls = map[string]string{
	// The election never takes a held record over: nothing unsafe, but
	// once the leader crashes no period is run again.
	"no-takeover": "sched-2x1-live",
}

// TestPeriodLivenessBlind explores sched-2x1-live to completion with
// each negative control of the period liveness check, with that check
// left out: no violation, so the other checks alone do not see them.
func TestPeriodLivenessBlind(t *testing.T) {
	for _, m := range []string{"no-takeover", "sticky-suspension"} {
		if m != "no-takeover" && os.Getenv("BATON_EXPLORE_ALL") == "" {
			t.Logf("%s: not explored without the check (seconds): set BATON_EXPLORE_ALL=1", m)
			continue
		}
		c, _ := Lookup("sched-2x1-live")
		blind, err := c.Mutated(m)
		if err != nil {
			t.Fatal(err)
		}
		blind.unjudged = true
		r, err := Explore(context.Background(), blind)
		t.Logf("without the period check: %v", r)
		if err != nil || r.Violation != nil || r.Bounded {
			t.Errorf("%s in sched-2x1-live without the period check: want no violation, complete; got %v (%v)", m, r, err)
		}
	}
}

// TestPeriodLivenessControls explores each control's mutation in its
// configuration and requires a period liveness violation, found in a
// state at the horizon (the path's last event moves time there), whose
// script is the one kept, byte for byte (-accept rewrites it).
func TestPeriodLivenessControls(t *testing.T) {
	for m, n := range periodControls {
		c, _ := Lookup(n)
		c, r := exploreMutated(t, c, m)
		if r.Violation == nil || !strings.HasPrefix(r.Violation.Error(), "liveness: period ") {
			t.Fatalf("%s in %s: want a period liveness violation, got %v", m, n, r)
		}
		if last := r.Path[len(r.Path)-1]; last.Kind != evAdvance || last.To != c.End {
			t.Errorf("%s in %s: the violation comes at %s, not at the horizon %v", m, n, last.line(), c.End)
		}
		script, err := Script(c, r.Path, r.Violation)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join("testdata", "counterexamples", m+"."+n+".txt")
		if *accept {
			if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if data, err := os.ReadFile(f); err != nil || string(data) != script {
			t.Errorf("%s in %s: the kept counterexample is not the one explored (%v): accept it with go test ./internal/lab/explore -run TestPeriodLivenessControls -accept\nexplored:\n%s", m, n, err, script)
		}
	}
}

// The limit of sched-2x1-live is derived, not chosen: its horizon less
// vcluster.Settle of its election and one scheduler poll, at or after its
// third period, so that all three are demanded.
func TestPeriodLimit(t *testing.T) {
	c, _ := Lookup("sched-2x1-live")
	if got, want := c.PeriodLimit(), 3*time.Second; got != want {
		t.Errorf("sched-2x1-live's limit is %v, want %v (5.6s - (1s + 2*50ms + 2*500ms) - 500ms)", got, want)
	}
	bad := c
	bad.Prompt = false
	if err := bad.Validate(); err == nil {
		t.Errorf("a period liveness check without a prompt store validated")
	}
	bad = c
	bad.MaxDepth = 10
	if err := bad.Validate(); err == nil {
		t.Errorf("a period liveness check cut at a depth validated")
	}
}

// A path whose job is suspended at the horizon is not held to its
// periods; one resumed is, and one whose periods are unfinished fails.
func TestCheckPeriods(t *testing.T) {
	c, _ := Lookup("sched-2x1-live")
	w := newWorld(&c, nil)
	if err := w.checkPeriods(); err != nil {
		t.Fatalf("before the horizon: %v", err)
	}
	w.now = c.End
	err := w.checkPeriods()
	if err == nil || !strings.Contains(err.Error(), "period 2025-12-31T23:59:57Z (due at -3s)") {
		t.Fatalf("no period finished at the horizon: got %v, want the first period unfinished", err)
	}
	if err := w.do(Event{Kind: evSuspend}, nil); err != nil {
		t.Fatalf("suspended at the horizon: %v", err)
	}
	if err := w.do(Event{Kind: evContinue}, nil); err == nil {
		t.Fatalf("resumed at the horizon with no period finished: no violation")
	}
	for _, k := range []string{"2025-12-31T23:59:57Z", "2026-01-01T00:00:00Z", "2026-01-01T00:00:03Z"} {
		w.finish(k)
	}
	if err := w.checkPeriods(); err != nil {
		t.Fatalf("every period finished: %v", err)
	}
}
