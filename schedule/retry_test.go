package schedule_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// With Retries 2, a run that fails twice is claimed again RetryBackoff
// after each failure, and its third attempt is recorded done.
func TestFailedRunRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		var mu sync.Mutex
		var starts []time.Time
		exec := func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
			mu.Lock()
			defer mu.Unlock()
			starts = append(starts, time.Now())
			if len(starts) < 3 {
				return 3, "boom\n", nil
			}
			return 0, "fine\n", nil
		}
		job := schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second),
			Policy: schedule.Policy{Retries: 2, RetryBackoff: 3 * time.Second}}
		a := newNode(t, ms, "a", job, exec).start()
		time.Sleep(18 * time.Second)
		a.stop()
		r, _ := ms.GetRun(context.Background(), "billing", "2000-01-01T00:00:10Z")
		if r.State != store.Done || r.Attempt != 3 || r.Output != "fine\n" {
			t.Fatalf("row %+v", r)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(starts) != 3 || starts[1].Sub(starts[0]) != 3*time.Second || starts[2].Sub(starts[1]) != 3*time.Second {
			t.Fatalf("attempts started at %v", starts)
		}
	})
}

func TestPolicyRetriesValidated(t *testing.T) {
	for _, p := range []schedule.Policy{{Retries: -1}, {Retries: 1}, {Retries: 1, RetryBackoff: -time.Second}} {
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "retr") {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

// With Timeout 2s a run that would take 5s is stopped 2s after it
// started: its context ends with the cause ErrTimeout, the attempt is
// recorded failed ("timeout") and, with a retry left, run again after the
// backoff; the second attempt finishes in time and is recorded done.
func TestRunTimeoutStopsAndRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		var mu sync.Mutex
		var ran []time.Duration
		var causes []error
		exec := func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
			mu.Lock()
			first := len(ran) == 0
			mu.Unlock()
			start, d := time.Now(), time.Second
			if first {
				d = 5 * time.Second
			}
			var err error
			select {
			case <-time.After(d):
			case <-ctx.Done():
				err = schedule.ErrInterrupted
			}
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, time.Since(start))
			causes = append(causes, context.Cause(ctx))
			return 0, "", err
		}
		job := schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second),
			Policy: schedule.Policy{Timeout: 2 * time.Second, Retries: 1, RetryBackoff: time.Second}}
		a := newNode(t, ms, "a", job, exec).start()
		time.Sleep(18 * time.Second)
		a.stop()
		r, _ := ms.GetRun(context.Background(), "billing", "2000-01-01T00:00:10Z")
		if r.State != store.Done || r.Attempt != 2 {
			t.Fatalf("row %+v, want done at attempt 2", r)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(ran) != 2 || ran[0] != 2*time.Second || causes[0] != schedule.ErrTimeout || ran[1] != time.Second {
			t.Fatalf("attempts ran %v, causes %v", ran, causes)
		}
	})
}
