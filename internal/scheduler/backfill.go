package scheduler

import (
	"fmt"
	"time"

	"github.com/batonhq/baton/store"
)

// Backfill outcomes of one period (BackfillItem.Do).
const (
	// BackfillAdd: the period has no row; backfill writes it pending.
	BackfillAdd = "add"
	// BackfillRerun: the period failed or was skipped; backfill makes it
	// pending again (its attempts keep counting).
	BackfillRerun = "rerun"
	// BackfillKeep: the period is done, pending or running; backfill
	// leaves it as it is.
	BackfillKeep = "keep"
)

// BackfillItem is what a backfill does with one scheduled period.
type BackfillItem struct {
	Period Period
	// Do is BackfillAdd, BackfillRerun or BackfillKeep.
	Do string
	// Prev is the period's row as read (Version 0: none).
	Prev store.Run
}

// MaxBackfill bounds a backfill's number of periods.
const MaxBackfill = 100_000

// PlanBackfill returns what a backfill of the scheduled instants of s in
// [from, to] does, oldest first, given the job's rows of those periods
// (in any order; other rows are ignored). It is pure. It refuses a range
// with more than max periods, or none, and a to after now (a backfill
// covers periods already due).
//
// A period without a row is added, a failed or skipped one is re-run, a
// done, pending or running one is kept: so a second backfill of the same
// range adds nothing. The rows it writes are manual triggers of the
// periods' own keys (schedule.Trigger): the leader claims them in key
// order, one at a time, whatever the catch-up policy, the cap, the window
// or the overlap policy, since an operator asked for each of them.
func PlanBackfill(s Schedule, from, to, now time.Time, rows []store.Run, max int) ([]BackfillItem, error) {
	switch {
	case s == nil:
		return nil, fmt.Errorf("the job has no schedule: it runs only manual triggers; use trigger")
	case to.Before(from):
		return nil, fmt.Errorf("--to %s is before --from %s", Key(to), Key(from))
	case to.After(now):
		return nil, fmt.Errorf("--to %s is in the future; a backfill covers periods already due (up to %s)", Key(to), Key(now))
	case max < 1 || max > MaxBackfill:
		return nil, fmt.Errorf("--max %d: want 1 to %d", max, MaxBackfill)
	}
	byKey := make(map[string]store.Run, len(rows))
	for _, r := range rows {
		byKey[r.Period] = r
	}
	var items []BackfillItem
	for t := s.Next(from.Add(-time.Nanosecond)); !t.IsZero() && !t.After(to); t = s.Next(t) {
		if len(items) == max {
			return nil, fmt.Errorf("more than --max %d periods from %s to %s; narrow the range or raise --max", max, Key(from), Key(to))
		}
		key := Key(t)
		it := BackfillItem{Period: Period{Key: key, Scheduled: t.UTC(), Manual: true}, Do: BackfillAdd}
		if r, ok := byKey[key]; ok {
			it.Prev = r
			switch r.State {
			case store.Failed, store.Skipped:
				it.Do = BackfillRerun
			default:
				it.Do = BackfillKeep
			}
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("no period of the schedule from %s to %s", Key(from), Key(to))
	}
	return items, nil
}
