package scheduler_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// A ledger row in a state no baton writes (a store that hands it out
// unchecked) ends the machine's work with one error naming the row: its
// period is never claimed again. With the rerun-unknown-state mutation the
// row is claimed as attempt 2, as every state the machine did not know
// was before the rule.
func TestUnknownStateNeverRerun(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	weird := store.Run{Job: "tick", Period: scheduler.Key(start.Add(-time.Hour)), Scheduled: start.Add(-time.Hour),
		State: "weird", Token: 1, Holder: "old", Attempt: 1, Manual: true, Version: 7}
	for _, mutate := range []bool{false, true} {
		cfg := scheduler.Config{Job: "tick", Schedule: everySecond{}, Poll: time.Minute, Rescan: time.Hour, Retry: time.Second}
		cfg.Mutate.RerunUnknownState = mutate
		m := scheduler.New(cfg)
		queue := []scheduler.Event{scheduler.Start{Token: 2, Node: "a"}}
		var failed error
		var claimed []store.Run
		for steps := 0; len(queue) > 0 && steps < 100; steps++ {
			ev := queue[0]
			queue = queue[1:]
			for _, a := range m.Step(start, ev) {
				switch a := a.(type) {
				case scheduler.Register:
					queue = append(queue, scheduler.Registered{Job: store.Job{Name: "tick", Created: start}})
				case scheduler.ReadJob:
					queue = append(queue, scheduler.JobRead{Job: store.Job{Name: "tick", Created: start}})
				case scheduler.ReadRuns:
					queue = append(queue, scheduler.RunsRead{Rows: []store.Run{weird}})
				case scheduler.SwapRun:
					claimed = append(claimed, a.Swap.Run)
				case scheduler.Fail:
					failed = a.Err
				}
			}
		}
		var rerun bool
		for _, r := range claimed {
			rerun = rerun || r.Period == weird.Period
		}
		if mutate {
			if !rerun {
				t.Fatalf("with the mutation: claims %+v, fail %v; want the damaged row claimed again", claimed, failed)
			}
			continue
		}
		if rerun || failed == nil || !errors.Is(failed, store.ErrCorrupt) || !strings.Contains(failed.Error(), weird.Period) || !strings.Contains(failed.Error(), `"weird"`) {
			t.Fatalf("claims %+v, fail %v; want no claim and a Fail wrapping ErrCorrupt naming the row", claimed, failed)
		}
	}
}
