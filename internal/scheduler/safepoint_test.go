package scheduler_test

import (
	"testing"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// A machine is at a safe point (election.SafePoint) only in a term, and
// there only while no ledger write or effect is out: reads of the job and
// of the ledger precede any claim; a claim, its effect and its
// completion do not.
func TestAtSafePoint(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := scheduler.New(scheduler.Config{Job: "tick", Schedule: everySecond{}, Poll: time.Minute, Rescan: time.Hour, Retry: time.Second})
	if m.AtSafePoint() {
		t.Fatal("safe before a term")
	}
	var trail []string
	step := func(ev scheduler.Event) []scheduler.Action {
		acts := m.Step(start, ev)
		state := "busy"
		if m.AtSafePoint() {
			state = "safe"
		}
		for _, a := range acts {
			switch a.(type) {
			case scheduler.Register:
				trail = append(trail, "register:"+state)
			case scheduler.ReadJob:
				trail = append(trail, "job:"+state)
			case scheduler.ReadRuns:
				trail = append(trail, "runs:"+state)
			case scheduler.SwapRun:
				trail = append(trail, "swap:"+state)
			case scheduler.StartEffect:
				trail = append(trail, "effect:"+state)
			}
		}
		return acts
	}
	job := store.Job{Name: "tick", Created: start.Add(-1500 * time.Millisecond)}
	step(scheduler.Start{Token: 2, Node: "a"})
	step(scheduler.Registered{Job: job})
	step(scheduler.JobRead{Job: job})
	var claim store.Run
	for _, a := range step(scheduler.RunsRead{}) {
		if sw, ok := a.(scheduler.SwapRun); ok {
			claim = sw.Swap.Run
		}
	}
	if claim.Period == "" {
		t.Fatalf("no claim: %v", trail)
	}
	claim.Version = 1
	step(scheduler.Swapped{Run: claim})
	step(scheduler.EffectDone{})
	done := claim
	done.State, done.Version = store.Done, 2
	step(scheduler.Swapped{Run: done})
	want := []string{"register:busy", "job:safe", "runs:safe", "swap:busy", "effect:busy", "swap:busy", "job:safe"}
	if len(trail) != len(want) {
		t.Fatalf("trail %v, want %v", trail, want)
	}
	for i := range want {
		if trail[i] != want[i] {
			t.Fatalf("trail %v, want %v", trail, want)
		}
	}
	step(scheduler.End{})
	if m.AtSafePoint() {
		t.Fatal("safe after the term ended")
	}
}
