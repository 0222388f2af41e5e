package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// everySecond is the schedule of every whole second.
type everySecond struct{}

func (everySecond) Next(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }

// drive runs the machine for one leader on virtual time against a memstore
// until the wall time reaches end, executing every action at once (effects
// succeed at once), and calls check after every action.
func drive(t *testing.T, st store.Store, cfg scheduler.Config, start, end time.Time, check func(now time.Time)) {
	t.Helper()
	ctx := context.Background()
	m := scheduler.New(cfg)
	now := start
	queue := []scheduler.Event{scheduler.Start{Token: 1, Node: "a"}}
	for {
		for len(queue) > 0 {
			ev := queue[0]
			queue = queue[1:]
			for _, a := range m.Step(now, ev) {
				var reply scheduler.Event
				switch a := a.(type) {
				case scheduler.Register:
					j, err := st.EnsureJob(ctx, store.Job{Name: cfg.Job, Schedule: "every 1s"})
					reply = scheduler.Registered{Job: j, Err: err}
				case scheduler.ReadRuns:
					rows, err := st.Runs(ctx, cfg.Job, a.After, 0)
					reply = scheduler.RunsRead{Rows: rows, Err: err}
				case scheduler.SwapRun:
					r, err := st.SwapRun(ctx, a.Swap)
					reply = scheduler.Swapped{Run: r, Err: err}
				case scheduler.GetRun:
					r, err := st.GetRun(ctx, cfg.Job, a.Period)
					reply = scheduler.ReadBack{Run: r, Err: err}
				case scheduler.StartEffect:
					reply = scheduler.EffectDone{}
				case scheduler.Prune:
					n, err := st.PruneRuns(ctx, a.Prune)
					reply = scheduler.Pruned{N: n, Err: err}
				case scheduler.Halt, scheduler.Fail:
					t.Fatalf("%T %+v", a, a)
				}
				if reply != nil {
					queue = append(queue, reply)
				}
			}
		}
		check(now)
		next := m.Next()
		if next.IsZero() || !next.Before(end) {
			return
		}
		now = next
		queue = append(queue, scheduler.Tick{})
	}
}

// A job run every second for 40 virtual days keeps at most its retention
// in the ledger: 10,000 rows (the default, schedule.DefaultRetention), plus
// at most what accrues between two prune rounds; every period is done once
// and the rows kept are the newest ones, without a gap. (Four days under
// the race detector or -short.)
func TestRetentionFortyDaysEverySecond(t *testing.T) {
	days := 40
	if raceOn || testing.Short() {
		days = 4 // the same rounds, ten times fewer
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := memstore.New(memstore.WithTime(func() time.Time { return start }))
	if _, err := ms.Swap(context.Background(), store.Swap{Record: store.Record{Name: "tick", Holder: "a", Incarnation: "a1", Token: 1, Lease: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	keep := scheduler.Retention{Age: 30 * 24 * time.Hour, Rows: 10000}
	every := 10 * time.Minute
	cfg := scheduler.Config{Job: "tick", Schedule: everySecond{}, Poll: time.Minute, Rescan: 6 * time.Hour, Retry: time.Second,
		Retention: keep, PruneEvery: every, PruneBatch: 500}
	bound := keep.Rows + int(every/time.Second) + cfg.PruneBatch
	maxRows, lastDay := 0, -1
	drive(t, ms, cfg, start, start.Add(time.Duration(days)*24*time.Hour), func(now time.Time) {
		if day := int(now.Sub(start) / (24 * time.Hour)); day != lastDay {
			lastDay = day
			rs, _ := ms.Runs(context.Background(), "tick", "", 0)
			maxRows = max(maxRows, len(rs))
			if len(rs) > bound {
				t.Fatalf("day %d: %d rows in the ledger; retention %d rows (bound %d)", day, len(rs), keep.Rows, bound)
			}
		}
	})
	rs, _ := ms.Runs(context.Background(), "tick", "", 0)
	end := start.Add(time.Duration(days) * 24 * time.Hour)
	if len(rs) < keep.Rows || len(rs) > bound || rs[len(rs)-1].Scheduled.Before(end.Add(-2*time.Second)) {
		t.Fatalf("after %d days: %d rows, the newest %s", days, len(rs), rs[len(rs)-1].Period)
	}
	for i, r := range rs {
		if r.State != store.Done || (i > 0 && !r.Scheduled.Equal(rs[i-1].Scheduled.Add(time.Second))) {
			t.Fatalf("row %d of %d: %+v after %s", i, len(rs), r, rs[max(i-1, 0)].Period)
		}
	}
	t.Log(fmt.Sprintf("%d days every second (%d periods): at most %d rows at a day's start, %d at the end", days, days*86400, maxRows, len(rs)))
}
