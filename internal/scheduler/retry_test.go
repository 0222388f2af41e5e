package scheduler_test

import (
	"testing"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// A failed period with retries left is claimed again RetryBackoff after it
// finished, with one more attempt; until then it brings Wake forward; once
// Attempt passes Retries it is final.
func TestDecideRetries(t *testing.T) {
	every10m, _ := schedule.Every(10*time.Minute, 0)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := func(min int) string { return schedule.Key(base.Add(time.Duration(min) * time.Minute)) }
	failedAt := func(min, attempt int, finished time.Duration) store.Run {
		r := row("j", k(min), store.Failed, 1, 5)
		r.Attempt, r.Finished = attempt, base.Add(time.Duration(min)*time.Minute+finished)
		return r
	}
	retry2 := scheduler.Policy{Retries: 2, RetryBackoff: time.Minute}
	now := base.Add(5 * time.Minute) // 00:05; the next period is 00:10
	tests := []struct {
		name   string
		policy scheduler.Policy
		rows   []store.Run
		want   string
		wake   time.Time
	}{
		{"no retries: failed is final", scheduler.Policy{}, []store.Run{failedAt(0, 1, time.Minute)}, "", base.Add(10 * time.Minute)},
		{"backoff not over: wake at the retry", retry2, []store.Run{failedAt(0, 1, 4*time.Minute+30*time.Second)}, "", base.Add(5*time.Minute + 30*time.Second)},
		{"backoff over: claimed again", retry2, []store.Run{failedAt(0, 1, 4*time.Minute)}, "claim 00:00", base.Add(10 * time.Minute)},
		{"second retry", retry2, []store.Run{failedAt(0, 2, 4*time.Minute)}, "claim 00:00", base.Add(10 * time.Minute)},
		{"retries used up", retry2, []store.Run{failedAt(0, 3, time.Minute)}, "", base.Add(10 * time.Minute)},
		{"done is never retried", retry2, []store.Run{func() store.Run { r := failedAt(0, 1, time.Minute); r.State = store.Done; return r }()}, "", base.Add(10 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := scheduler.Input{Now: now, Created: base.Add(-time.Minute), Schedule: every10m, Policy: tt.policy, Token: 2, Rows: tt.rows}
			p := scheduler.Decide(in)
			if got := planString(p); got != tt.want || !p.Wake.Equal(tt.wake) {
				t.Fatalf("plan %q wake %v; want %q wake %v", got, p.Wake.Format("15:04:05"), tt.want, tt.wake.Format("15:04:05"))
			}
			for _, m := range p.Moves {
				if sw := m.Swap("j", 2, "n", now); sw.Run.Attempt != m.Prev.Attempt+1 || sw.Run.State != store.Running || sw.Run.Output != "" {
					t.Errorf("retry claim %+v", sw.Run)
				}
			}
		})
	}

	// A retry the catch-up policy would skip is not claimed, and not
	// overwritten as skipped: its failure stays recorded.
	latest := retry2
	latest.CatchUp = scheduler.CatchUpLatest
	in := scheduler.Input{Now: base.Add(15 * time.Minute), Created: base.Add(-time.Minute), Schedule: every10m, Policy: latest, Token: 2,
		Rows: []store.Run{failedAt(0, 1, time.Minute)}}
	if got := planString(scheduler.Decide(in)); got != "claim 00:10" {
		t.Fatalf("latest with an old failure: %q, want only the current period claimed", got)
	}
}
