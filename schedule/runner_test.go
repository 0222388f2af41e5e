package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

const (
	lease  = 3 * time.Second
	renew  = time.Second
	margin = 200 * time.Millisecond
	poll   = 100 * time.Millisecond
)

// effects is the executor-side record: every start of a period's effect.
type effects struct {
	mu     sync.Mutex
	starts []start
}

type start struct {
	node   string
	period string
	token  uint64
	at     time.Time
}

func (e *effects) record(node string, p schedule.Period, token uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.starts = append(e.starts, start{node, p.Key, token, time.Now()})
}

func (e *effects) of(period string) []start {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []start
	for _, s := range e.starts {
		if s.period == period {
			out = append(out, s)
		}
	}
	return out
}

// recStore records the outcome of every completion write (a SwapRun to
// done or failed) sent through it.
type recStore struct {
	store.Store
	mu          sync.Mutex
	completions []completion
}

type completion struct {
	run store.Run
	err error
}

func (s *recStore) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	r, err := s.Store.SwapRun(ctx, sw)
	if sw.Run.State == store.Done || sw.Run.State == store.Failed {
		s.mu.Lock()
		s.completions = append(s.completions, completion{sw.Run, err})
		s.mu.Unlock()
	}
	return r, err
}

// unknown returns the completions whose outcome their sender could not
// know: the store was unavailable, so they may have been applied.
func (s *recStore) unknown() []store.Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Run
	for _, c := range s.completions {
		if errors.Is(c.err, store.ErrUnavailable) {
			out = append(out, c.run)
		}
	}
	return out
}

func (s *recStore) accepted() []store.Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Run
	for _, c := range s.completions {
		if c.err == nil {
			out = append(out, c.run)
		}
	}
	return out
}

// node is one process: an Elector and a Runner on its own view of the
// store, started with start and stopped (resigning) with stop.
type node struct {
	t      *testing.T
	id     string
	st     *recStore
	e      *baton.Elector
	r      *schedule.Runner
	cancel context.CancelFunc
	done   chan struct{}
}

func newNode(t *testing.T, ms *memstore.Store, id string, job schedule.Job, exec schedule.Executor, opts ...baton.Option) *node {
	t.Helper()
	st := &recStore{Store: ms.Client(id)}
	e, err := baton.New(st, job.Name, append([]baton.Option{baton.WithNode(id), baton.WithLease(lease), baton.WithRenew(renew),
		baton.WithClockMargin(margin), baton.WithPoll(poll)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	r, err := schedule.New(st, job, exec, schedule.WithPoll(poll), schedule.WithRetry(poll), schedule.WithCallTimeout(renew))
	if err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, id: id, st: st, e: e, r: r}
	t.Cleanup(n.stop)
	return n
}

func (n *node) start() *node {
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan struct{})
	go func() {
		defer close(n.done)
		n.e.Run(ctx, func(ctx context.Context, t *baton.Term) error { return n.r.Run(ctx, t) })
	}()
	return n
}

func (n *node) stop() {
	if n.cancel != nil {
		n.cancel()
		<-n.done
		n.cancel = nil
	}
	n.e.Close(context.Background())
}

// quick returns an executor that records each start and succeeds at once.
func quick(fx *effects, id string) schedule.Executor {
	return func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
		fx.record(id, p, token)
		return 0, fmt.Sprintf("ran %s under %d\n", p.Key, token), nil
	}
}

func rows(t *testing.T, st store.Store, job string) []store.Run {
	t.Helper()
	rs, err := st.Runs(context.Background(), job, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func states(rs []store.Run) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("%s=%s ", r.Period[11:19], r.State)
	}
	return s
}

// The test bubble starts at 2000-01-01T00:00:00Z (synctest's epoch), so
// 10s periods fall on whole tens of seconds.
func every(t *testing.T, d time.Duration) schedule.Schedule {
	t.Helper()
	s, err := schedule.Every(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunnerRunsEachPeriodOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		fx := &effects{}
		job := schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second)}
		a := newNode(t, ms, "a", job, quick(fx, "a")).start()
		b := newNode(t, ms, "b", job, quick(fx, "b")).start()
		time.Sleep(65 * time.Second)
		a.stop()
		b.stop()
		rs := rows(t, ms, "billing")
		if len(rs) != 6 {
			t.Fatalf("rows: %s", states(rs))
		}
		for _, r := range rs {
			if r.State != store.Done || r.Attempt != 1 || r.Token != 1 || len(fx.of(r.Period)) != 1 {
				t.Errorf("row %+v, starts %v", r, fx.of(r.Period))
			}
			if d := schedule.Delay(r); d < 0 || d > poll {
				t.Errorf("period %s started %v late", r.Period, d)
			}
		}
	})
}

// The leader is cut off while its effect runs and pauses past its term
// (its executor ignores the cancellation, like a frozen process). A new
// leader is elected; the old one wakes up and its completion is refused
// with fence.ErrStaleToken; the new leader takes the period over under
// its token and completes it. Exactly one done row.
func TestDeposedLeaderCompletionIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		fx := &effects{}
		job := schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second)}
		wake := make(chan struct{})
		paused := func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
			fx.record("a", p, token)
			<-wake // frozen: blind to the term ending
			return 0, "a finished late\n", nil
		}
		a := newNode(t, ms, "a", job, paused).start()
		time.Sleep(11 * time.Second) // a claimed 00:00:10 and froze
		if got := fx.of("2000-01-01T00:00:10Z"); len(got) != 1 {
			t.Fatalf("starts %v", got)
		}
		ms.SetUnreachable("a", true)

		// b wins the election but does not run its Runner yet.
		b := newNode(t, ms, "b", job, quick(fx, "b"))
		term, err := b.e.Campaign(t.Context())
		if err != nil || term.Token() != 2 {
			t.Fatalf("b: %v %v", term, err)
		}
		ms.SetUnreachable("a", false)
		close(wake)
		synctest.Wait()
		var stale error
		for _, c := range a.st.completions {
			stale = c.err
		}
		if !errors.Is(stale, fence.ErrStaleToken) {
			t.Fatalf("a's late completion: %v, want fence.ErrStaleToken", stale)
		}

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- b.r.Run(ctx, term) }()
		time.Sleep(2 * time.Second)
		cancel()
		<-done
		term.Resign(context.Background())
		a.stop()

		r, err := ms.GetRun(context.Background(), "billing", "2000-01-01T00:00:10Z")
		if err != nil {
			t.Fatal(err)
		}
		if r.State != store.Done || r.Token != 2 || r.Holder != "b" || r.Attempt != 2 {
			t.Fatalf("row %+v", r)
		}
		starts := fx.of(r.Period)
		if len(starts) != 2 || starts[0].token != 1 || starts[1].token != 2 {
			t.Fatalf("starts %+v: want one under token 1 and one under 2", starts)
		}
		if acc := append(a.st.accepted(), b.st.accepted()...); len(acc) != 1 || acc[0].Token != 2 {
			t.Fatalf("accepted completions %+v", acc)
		}
	})
}

// The leader's store calls fail mid-run; its term ends and its effect is
// cancelled; the other node takes over the running row under a new token
// and runs it again. Its delay counts from the scheduled instant.
func TestCrashedLeaderRunIsTakenOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		fx := &effects{}
		job := schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second)}
		slow := func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
			fx.record("a", p, token)
			select {
			case <-time.After(time.Minute):
				return 0, "", nil
			case <-ctx.Done():
				return -1, "", context.Cause(ctx)
			}
		}
		a := newNode(t, ms, "a", job, slow).start()
		time.Sleep(time.Second) // a leads
		b := newNode(t, ms, "b", job, quick(fx, "b")).start()
		time.Sleep(10 * time.Second)
		ms.SetUnreachable("a", true)
		time.Sleep(9500 * time.Millisecond) // b takes over, then runs 00:00:20 before 00:00:20
		a.stop()
		b.stop()
		rs := rows(t, ms, "billing")
		if len(rs) != 2 {
			t.Fatalf("rows: %s", states(rs))
		}
		r := rs[0]
		if r.Period != "2000-01-01T00:00:10Z" || r.State != store.Done || r.Token != 2 || r.Attempt != 2 || r.Holder != "b" {
			t.Fatalf("row %+v", r)
		}
		if d := schedule.Delay(r); d < lease || d > lease+2*margin+2*time.Second {
			t.Fatalf("takeover run started %v late", d)
		}
		if acc := append(a.st.accepted(), b.st.accepted()...); len(acc) != 2 {
			t.Fatalf("accepted completions %+v", acc)
		}
	})
}

// Nobody leads from 00:00:15 to 00:00:45; the next leader runs the three
// periods that came due meanwhile, oldest first, and records how late.
func TestLeaderlessPeriodsStayDue(t *testing.T) {
	for _, tt := range []struct {
		policy schedule.Policy
		want   string
	}{
		{schedule.Policy{}, "00:00:10=done 00:00:20=done 00:00:30=done 00:00:40=done 00:00:50=done "},
		{schedule.Policy{CatchUp: schedule.CatchUpLatest}, "00:00:10=done 00:00:20=skipped 00:00:30=skipped 00:00:40=done 00:00:50=done "},
		{schedule.Policy{CatchUp: schedule.CatchUpNone}, "00:00:10=done 00:00:20=skipped 00:00:30=skipped 00:00:40=done 00:00:50=done "},
		{schedule.Policy{Window: 16 * time.Second}, "00:00:10=done 00:00:20=skipped 00:00:30=done 00:00:40=done 00:00:50=done "},
	} {
		t.Run(fmt.Sprintf("%s,window=%v", tt.policy.CatchUp, tt.policy.Window), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ms := memstore.New()
				fx := &effects{}
				job := schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second), Policy: tt.policy}
				a := newNode(t, ms, "a", job, quick(fx, "a")).start()
				time.Sleep(15 * time.Second)
				a.stop() // resigns: nobody leads
				time.Sleep(30 * time.Second)
				b := newNode(t, ms, "b", job, quick(fx, "b")).start()
				time.Sleep(10 * time.Second)
				b.stop()
				rs := rows(t, ms, "billing")
				if got := states(rs); got != tt.want {
					t.Fatalf("ledger %s, want %s", got, tt.want)
				}
				for _, r := range rs {
					if r.State == store.Skipped && r.Output == "" {
						t.Errorf("skipped row %s says not why", r.Period)
					}
					if r.Period == "2000-01-01T00:00:20Z" && r.State == store.Done {
						if d := schedule.Delay(r); d != 25*time.Second {
							t.Errorf("00:00:20 started %v late, want 25s", d)
						}
					}
				}
			})
		})
	}
}

// A manual trigger written while nobody leads is durable: the next leader
// runs it. A job with no schedule runs manual triggers only.
func TestManualTriggerWithoutLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		fx := &effects{}
		key := schedule.Key(time.Now())
		if _, written, err := schedule.Trigger(context.Background(), ms, "report", key); err != nil || !written {
			t.Fatalf("first trigger: written %v, %v", written, err)
		}
		again, written, err := schedule.Trigger(context.Background(), ms, "report", key)
		if err != nil || again.State != store.Pending || written {
			t.Fatalf("second trigger: %+v written %v, %v", again, written, err)
		}
		time.Sleep(time.Minute)
		a := newNode(t, ms, "a", schedule.Job{Name: "report"}, quick(fx, "a")).start()
		time.Sleep(time.Second)
		a.stop()
		r, err := ms.GetRun(context.Background(), "report", key)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != store.Done || !r.Manual || r.Token != 1 || schedule.Delay(r) != time.Minute {
			t.Fatalf("row %+v delay %v", r, schedule.Delay(r))
		}
		if _, _, err := schedule.Trigger(context.Background(), ms, "report", key); !errors.Is(err, schedule.ErrAlreadyDone) {
			t.Fatalf("trigger of a done period: %v", err)
		}
		if _, _, err := schedule.Trigger(context.Background(), ms, "report", "yesterday"); err == nil {
			t.Fatal("bad key accepted")
		}
	})
}

// A failed run is final until an operator re-triggers its period; the
// re-run is seen within the rescan interval.
func TestFailedRunRerunByTrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		var mu sync.Mutex
		fail := true
		exec := func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				return 3, "boom\n", nil
			}
			return 0, "fine\n", nil
		}
		job := schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second)}
		a := newNode(t, ms, "a", job, exec).start()
		time.Sleep(12 * time.Second)
		r, _ := ms.GetRun(context.Background(), "billing", "2000-01-01T00:00:10Z")
		if r.State != store.Failed || r.ExitCode != 3 || r.Output != "boom\n" {
			t.Fatalf("row %+v", r)
		}
		mu.Lock()
		fail = false
		mu.Unlock()
		if _, _, err := schedule.Trigger(context.Background(), ms, "billing", r.Period); err != nil {
			t.Fatal(err)
		}
		// The period is older than the newest finished one: the leader
		// sees the trigger at its next full read of the ledger.
		time.Sleep(schedule.DefaultRescan)
		a.stop()
		r, _ = ms.GetRun(context.Background(), "billing", "2000-01-01T00:00:10Z")
		if r.State != store.Done || r.Attempt != 2 || !r.Manual {
			t.Fatalf("re-run row %+v", r)
		}
	})
}

// An executor that stops its effect early (ErrInterrupted) does not fail
// the period: it is claimed again, here by the same leader.
func TestInterruptedRunIsClaimedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		var mu sync.Mutex
		calls := 0
		exec := func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 1 {
				return -1, "", fmt.Errorf("%w: lease about to expire", schedule.ErrInterrupted)
			}
			return 0, "", nil
		}
		a := newNode(t, ms, "a", schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second)}, exec).start()
		time.Sleep(12 * time.Second)
		a.stop()
		r, err := ms.GetRun(context.Background(), "billing", "2000-01-01T00:00:10Z")
		if err != nil || r.State != store.Done || r.Attempt != 2 || r.Token != 1 {
			t.Fatalf("row %+v %v", r, err)
		}
	})
}

// A manual trigger for now is seen at the next poll while a leader runs a
// schedule, between two scheduled periods.
func TestManualTriggerWhileLeading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		fx := &effects{}
		a := newNode(t, ms, "a", schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second)}, quick(fx, "a")).start()
		time.Sleep(25 * time.Second) // 00:00:10 and 00:00:20 done
		key := schedule.Key(time.Now())
		if _, _, err := schedule.Trigger(context.Background(), ms, "billing", key); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * poll)
		r, err := ms.GetRun(context.Background(), "billing", key)
		if err != nil || r.State != store.Done || !r.Manual || schedule.Delay(r) > 2*poll {
			t.Fatalf("manual row %+v %v", r, err)
		}
		a.stop()
	})
}

// replacedStore's ledger reads fail as if the store had been replaced
// (store.Permanent): retrying never helps.
type replacedStore struct{ store.Store }

func (replacedStore) Runs(context.Context, string, string, int) ([]store.Run, error) {
	return nil, fmt.Errorf("ledger: %w", store.ErrReplaced)
}

// A store error that never heals ends Run with that cause instead of a
// retry loop, while the term still holds.
func TestPermanentStoreErrorEndsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		fx := &effects{}
		e, err := baton.New(ms, "billing", baton.WithNode("a"), baton.WithLease(lease), baton.WithRenew(renew),
			baton.WithClockMargin(margin), baton.WithPoll(poll))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close(context.Background())
		r, err := schedule.New(replacedStore{ms}, schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second)},
			quick(fx, "a"), schedule.WithPoll(poll), schedule.WithRetry(poll))
		if err != nil {
			t.Fatal(err)
		}
		term, err := e.Campaign(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		err = r.Run(context.Background(), term)
		if !errors.Is(err, store.ErrReplaced) || !term.Valid() {
			t.Fatalf("Run returned %v (term valid: %v), want store.ErrReplaced while the term holds", err, term.Valid())
		}
	})
}

// Wake makes the leader read the ledger at once: a manual trigger written
// in this process runs before the next poll.
func TestWakeReadsTheLedgerAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		fx := &effects{}
		st := &recStore{Store: ms.Client("a")}
		e, err := baton.New(st, "billing", baton.WithNode("a"), baton.WithLease(lease), baton.WithRenew(renew),
			baton.WithClockMargin(margin), baton.WithPoll(poll))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close(context.Background())
		r, err := schedule.New(st, schedule.Job{Name: "billing"}, quick(fx, "a"), schedule.WithPoll(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.Run(ctx, func(ctx context.Context, t *baton.Term) error { return r.Run(ctx, t) })
		}()
		time.Sleep(time.Second)
		key := schedule.Key(time.Now())
		if _, _, err := schedule.Trigger(context.Background(), ms, "billing", key); err != nil {
			t.Fatal(err)
		}
		r.Wake()
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got, err := ms.GetRun(context.Background(), "billing", key); err != nil || got.State != store.Done {
			t.Errorf("manual row %+v %v: not run at once after Wake", got, err)
		}
		cancel()
		<-done
	})
}
