package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// goldenStore returns a store with a fixed clock holding: billing, a job
// every 10m led by b (token 2) after a takeover from a, rescheduled once,
// with done, failed, skipped, running and manual pending rows and one node
// (c) waiting; report, a job registered and never run, nobody leading.
func goldenStore(t *testing.T) (*memstore.Store, time.Time) {
	t.Helper()
	now := time.Date(2026, 3, 28, 12, 0, 30, 0, time.UTC)
	clock := now.Add(-time.Hour)
	ms := memstore.New(memstore.WithTime(func() time.Time { return clock }))
	ctx := context.Background()
	mustDo := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	old, _ := schedule.Every(time.Hour, 0)
	every, _ := schedule.Every(10*time.Minute, 0)
	_, err := ms.EnsureJob(ctx, store.Job{Name: "billing", Schedule: schedule.Describe(old, schedule.Policy{})})
	mustDo(err)
	rec, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: "a", Incarnation: "a-1", Token: 1, Lease: 15 * time.Second}, Event: store.Acquired})
	mustDo(err)
	clock = clock.Add(10 * time.Minute)
	rec, err = ms.Swap(ctx, store.Swap{Expect: rec.Version, Record: store.Record{Name: "billing", Holder: "b", Incarnation: "b-7", Token: 2, Lease: 15 * time.Second}, Event: store.TakenOver})
	mustDo(err)
	clock = clock.Add(5 * time.Minute)
	_, err = ms.UpdateJob(ctx, store.JobUpdate{Name: "billing", Expect: schedule.Describe(old, schedule.Policy{}),
		Schedule: schedule.Describe(every, schedule.Policy{CatchUp: schedule.CatchUpLatest, Window: time.Hour})})
	mustDo(err)
	rec, err = ms.Get(ctx, "billing")
	mustDo(err)
	rec.Transfer = "c"
	clock = clock.Add(time.Minute)
	_, err = ms.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec, Event: store.TransferRequested})
	mustDo(err)

	at := now.Truncate(10 * time.Minute).Add(-50 * time.Minute)
	row := func(k int, state store.RunState, token uint64, holder string, delay time.Duration, exit int, manual bool) {
		t.Helper()
		s := at.Add(time.Duration(k) * 10 * time.Minute)
		key := schedule.Key(s)
		if manual {
			s = s.Add(3*time.Minute + 250*time.Millisecond)
			key = schedule.ManualKey(s)
		}
		r := store.Run{Job: "billing", Period: key, Scheduled: s, State: state, Token: token, Holder: holder, Attempt: 1, Manual: manual, ExitCode: exit}
		if state != store.Pending && state != store.Skipped {
			r.Started = s.Add(delay)
		}
		if state.Final() && state != store.Skipped {
			r.Finished = r.Started.Add(42 * time.Second)
		}
		_, err := ms.SwapRun(ctx, store.RunSwap{Run: r})
		mustDo(err)
	}
	row(0, store.Done, 1, "a", 150*time.Millisecond, 0, false)
	row(1, store.Skipped, 2, "b", 0, 0, false)
	row(2, store.Failed, 2, "b", 2*time.Minute+3*time.Second, 3, false)
	row(2, store.Done, 2, "b", 20*time.Millisecond, 0, true)
	row(3, store.Done, 2, "b", 1500*time.Millisecond, 0, false)
	row(4, store.Running, 2, "b", 90*time.Millisecond, 0, false)
	row(4, store.Pending, 0, "", 0, 0, true)

	clock = now.Add(-30 * time.Second)
	mustDo(ms.Heartbeat(ctx, store.Candidate{Name: "billing", Node: "c", Incarnation: "c-2", Every: 5 * time.Second}))
	clock = now.Add(-2 * time.Second)
	mustDo(ms.Heartbeat(ctx, store.Candidate{Name: "billing", Node: "c", Incarnation: "c-2", Every: 5 * time.Second}))
	mustDo(ms.Heartbeat(ctx, store.Candidate{Name: "billing", Node: "z", Incarnation: "z-1", Every: 5 * time.Second}))
	clock = now.Add(-time.Hour)
	mustDo(ms.Heartbeat(ctx, store.Candidate{Name: "billing", Node: "gone", Incarnation: "g-1", Every: 5 * time.Second}))

	clock = now.Add(-2 * time.Hour)
	daily, _ := schedule.Cron("30 2 * * *", mustLoc(t, "Europe/Paris"))
	_, err = ms.EnsureJob(ctx, store.Job{Name: "report", Schedule: schedule.Describe(daily, schedule.Policy{})})
	mustDo(err)
	clock = now
	return ms, now
}

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("time zone %s: %v", name, err)
	}
	return loc
}

// The human output of status, history and runs, byte for byte
// (go test ./cmd/baton -run Golden -update rewrites testdata/*.golden).
func TestGoldenReadCommands(t *testing.T) {
	ms, now := goldenStore(t)
	tests := []struct {
		golden string
		args   []string
	}{
		{"status_billing.golden", []string{"status", "billing"}},
		{"status_report.golden", []string{"status", "report"}},
		{"history_billing.golden", []string{"history", "billing"}},
		{"runs_billing.golden", []string{"runs", "billing"}},
		{"runs_billing_limit.golden", []string{"runs", "--limit", "2", "billing"}},
		{"next_paris_dst.golden", []string{"next", "--cron", "30 2 * * *", "--tz", "Europe/Paris", "--from", "2026-03-27T00:00:00Z", "--count", "4"}},
		{"next_paris_dst_autumn.golden", []string{"next", "--cron", "30 2 * * *", "--tz", "Europe/Paris", "--from", "2026-10-23T00:00:00Z", "--count", "4"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			var out, errb strings.Builder
			e := &env{stdout: &out, stderr: &errb, now: func() time.Time { return now },
				open: func(context.Context, string) (store.Store, error) { return ms.Client(""), nil }}
			if code := e.run(context.Background(), append(tt.args, "--store", "mem:")); code != exitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			checkGolden(t, tt.golden, out.String())
		})
	}
}
