package schedule_test

import (
	"context"
	"errors"
	"github.com/batonhq/baton/internal/testenv"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// skewedClock is the real (here: the bubble's) clock plus an offset that
// the test moves, as a wrong wall clock and its later correction.
type skewedClock struct{ off atomic.Int64 }

func (c *skewedClock) Now() time.Time                       { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *skewedClock) NewTimer(d time.Duration) baton.Timer { return baton.RealClock{}.NewTimer(d) }

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer = testenv.Buffer

// clockObserver is a schedule.ClockObserver that keeps what the clock
// guard told it.
type clockObserver struct {
	mu    sync.Mutex
	calls []clockCall
}

type clockCall struct {
	held bool
	skew time.Duration
}

func (*clockObserver) PeriodState(string, store.RunState) {}
func (*clockObserver) RunStarted(string, time.Duration)   {}
func (*clockObserver) RunSucceeded(string, time.Time)     {}
func (*clockObserver) FenceRejected(string)               {}
func (*clockObserver) JobSuspended(string, bool)          {}

func (o *clockObserver) ClockHeld(_ string, held bool, skew time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, clockCall{held, skew})
}

func (o *clockObserver) told() []clockCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]clockCall(nil), o.calls...)
}

// A leader whose wall clock runs ten minutes ahead of the store's claims
// and skips nothing, whatever the catch-up policy, says why (a log line,
// and its ClockObserver is told), and resumes when its clock agrees again:
// then it runs the periods due by the reference, not by its own clock.
//
// A term that ends while held off (stopped here before the clock is set
// right) tells its ClockObserver that it no longer holds the job off.
func TestClockGuardWaitsForAgreement(t *testing.T) {
	for _, tc := range []struct {
		catchUp   schedule.CatchUp
		heldToEnd bool
	}{{schedule.CatchUpAll, false}, {schedule.CatchUpLatest, false}, {schedule.CatchUpLatest, true}} {
		catchUp := tc.catchUp
		name := string(catchUp)
		if tc.heldToEnd {
			name += "/held-to-the-end"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ms := memstore.New(memstore.WithTime(time.Now)) // the reference: the store's clock
				clock := &skewedClock{}
				clock.off.Store(int64(10 * time.Minute))
				fx := &effects{}
				logs := &syncBuffer{}
				obs := &clockObserver{}
				job := schedule.Job{Name: "billing", Schedule: every(t, time.Second), Policy: schedule.Policy{CatchUp: catchUp}}
				st := ms.Client("a")
				e, err := baton.New(st, job.Name, baton.WithNode("a"), baton.WithLease(lease), baton.WithRenew(renew),
					baton.WithClockMargin(margin), baton.WithPoll(poll))
				if err != nil {
					t.Fatal(err)
				}
				r, err := schedule.New(st, job, quick(fx, "a"), schedule.WithClock(clock), schedule.WithPoll(poll),
					schedule.WithClockGuard(schedule.ClockReference(st), schedule.DefaultClockTolerance),
					schedule.WithLogger(slog.New(slog.NewTextHandler(logs, nil))), schedule.WithObserver(obs))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					e.Run(ctx, func(ctx context.Context, t *baton.Term) error { return r.Run(ctx, t) })
				}()

				time.Sleep(30 * time.Second)
				if rs := rows(t, ms, job.Name); len(rs) != 0 {
					t.Fatalf("with the clock 10 minutes ahead the ledger has %d rows, the first %s", len(rs), states(rs[:1]))
				}
				if !strings.Contains(logs.String(), "the wall clock is 10m0s ahead of the reference clock") {
					t.Fatalf("no log line says why the leader waits:\n%s", logs.String())
				}
				if got := obs.told(); len(got) != 1 || !got[0].held || got[0].skew != 10*time.Minute {
					t.Fatalf("the observer was told %+v, want once held 10m ahead", got)
				}
				if tc.heldToEnd {
					cancel()
					<-done
					e.Close(context.Background())
					if got := obs.told(); len(got) != 2 || got[1] != (clockCall{}) {
						t.Errorf("the observer was told %+v, want held, then no longer at the term's end", got)
					}
					return
				}

				clock.off.Store(0) // the clock is corrected
				// Stop between two periods: at a whole second a period's
				// effect starts at the very instant of the cancel and is
				// left running, which is not what this test is about.
				time.Sleep(5*time.Second + 500*time.Millisecond)
				if got := obs.told(); len(got) != 2 || got[1].held || got[1].skew.Abs() > schedule.DefaultClockTolerance {
					t.Errorf("the observer was told %+v, want held then no longer", got)
				}
				cancel()
				<-done
				e.Close(context.Background())

				now := time.Now()
				rs := rows(t, ms, job.Name)
				if len(rs) == 0 {
					t.Fatalf("the leader did not resume once the clocks agreed:\n%s", logs.String())
				}
				for _, row := range rs {
					if row.Scheduled.After(now) {
						t.Errorf("period %s is ahead of the reference clock %v", row.Period, now)
					}
					if row.State != store.Done && row.State != store.Skipped {
						t.Errorf("row %s is %s", row.Period, row.State)
					}
				}
				if !strings.Contains(logs.String(), "agrees with the reference clock again") {
					t.Errorf("no log line says the leader resumed:\n%s", logs.String())
				}
				if got := obs.told(); len(got) != 2 {
					t.Errorf("the observer was told %+v after the term, want nothing more", got)
				}
			})
		})
	}
}

// A step detector agrees with the clock it was made on, and not with one
// stepped after.
func TestStepReference(t *testing.T) {
	ref := schedule.StepReference()
	got, err := ref.Now(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(got.Round(0)); d.Abs() > time.Second {
		t.Fatalf("step reference is %v off the clock it was made on", d)
	}
}

func TestClockGuardOptions(t *testing.T) {
	st := memstore.New()
	job := schedule.Job{Name: "j"}
	exec := func(context.Context, schedule.Period, uint64) (int, string, error) { return 0, "", nil }
	if _, err := schedule.New(st, job, exec, schedule.WithClockGuard(nil, time.Second)); err == nil || !strings.Contains(err.Error(), "WithClockGuard") {
		t.Errorf("nil reference: %v", err)
	}
	// Below the machine's minimum: its bound, naming the field.
	var be *bound.Error
	if _, err := schedule.New(st, job, exec, schedule.WithClockGuard(schedule.StepReference(), time.Nanosecond)); !errors.As(err, &be) || be.Option != "clock-tolerance" {
		t.Errorf("1ns tolerance: %v, want a bound.Error naming clock-tolerance", err)
	}
	if _, err := schedule.New(st, job, exec, schedule.WithClockGuard(schedule.StepReference(), 0)); err == nil {
		t.Error("zero tolerance with a reference: accepted, want an error (the guard would be off)")
	}
}

// A leader held off by its clock for WithClockStepDown gives its term up
// (Run returns ErrClockHeld, the Elector resigns), so that a node whose
// clock agrees leads and runs the job; the held-off node waits in
// AwaitClock and does not campaign again while its clock is off, and
// campaigns again once it agrees (and leads when the other node stops).
func TestClockGuardStepsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New(memstore.WithTime(time.Now)) // the reference: the store's clock
		fx := &effects{}
		job := schedule.Job{Name: "billing", Schedule: every(t, time.Second)}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer wg.Wait() // also after a failure: the bubble ends with its goroutines
		defer cancel()
		stepped := make(chan error, 8)
		node := func(ctx context.Context, id string, clock *skewedClock) {
			st := ms.Client(id)
			e, err := baton.New(st, job.Name, baton.WithNode(id), baton.WithLease(lease), baton.WithRenew(renew),
				baton.WithClockMargin(margin), baton.WithPoll(poll))
			if err != nil {
				t.Fatal(err)
			}
			ref := schedule.ClockReference(st)
			r, err := schedule.New(st, job, quick(fx, id), schedule.WithClock(clock), schedule.WithPoll(poll),
				schedule.WithClockGuard(ref, schedule.DefaultClockTolerance), schedule.WithClockStepDown(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer e.Close(context.Background())
				for ctx.Err() == nil {
					err := e.Run(ctx, func(ctx context.Context, t *baton.Term) error { return r.Run(ctx, t) })
					if !errors.Is(err, schedule.ErrClockHeld) {
						return
					}
					stepped <- err
					if schedule.AwaitClock(ctx, ref, clock, schedule.DefaultClockTolerance, poll) != nil {
						return
					}
				}
			}()
		}
		bad := &skewedClock{}
		bad.off.Store(int64(10 * time.Minute))
		node(ctx, "a", bad)
		time.Sleep(time.Second) // a leads
		bctx, stopB := context.WithCancel(ctx)
		node(bctx, "b", &skewedClock{})

		time.Sleep(20 * time.Second)
		select {
		case err := <-stepped:
			if !strings.Contains(err.Error(), "10m0s ahead of the reference clock") {
				t.Errorf("the step-down's error does not say why: %v", err)
			}
		default:
			t.Fatal("the held-off leader did not step down")
		}
		if len(stepped) != 0 {
			t.Fatalf("a stepped down %d more times: it campaigned again with its clock off", len(stepped))
		}
		rs := rows(t, ms, job.Name)
		if len(rs) < 10 {
			t.Fatalf("b ran %d periods in the 15 s after a stepped down, want about 15", len(rs))
		}
		for _, row := range rs {
			if row.Holder != "b" {
				t.Fatalf("period %s claimed by %s, whose clock is 10 minutes ahead", row.Period, row.Holder)
			}
		}

		bad.off.Store(0) // a's clock is set right: it is a candidate again
		time.Sleep(2 * time.Second)
		stopB() // b resigns: a takes over
		time.Sleep(5 * time.Second)
		cancel()
		wg.Wait()
		if len(stepped) != 0 {
			t.Fatalf("a stepped down again after its clock was set right")
		}
		var byA int
		for _, row := range rows(t, ms, job.Name) {
			if row.Holder == "a" {
				byA++
			}
		}
		if byA < 3 {
			t.Fatalf("a ran %d periods in the 5 s after b stopped, its clock set right", byA)
		}
	})
}

// AwaitClock waits while the clock is off the reference, returns once they
// agree, and refuses arguments that cannot work.
func TestAwaitClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New(memstore.WithTime(time.Now))
		ref := schedule.ClockReference(ms.Client("a"))
		clock := &skewedClock{}
		clock.off.Store(int64(-2 * time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := schedule.AwaitClock(ctx, ref, clock, schedule.DefaultClockTolerance, poll); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a clock 2s behind: AwaitClock returned %v, want the deadline", err)
		}
		clock.off.Store(int64(-500 * time.Millisecond))
		start := time.Now()
		if err := schedule.AwaitClock(context.Background(), ref, clock, schedule.DefaultClockTolerance, poll); err != nil || time.Since(start) != 0 {
			t.Fatalf("a clock within the tolerance: AwaitClock returned %v after %v", err, time.Since(start))
		}
		go func() {
			time.Sleep(3 * time.Second)
			clock.off.Store(int64(10 * time.Minute))
			time.Sleep(time.Second)
			clock.off.Store(0)
		}()
		time.Sleep(3*time.Second + time.Millisecond)
		start = time.Now()
		if err := schedule.AwaitClock(context.Background(), ref, clock, schedule.DefaultClockTolerance, poll); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < 900*time.Millisecond || waited > time.Second+poll {
			t.Fatalf("AwaitClock returned %v after the clock was set right 1s later", waited)
		}
		if err := schedule.AwaitClock(context.Background(), ref, clock, 0, poll); err == nil {
			t.Fatal("a zero tolerance: want an error")
		}
	})
}
