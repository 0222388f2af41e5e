package schedule_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// runLeader runs one node leading job on ms with the Runner options given,
// for d of virtual time, calling check every day; it returns the ledger.
func runLeader(t *testing.T, ms *memstore.Store, job schedule.Job, d time.Duration, check func(day int), opts ...schedule.Option) []store.Run {
	t.Helper()
	// A long lease: renewals are not what this measures.
	el, err := baton.New(ms, job.Name, baton.WithNode("a"), baton.WithLease(time.Hour),
		baton.WithRenew(20*time.Minute), baton.WithClockMargin(time.Second), baton.WithPoll(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]schedule.Option{schedule.WithPoll(time.Minute), schedule.WithRescan(time.Hour)}, opts...)
	r, err := schedule.New(ms, job, func(context.Context, schedule.Period, uint64) (int, string, error) { return 0, "", nil }, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		el.Run(ctx, func(ctx context.Context, tm *baton.Term) error { return r.Run(ctx, tm) })
	}()
	for day := 1; time.Duration(day)*24*time.Hour <= d; day++ {
		time.Sleep(24 * time.Hour)
		check(day)
	}
	// Stop between two periods: a cancel at the very instant a period
	// starts (a day's end is a whole second) races its start, and the
	// period is left running for the next leader (seen once in 4 runs of
	// the suite).
	time.Sleep(500 * time.Millisecond)
	cancel()
	<-done
	rs, err := ms.Runs(context.Background(), job.Name, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// The Runner prunes: a job run every second keeps at most its retention in
// the ledger (10,000 rows, plus what accrues between two prune rounds),
// every period still done once. internal/scheduler's test runs the same
// machine for 40 virtual days.
func TestRunnerRetentionEverySecond(t *testing.T) {
	const days = 1
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		every, _ := schedule.Every(time.Second, 0)
		job := schedule.Job{Name: "ticker", Schedule: every}
		keep := schedule.DefaultRetention
		// Between two rounds (DefaultPruneEvery apart) a round's batches
		// interleave with the periods; the ledger may exceed the
		// retention by what accrues meanwhile.
		bound := keep.Rows + int(schedule.DefaultPruneEvery/time.Second) + schedule.PruneBatch
		maxRows := 0
		rs := runLeader(t, ms, job, time.Duration(days)*24*time.Hour, func(day int) {
			rs, _ := ms.Runs(context.Background(), "ticker", "", 0)
			maxRows = max(maxRows, len(rs))
			if len(rs) > bound {
				t.Errorf("day %d: %d rows in the ledger, retention %v (bound %d)", day, len(rs), keep, bound)
			}
		}, schedule.WithRetention(keep))
		if len(rs) > bound || len(rs) < keep.Rows {
			t.Fatalf("after %d days: %d rows, want %d to %d", days, len(rs), keep.Rows, bound)
		}
		// What is left is the newest periods, contiguous and done.
		for i, r := range rs {
			if r.State != store.Done || r.Token != 1 {
				t.Fatalf("row %+v", r)
			}
			if i > 0 && !r.Scheduled.Equal(rs[i-1].Scheduled.Add(time.Second)) {
				t.Fatalf("a gap between %s and %s", rs[i-1].Period, r.Period)
			}
		}
		t.Logf("%d days every second: at most %d rows at a day's end, %d at the end (retention %v)", days, maxRows, len(rs), keep)
	})
}

// A job run every hour keeps its last 30 days (the age bound of the default
// retention); failed rows stay until pruned by hand. The 40 days always run;
// by default the leader renews its lease every 20 minutes (renewals are not
// what this measures, and a 10s renewal is 345,600 wake-ups), with
// testenv.Long (CI) every 10 seconds as a production lease does.
func TestRetentionByAge(t *testing.T) {
	lease, renew := time.Hour, 20*time.Minute
	if testenv.Long() {
		lease, renew = 30*time.Second, 10*time.Second
	}
	t.Logf("lease %v, renewed every %v", lease, renew)
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		hourly, _ := schedule.Every(time.Hour, 0)
		job := schedule.Job{Name: "hourly", Schedule: hourly}
		n := 0
		exec := func(context.Context, schedule.Period, uint64) (int, string, error) {
			n++
			if n == 3 {
				return 1, "failed once\n", nil
			}
			return 0, "", nil
		}
		el, err := baton.New(ms, "hourly", baton.WithNode("a"), baton.WithLease(lease),
			baton.WithRenew(renew), baton.WithClockMargin(time.Second), baton.WithPoll(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		r, err := schedule.New(ms, job, exec, schedule.WithPoll(time.Minute), schedule.WithRescan(6*time.Hour), schedule.WithRetention(schedule.DefaultRetention))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			el.Run(ctx, func(ctx context.Context, tm *baton.Term) error { return r.Run(ctx, tm) })
		}()
		time.Sleep(40 * 24 * time.Hour)
		cancel()
		<-done
		rs, _ := ms.Runs(context.Background(), "hourly", "", 0)
		var failed, oldest int
		for _, r := range rs {
			if r.State == store.Failed {
				failed++
				continue
			}
			if age := time.Since(r.Scheduled); age > 30*24*time.Hour+schedule.DefaultPruneEvery+time.Hour {
				oldest++
			}
		}
		if failed != 1 || oldest != 0 || len(rs) > 30*24+3 {
			t.Fatalf("%d rows after 40 days (%d failed, %d past 30 days)", len(rs), failed, oldest)
		}
	})
}
