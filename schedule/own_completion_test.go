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
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// lockedLog is a log destination safe for concurrent writers.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The process that ran a period records its outcome first, with the
// machine's own write (as baton run's supervisor does): the Runner's
// completion then conflicts, reads the row back, and counts it as its
// own success ("period finished: done"), not as refused. Every period
// runs once and is done.
func TestOwnCompletionRecordedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		job := schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second)}
		st := ms.Client("a")
		starts := 0
		exec := func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
			starts++
			row, err := st.GetRun(ctx, job.Name, p.Key)
			if err != nil || row.State != store.Running || row.Token != token {
				t.Errorf("the running row of %s: %+v, %v", p.Key, row, err)
				return 0, "", nil
			}
			if _, err := st.SwapRun(ctx, scheduler.Complete(row, 0, "out\n", nil, time.Now())); err != nil {
				t.Errorf("recording %s first: %v", p.Key, err)
			}
			return 0, "out\n", nil
		}
		var log lockedLog
		logger := slog.New(slog.NewTextHandler(&log, nil))
		e, err := baton.New(st, job.Name, baton.WithNode("a"), baton.WithLease(lease), baton.WithRenew(renew),
			baton.WithClockMargin(margin), baton.WithPoll(poll))
		if err != nil {
			t.Fatal(err)
		}
		r, err := schedule.New(st, job, exec, schedule.WithPoll(poll), schedule.WithRetry(poll), schedule.WithCallTimeout(renew), schedule.WithLogger(logger))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.Run(ctx, func(ctx context.Context, t *baton.Term) error { return r.Run(ctx, t) })
		}()
		time.Sleep(35 * time.Second)
		cancel()
		<-done
		e.Close(context.Background())
		rs := rows(t, ms, job.Name)
		if len(rs) != 3 || starts != 3 {
			t.Fatalf("%d starts; rows: %s", starts, states(rs))
		}
		for _, row := range rs {
			if row.State != store.Done || row.Attempt != 1 {
				t.Errorf("row %+v", row)
			}
		}
		if n := strings.Count(log.String(), "period finished: done"); n != 3 || strings.Contains(log.String(), "refused") {
			t.Fatalf("%d periods counted done by the Runner, want 3, none refused; log:\n%s", n, log.String())
		}
	})
}
