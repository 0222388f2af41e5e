package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// everySecond is the schedule of every whole second.
type everySecond struct{}

func (everySecond) Next(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }

// drive runs the machine for one leader on virtual time against a memstore
// until the wall time reaches end, executing every action at once (effects
// succeed at once), and calls check after every action. A Halt ends it and
// is returned; a Fail fails the test.
func drive(t *testing.T, st store.Store, cfg scheduler.Config, start, end time.Time, check func(now time.Time)) (halted error) {
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
				case scheduler.ReadJob:
					j, err := st.GetJob(ctx, cfg.Job)
					reply = scheduler.JobRead{Job: j, Err: err}
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
				case scheduler.Halt:
					return a.Cause
				case scheduler.Fail:
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
			return nil
		}
		now = next
		queue = append(queue, scheduler.Tick{})
	}
}

// A job run every second for 40 virtual days keeps at most its retention
// in the ledger: 10,000 rows (the default, schedule.DefaultRetention), plus
// at most what accrues between two prune rounds; every period is done once
// and the rows kept are the newest ones, without a gap. The forty days run
// with testenv.Long (CI=true or BATON_LONG=1); by default two days, which
// still pass the row bound (10,000 rows are under three hours) and prune
// every round; under the race detector, a tenth of either (at least a day).
// .ci/run runs the forty days without the race detector too.
func TestRetentionFortyDaysEverySecond(t *testing.T) {
	days := 2
	if testenv.Long() {
		days = 40
	}
	if raceOn {
		days = max(1, days/10) // the same rounds, ten times fewer
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

// Pruning happens when nothing is due, in batches, down to the retention;
// a prune under a stale token deletes nothing and halts the machine like
// any other fenced write.
func TestPruneBatchesAndFence(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := memstore.New(memstore.WithTime(func() time.Time { return start }))
	rec, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "tick", Holder: "a", Incarnation: "a1", Token: 1, Lease: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1234; i++ { // old rows, from before the job's registration
		at := start.Add(-time.Duration(1234-i) * time.Hour)
		if _, err := ms.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "tick", Period: scheduler.Key(at), Scheduled: at, State: store.Done, Token: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := scheduler.Config{Job: "tick", Schedule: everySecond{}, Poll: time.Minute, Rescan: time.Hour, Retry: time.Second,
		Retention: scheduler.Retention{Rows: 100}, PruneEvery: 10 * time.Minute, PruneBatch: 500}
	if err := drive(t, ms, cfg, start, start.Add(5*time.Second), func(time.Time) {}); err != nil {
		t.Fatal(err)
	}
	rs, _ := ms.Runs(ctx, "tick", "", 0)
	if len(rs) != 100+5 && len(rs) != 100+4 {
		t.Fatalf("%d rows after the first round, want the 100 newest plus the new periods", len(rs))
	}
	// A newer leader took the record: the next round's prune is refused.
	rec.Token = 2
	if _, err := ms.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
		t.Fatal(err)
	}
	cfg.Schedule = nil // nothing due: the machine only prunes
	halted := drive(t, ms, cfg, start.Add(time.Hour), start.Add(2*time.Hour), func(time.Time) {})
	if !errors.Is(halted, fence.ErrStaleToken) {
		t.Fatalf("a prune under a stale token: %v, want a halt with fence.ErrStaleToken", halted)
	}
	if after, _ := ms.Runs(ctx, "tick", "", 0); len(after) != len(rs) {
		t.Fatalf("a refused prune deleted rows: %d, then %d", len(rs), len(after))
	}
}
