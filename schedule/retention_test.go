package schedule_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

func TestRetentionPrune(t *testing.T) {
	now := mustTime(t, "2026-03-31T00:00:00Z")
	for _, tc := range []struct {
		r      schedule.Retention
		before string
		keep   int
	}{
		{schedule.Retention{}, "", 0},
		{schedule.Retention{Age: 30 * 24 * time.Hour}, "2026-03-01T00:00:00Z", 0},
		{schedule.Retention{Rows: 10}, "", 10},
		{schedule.Retention{Age: 24 * time.Hour, Rows: 10}, "2026-03-30T00:00:00Z", 10},
	} {
		p := tc.r.Prune("j", now, []store.RunState{store.Done}, 5)
		if p.Before != tc.before || p.Keep != tc.keep || p.Job != "j" || p.Limit != 5 {
			t.Errorf("%v.Prune = %+v", tc.r, p)
		}
	}
	if s := schedule.DefaultRetention.String(); s != "30d or 10000 rows" {
		t.Errorf("DefaultRetention = %q", s)
	}
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "72h": 72 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := schedule.ParseAge(in); err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "0d", "-1d", "d", "3w", "0s", "-5m"} {
		if _, err := schedule.ParseAge(bad); err == nil {
			t.Errorf("ParseAge(%q) accepted", bad)
		}
	}
}

// Prune deletes done and skipped rows past the retention in batches, and
// failed ones only when asked; open rows and the newest scheduled row stay.
func TestPrune(t *testing.T) {
	ctx := context.Background()
	ms := memstore.New()
	now := mustTime(t, "2026-03-31T00:00:00Z")
	for i := 0; i < 1200; i++ {
		at := now.Add(-time.Duration(1200-i) * time.Hour)
		state := store.Done
		switch i % 10 {
		case 3:
			state = store.Failed
		case 7:
			state = store.Skipped
		}
		if i == 5 {
			state = store.Pending
		}
		if _, err := ms.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "j", Period: schedule.Key(at), Scheduled: at, State: state}}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(s store.RunState) int {
		rs, _ := ms.Runs(ctx, "j", "", 0)
		n := 0
		for _, r := range rs {
			if r.State == s {
				n++
			}
		}
		return n
	}
	n, err := schedule.Prune(ctx, ms, "j", schedule.Retention{Rows: 100}, now, false)
	if err != nil {
		t.Fatal(err)
	}
	// The newest 100 rows stay; of the 1100 older ones, done and skipped
	// go (990 less the pending one).
	if n != 989 || count(store.Failed) != 120 || count(store.Pending) != 1 {
		t.Fatalf("deleted %d; %d failed, %d pending left", n, count(store.Failed), count(store.Pending))
	}
	n, err = schedule.Prune(ctx, ms, "j", schedule.Retention{Rows: 100}, now, true)
	if err != nil || n != 110 || count(store.Failed) != 10 {
		t.Fatalf("prune with failed rows: deleted %d, %v; %d failed left", n, err, count(store.Failed))
	}
	// A fenced prune with a stale token deletes nothing.
	if _, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "j", Holder: "a", Incarnation: "a1", Token: 2}}); err != nil {
		t.Fatal(err)
	}
	_, err = ms.PruneRuns(ctx, store.Prune{Job: "j", Before: "9", States: []store.RunState{store.Done}, Limit: 10, Fenced: true, Token: 1})
	if err == nil || errors.Is(err, store.ErrInvalid) {
		t.Fatalf("stale fenced prune: %v", err)
	}
}

func TestRegister(t *testing.T) {
	ctx := context.Background()
	ms := memstore.New()
	ten, _ := schedule.Every(10*time.Second, 0)
	hourly, _ := schedule.Cron("@hourly", time.UTC)
	a := schedule.Job{Name: "billing", Schedule: ten}
	b := schedule.Job{Name: "billing", Schedule: hourly}
	if j, err := schedule.Register(ctx, ms, a, false); err != nil || j.Schedule != "every 10s; catch-up all" {
		t.Fatalf("Register = %+v, %v", j, err)
	}
	if _, err := schedule.Register(ctx, ms, a, false); err != nil {
		t.Fatalf("Register again with the same schedule: %v", err)
	}
	_, err := schedule.Register(ctx, ms, b, false)
	if !errors.Is(err, schedule.ErrScheduleMismatch) || err.Error() != `job billing is registered with schedule "every 10s; catch-up all", this node has "cron \"@hourly\" in UTC; catch-up all": start it with the same schedule, or reschedule (baton run --reschedule) to replace the stored one` {
		t.Fatalf("Register with another schedule: %v", err)
	}
	c := b
	c.Policy.CatchUp = schedule.CatchUpNone
	if _, err := schedule.Register(ctx, ms, c, true); err != nil {
		t.Fatal(err)
	}
	if j, _ := ms.GetJob(ctx, "billing"); j.Schedule != `cron "@hourly" in UTC; catch-up none` {
		t.Fatalf("after a reschedule: %+v", j)
	}
}

// A job registered by an older baton (its schedule alone) is the same job
// for a node with that schedule and the default policy.
func TestRegisterOlderDescription(t *testing.T) {
	ctx := context.Background()
	ms := memstore.New()
	ten, _ := schedule.Every(10*time.Second, 0)
	if _, err := ms.EnsureJob(ctx, store.Job{Name: "billing", Schedule: ten.String()}); err != nil {
		t.Fatal(err)
	}
	if _, err := schedule.Register(ctx, ms, schedule.Job{Name: "billing", Schedule: ten}, false); err != nil {
		t.Fatalf("Register over an older description of the same schedule: %v", err)
	}
	latest := schedule.Job{Name: "billing", Schedule: ten, Policy: schedule.Policy{CatchUp: schedule.CatchUpLatest}}
	if _, err := schedule.Register(ctx, ms, latest, false); !errors.Is(err, schedule.ErrScheduleMismatch) {
		t.Fatalf("Register with another policy over an older description: %v", err)
	}
}
