package runner_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/internal/scheduler/runner"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// The drill's momentary triggers reach the machine through Runner.Trigger
// only: a trigger fed while no term runs is dropped, one fed during a term
// is claimed at once and run under the term's token, and nothing of it is
// a ledger row before the claim.
func TestMomentaryTrigger(t *testing.T) {
	st := memstore.New()
	ran := make(chan scheduler.Period, 4)
	var tokens []uint64
	r, err := runner.New(runner.Config{
		Machine: scheduler.Config{Job: "billing", Poll: time.Second, Rescan: time.Minute, Retry: time.Second, Momentary: true},
		Spec:    schedule.Job{Name: "billing"}.Spec(), Store: st, Clock: baton.RealClock{}, CallTimeout: time.Second,
		Exec: func(ctx context.Context, p scheduler.Period, token uint64) (int, string, error) {
			tokens = append(tokens, token)
			ran <- p
			return 0, "", nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)
	early := scheduler.Trigger{Key: schedule.Key(at.Add(-24 * time.Hour)), Scheduled: at.Add(-24 * time.Hour)}
	r.Trigger(early) // no term runs: dropped when the next one starts

	term, cancel, done := runTerm(t, st, r)

	tr := scheduler.Trigger{Key: schedule.Key(at), Scheduled: at}
	deadline := time.After(10 * time.Second)
	var got scheduler.Period
wait:
	for {
		r.Trigger(tr) // Run may not have drained the early trigger yet
		select {
		case got = <-ran:
			break wait
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("the momentary trigger never ran")
		}
	}
	cancel()
	<-done
	if got.Key != tr.Key || !got.Scheduled.Equal(at) {
		t.Fatalf("ran %+v, want the period %s", got, tr.Key)
	}
	if tokens[0] != term.Token() {
		t.Fatalf("ran under token %d, want the term's %d", tokens[0], term.Token())
	}
	select {
	case p := <-ran:
		if p.Key == early.Key {
			t.Fatalf("the trigger fed before the term ran: %+v", p)
		}
	default:
	}
	run, err := st.GetRun(context.Background(), "billing", tr.Key)
	if err != nil || run.Token != term.Token() {
		t.Fatalf("ledger row of the trigger: %+v, %v", run, err)
	}
}

// New refuses a Config that cannot run, naming what is wrong, and returns
// the machine's own bounds as they are.
func TestNewValidates(t *testing.T) {
	exec := func(context.Context, scheduler.Period, uint64) (int, string, error) { return 0, "", nil }
	ok := runner.Config{Machine: scheduler.Config{Job: "j", Poll: time.Second, Rescan: time.Minute, Retry: time.Second},
		Store: memstore.New(), Exec: exec, Clock: baton.RealClock{}, CallTimeout: time.Second}
	if _, err := runner.New(ok); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*runner.Config){
		"store":     func(c *runner.Config) { c.Store = nil },
		"executor":  func(c *runner.Config) { c.Exec = nil },
		"clock":     func(c *runner.Config) { c.Clock = nil },
		"timeout":   func(c *runner.Config) { c.CallTimeout = 0 },
		"reference": func(c *runner.Config) { c.Machine.ClockTolerance = time.Second },
		"poll":      func(c *runner.Config) { c.Machine.Poll = 0 },
	} {
		c := ok
		mod(&c)
		if _, err := runner.New(c); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

// A graceful stop (Run's context ends while a period runs) interrupts the
// effect and gives its row back before Run returns, so before the caller
// resigns the term: the row is pending, under the term's token and its
// attempt, for the next term to claim at once.
func TestStopReleasesTheRun(t *testing.T) {
	st := memstore.New()
	started := make(chan struct{})
	r, err := runner.New(runner.Config{
		Machine: scheduler.Config{Job: "billing", Poll: time.Second, Rescan: time.Minute, Retry: time.Second, TakeoverGrace: time.Minute},
		Spec:    schedule.Job{Name: "billing"}.Spec(), Store: st, Clock: baton.RealClock{}, CallTimeout: time.Second,
		Exec: func(ctx context.Context, p scheduler.Period, token uint64) (int, string, error) {
			close(started)
			<-ctx.Done()
			return -1, "", fmt.Errorf("%w: %w", scheduler.ErrInterrupted, context.Cause(ctx))
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	key := schedule.Key(time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC))
	if _, _, err := schedule.Trigger(t.Context(), st, "billing", key); err != nil {
		t.Fatal(err)
	}
	term, cancel, done := runTerm(t, st, r)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the period never started")
	}
	cancel()
	<-done
	if term.Err() != nil {
		t.Fatalf("the term ended before Run returned: %v", term.Err())
	}
	run, err := st.GetRun(context.Background(), "billing", key)
	if err != nil || run.State != store.Pending || run.Token != term.Token() || run.Attempt != 1 {
		t.Fatalf("ledger row after the stop: %+v, %v; want pending, token %d, attempt 1", run, err, term.Token())
	}
}

// runTerm elects node "a" of "billing" on st and starts r.Run in its
// term: cancel stops it, done gives Run's error.
func runTerm(t *testing.T, st store.Store, r *runner.Runner) (term *baton.Term, cancel context.CancelFunc, done chan error) {
	t.Helper()
	e, err := baton.New(st, "billing", baton.WithNode("a"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	term, err = e.Campaign(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done = make(chan error, 1)
	go func() { done <- r.Run(ctx, term) }()
	return term, cancel, done
}
