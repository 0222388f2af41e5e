package inspect_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// counting counts the ledger rows a caller reads.
type counting struct {
	store.Store
	rows int
}

func (c *counting) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	rs, err := c.Store.Runs(ctx, job, after, limit)
	c.rows += len(rs)
	return rs, err
}

func (c *counting) RecentRuns(ctx context.Context, job, before string, limit int) ([]store.Run, error) {
	rs, err := c.Store.RecentRuns(ctx, job, before, limit)
	c.rows += len(rs)
	return rs, err
}

// Read reads a bounded number of rows, whatever the ledger's size, and
// still finds the open periods among the newest and the last finished one.
func TestReadIsBounded(t *testing.T) {
	ctx := context.Background()
	every, _ := schedule.Every(time.Second, 0)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{10, 1000, 5000} {
		ms := memstore.New(memstore.WithTime(func() time.Time { return start }))
		if _, err := ms.EnsureJob(ctx, store.Job{Name: "j", Schedule: schedule.Describe(every, schedule.Policy{})}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			at := start.Add(time.Duration(i) * time.Second)
			state := store.Done
			if i == n-1 {
				state = store.Running
			}
			if _, err := ms.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "j", Period: schedule.Key(at), Scheduled: at, State: state}}); err != nil {
				t.Fatal(err)
			}
		}
		c := &counting{Store: ms}
		now := start.Add(time.Duration(n) * time.Second)
		v, err := inspect.Read(ctx, c, "j", now, inspect.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c.rows > inspect.DefaultRows+1 {
			t.Errorf("ledger of %d rows: read %d rows, want at most %d", n, c.rows, inspect.DefaultRows+1)
		}
		if len(v.Open) != 1 || v.Last == nil || v.Last.Period != schedule.Key(now.Add(-2*time.Second)) || v.More != (n > inspect.DefaultRows) {
			t.Errorf("ledger of %d rows: open %+v, last %+v, more %v", n, v.Open, v.Last, v.More)
		}
		if d := v.Job.NextDue; d == nil || d.Period != schedule.Key(now) || d.Overdue {
			t.Errorf("next due %+v, want %s", d, schedule.Key(now))
		}
	}
	if _, err := inspect.Read(ctx, memstore.New(), "nothing", start, inspect.Options{}); !errors.Is(err, inspect.ErrUnknown) {
		t.Errorf("Read of an unknown name: %v", err)
	}
}
