package scheduler_test

import (
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// A daily job at 02:00 UTC whose leader was gone for three days: with the
// catch-up policy "latest" and a window of two days, the new leader skips
// the older periods, visibly, and runs the newest one.
func Example_decide() {
	daily, _ := schedule.Every(24*time.Hour, 2*time.Hour)
	created := time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC)
	ledger := []store.Run{{
		Job: "billing", Period: "2026-05-02T02:00:00Z", State: store.Done, Token: 1,
		Scheduled: time.Date(2026, 5, 2, 2, 0, 0, 0, time.UTC), Version: 7,
	}}
	plan := scheduler.Decide(scheduler.Input{
		Now:      time.Date(2026, 5, 5, 8, 0, 0, 0, time.UTC),
		Created:  created,
		Schedule: daily,
		Policy:   scheduler.Policy{CatchUp: scheduler.CatchUpLatest, Window: 48 * time.Hour},
		Token:    2,
		Rows:     ledger,
	})
	for _, a := range plan.Moves {
		if a.Reason != "" {
			fmt.Println(a.Step, a.Period.Key, a.Reason)
		} else {
			fmt.Println(a.Step, a.Period.Key)
		}
	}
	fmt.Println("next due:", schedule.Key(plan.Wake))
	// Output:
	// skip 2026-05-03T02:00:00Z skipped: 54h0m0s late, outside the catch-up window of 48h0m0s
	// skip 2026-05-04T02:00:00Z skipped: catch-up policy latest, a newer period is due
	// claim 2026-05-05T02:00:00Z
	// next due: 2026-05-06T02:00:00Z
}
