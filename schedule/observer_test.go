package schedule_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// observed records what a Runner reports.
type observed struct {
	mu        sync.Mutex
	states    map[store.RunState]int
	delays    []time.Duration
	successes int
	rejected  int
}

func (o *observed) PeriodState(job string, s store.RunState) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.states[s]++
}

func (o *observed) RunStarted(job string, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.delays = append(o.delays, d)
}

func (o *observed) RunSucceeded(job string, t time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.successes++
}

func (o *observed) JobSuspended(job string, suspended bool) {}

func (o *observed) FenceRejected(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rejected++
}

// The Runner reports every claim, start, outcome and success to its
// Observer.
func TestRunnerObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		o := &observed{states: map[store.RunState]int{}}
		n := 0
		exec := func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
			n++
			if n == 2 {
				return 1, "", errors.New("exit status 1")
			}
			return 0, "", nil
		}
		job := schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second)}
		e, err := baton.New(ms, job.Name, baton.WithNode("a"), baton.WithLease(lease), baton.WithRenew(renew), baton.WithPoll(poll))
		if err != nil {
			t.Fatal(err)
		}
		r, err := schedule.New(ms, job, exec, schedule.WithPoll(poll), schedule.WithObserver(o))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 35*time.Second)
		defer cancel()
		e.Run(ctx, func(ctx context.Context, t *baton.Term) error { return r.Run(ctx, t) })
		e.Close(context.Background())

		o.mu.Lock()
		defer o.mu.Unlock()
		if o.states[store.Running] != 3 || o.states[store.Done] != 2 || o.states[store.Failed] != 1 || o.successes != 2 || len(o.delays) != 3 {
			t.Fatalf("observed states %v, %d successes, delays %v; want 3 running, 2 done, 1 failed", o.states, o.successes, o.delays)
		}
		for _, d := range o.delays {
			if d < 0 || d > poll {
				t.Errorf("start delay %v, want within the poll interval %v", d, poll)
			}
		}
		if _, err := schedule.New(ms, job, exec, schedule.WithObserver(nil)); err == nil {
			t.Fatal("WithObserver(nil): want an error")
		}
	})
}
