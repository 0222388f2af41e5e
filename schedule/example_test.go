package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// A Runner works through a job's due periods while its node leads: here a
// job run by manual triggers only, one period triggered by hand (it needs
// no leader), run once by the leader under its fencing token, and recorded
// done in the store's run ledger.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := memstore.New()
	job := schedule.Job{Name: "billing"} // no Schedule: manual triggers only
	if _, err := schedule.Register(ctx, st, job, false); err != nil {
		log.Fatal(err)
	}
	key := schedule.ManualKey(time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC))
	if _, _, err := schedule.Trigger(ctx, st, job.Name, key); err != nil {
		log.Fatal(err)
	}

	exec := func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
		fmt.Println("run", p.Key, "manual", p.Manual, "token", token)
		return 0, "invoiced\n", nil
	}
	r, err := schedule.New(st, job, exec)
	if err != nil {
		log.Fatal(err)
	}
	e, err := baton.New(st, job.Name, baton.WithNode("node-a"))
	if err != nil {
		log.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() {
		stopped <- e.Run(ctx, func(ctx context.Context, t *baton.Term) error { return r.Run(ctx, t) })
	}()
	// Wait until the ledger records the period done, then stop the node:
	// Run resigns and returns ctx's error.
	for {
		run, err := st.GetRun(ctx, job.Name, key)
		if err != nil {
			log.Fatal(err)
		}
		if run.State == store.Done {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
	runs, err := st.Runs(context.Background(), job.Name, "", 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, run := range runs {
		fmt.Println("ledger", run.Period, run.State, "token", run.Token)
	}
	// Output:
	// run 2026-11-29T06:00:00Z~manual.000000 manual true token 1
	// ledger 2026-11-29T06:00:00Z~manual.000000 done token 1
}

// A scheduled job guarded against a wrong wall clock, as baton run runs it:
// a leader whose clock is off the reference (PostgreSQL's server clock, or
// a step detector) by more than a second runs nothing; after a minute of
// that it gives its term up (Run returns ErrClockHeld and the Elector
// resigns), waits until its clock agrees, and campaigns again, so that a
// node whose clock agrees leads meanwhile.
func ExampleWithClockStepDown() {
	ctx := context.Background()
	st := memstore.New()
	every, err := schedule.Every(time.Hour, 0)
	if err != nil {
		log.Fatal(err)
	}
	job := schedule.Job{Name: "billing", Schedule: every}
	ref := schedule.ClockReference(st)
	r, err := schedule.New(st, job, func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
		return 0, "", nil // the job's work, under token
	}, schedule.WithClockGuard(ref, schedule.DefaultClockTolerance), schedule.WithClockStepDown(schedule.DefaultClockStepDown))
	if err != nil {
		log.Fatal(err)
	}
	e, err := baton.New(st, job.Name)
	if err != nil {
		log.Fatal(err)
	}
	for {
		err := e.Run(ctx, func(ctx context.Context, t *baton.Term) error { return r.Run(ctx, t) })
		if !errors.Is(err, schedule.ErrClockHeld) {
			log.Fatal(err)
		}
		if err := schedule.AwaitClock(ctx, ref, baton.RealClock{}, schedule.DefaultClockTolerance, schedule.DefaultPoll); err != nil {
			log.Fatal(err)
		}
	}
}
