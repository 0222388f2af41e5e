package schedule_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// suspendingStore is an operator who suspends the job at the worst
// moment: after the leader's pass read the job (not suspended) and right
// before its first claim reaches the store.
type suspendingStore struct {
	store.Store
	ms   *memstore.Store
	once sync.Once
}

func (s *suspendingStore) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	if sw.Run.State == store.Running {
		var err error
		s.once.Do(func() {
			_, err = s.ms.SuspendJob(ctx, store.JobSuspend{Name: sw.Run.Job, Suspend: true, By: "ops@h1", Reason: "bad deploy"})
		})
		if err != nil {
			return store.Run{}, err
		}
	}
	return s.Store.SwapRun(ctx, sw)
}

// A suspension that commits between the leader's read of the job and
// its claim: the store refuses the claim, no period starts, the runner
// says so once at info level and does not retry it as an error; after
// the resume the periods run, each once.
func TestSuspendBetweenReadAndClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		fx := &effects{}
		logs := &syncBuffer{}
		job := schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second)}
		st := &suspendingStore{Store: ms.Client("a"), ms: ms}
		e, err := baton.New(st, job.Name, baton.WithNode("a"), baton.WithLease(lease), baton.WithRenew(renew),
			baton.WithClockMargin(margin), baton.WithPoll(poll))
		if err != nil {
			t.Fatal(err)
		}
		r, err := schedule.New(st, job, quick(fx, "a"), schedule.WithPoll(poll), schedule.WithRetry(poll),
			schedule.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.Run(ctx, func(ctx context.Context, t *baton.Term) error { return r.Run(ctx, t) })
		}()
		stopped := false
		stop := func() {
			if !stopped {
				stopped = true
				cancel()
				<-done
				e.Close(context.Background())
			}
		}
		defer stop() // a failed check stops the node too

		time.Sleep(35 * time.Second)
		fx.mu.Lock()
		started := len(fx.starts)
		fx.mu.Unlock()
		if rs := rows(t, ms, job.Name); len(rs) != 0 || started != 0 {
			t.Fatalf("suspended before the first claim: ledger %s, %d effects started", states(rs), started)
		}
		out := logs.String()
		if n := strings.Count(out, "refused: the job was suspended meanwhile"); n != 1 {
			t.Fatalf("%d log lines about the refused claim, want 1:\n%s", n, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "refused: the job was suspended meanwhile") && !strings.Contains(l, "level=INFO") {
				t.Errorf("the refusal is not logged at info level: %s", l)
			}
			if strings.Contains(l, "level=ERROR") || strings.Contains(l, "retrying") {
				t.Errorf("the refusal is treated as a failure: %s", l)
			}
		}
		if !strings.Contains(out, "job suspended by ops@h1 (bad deploy): claiming no period until it is resumed") {
			t.Errorf("no log line says the job is suspended:\n%s", out)
		}

		if _, err := ms.SuspendJob(context.Background(), store.JobSuspend{Name: job.Name, By: "ops@h1"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10*time.Second + 500*time.Millisecond)
		stop()
		rs := rows(t, ms, job.Name)
		if len(rs) != 4 {
			t.Fatalf("after the resume: ledger %s, want the 4 periods due", states(rs))
		}
		for _, r := range rs {
			if r.State != store.Done || r.Attempt != 1 || len(fx.of(r.Period)) != 1 {
				t.Errorf("row %+v, starts %v", r, fx.of(r.Period))
			}
		}
	})
}
