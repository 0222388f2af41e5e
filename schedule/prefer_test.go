package schedule_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// A Runner reports its safe points to a Term with a preference policy: the
// lead moves to the heaviest of three nodes started lightest first, only
// between runs, although the heaviest joins while a run is under way. Every period is run once, at its first attempt, and no
// run's effect is cut off by a handover.
func TestRunnerHandsOverBetweenRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memstore.New()
		fx := &effects{}
		var cut atomic.Int64
		slow := func(id string) schedule.Executor {
			return func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
				fx.record(id, p, token)
				select {
				case <-time.After(9 * time.Second): // 90% of each period: a handover has to wait for its end
				case <-ctx.Done():
					cut.Add(1)
					return 1, "", ctx.Err()
				}
				return 0, fmt.Sprintf("ran %s under %d\n", p.Key, token), nil
			}
		}
		job := schedule.Job{Name: "billing", Schedule: every(t, 10*time.Second)}
		const hyst = 2 * lease
		var nodes []*node
		for i, w := range []int{1, 5, 10} {
			n := newNode(t, ms, fmt.Sprint("w", w), job, slow(fmt.Sprint("w", w)),
				baton.WithCandidate(baton.Candidacy{Weight: w}), baton.WithPreference("highest-weight", hyst))
			nodes = append(nodes, n.start())
			// w5 joins at 3s and takes the lead at 6s, between runs;
			// w10 joins at 12s, during the run of 00:00:10 (10s-19s).
			switch i {
			case 0:
				time.Sleep(lease)
			case 1:
				time.Sleep(9 * time.Second)
			}
		}
		started := time.Now()
		for {
			r, _ := ms.Get(context.Background(), "billing")
			if r.Holder == "w10" {
				break
			}
			if time.Since(started) > 2*hyst+10*time.Second {
				t.Fatalf("w10 does not lead %v after it started: %+v", time.Since(started), r)
			}
			time.Sleep(poll)
		}
		time.Sleep(60 * time.Second)
		for _, n := range nodes {
			n.stop()
		}
		if r, _ := ms.Get(context.Background(), "billing"); r.Token < 2 {
			t.Errorf("the lead never moved: %+v", r)
		}
		rs := rows(t, ms, "billing")
		if len(rs) < 6 {
			t.Fatalf("rows: %s", states(rs))
		}
		for _, r := range rs {
			if r.State != store.Done || r.Attempt != 1 || len(fx.of(r.Period)) != 1 {
				t.Errorf("row %+v, starts %v", r, fx.of(r.Period))
			}
		}
		if n := cut.Load(); n > 1 { // the last, by the stop at the end
			t.Errorf("%d effects cut off", n)
		}
	})
}
