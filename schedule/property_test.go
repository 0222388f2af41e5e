package schedule_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// fault is one injected fault: from at, for dur, on node.
type fault struct {
	at, dur time.Duration
	node    int
	kind    string // "cut": store calls fail; "slow": store calls wait; "stop": the process stops (resigning) and restarts
	delay   time.Duration
}

// Three nodes run an Elector and a Runner each on a 5s schedule while
// random faults hit them for a minute: cut off from the store, slowed
// down, stopped and restarted; some executors ignore cancellation, like a
// paused process that wakes up after its term. Then the faults heal and
// the cluster runs on for a minute.
//
// Safety: no period ever has more than one completion accepted (seen by
// the nodes' own store clients), every done row is the one accepted
// completion, no completion is accepted once a newer attempt started, and
// the attempts of a period start in token order. Liveness: every period due from the job's registration to
// shortly before the end is done (catch-up policy all, no window).
func TestPropertyAtMostOneDonePerPeriod(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		const nodes = 3
		var faults []fault
		for i, n := 0, rapid.IntRange(0, 8).Draw(rt, "faults"); i < n; i++ {
			faults = append(faults, fault{
				at:    time.Duration(rapid.IntRange(0, 60_000).Draw(rt, "at_ms")) * time.Millisecond,
				dur:   time.Duration(rapid.IntRange(100, 15_000).Draw(rt, "dur_ms")) * time.Millisecond,
				node:  rapid.IntRange(0, nodes-1).Draw(rt, "node"),
				kind:  rapid.SampledFrom([]string{"cut", "slow", "stop"}).Draw(rt, "kind"),
				delay: time.Duration(rapid.IntRange(50, 4_000).Draw(rt, "delay_ms")) * time.Millisecond,
			})
		}
		var runFor [nodes]time.Duration
		var blind [nodes]bool
		for i := range nodes {
			runFor[i] = time.Duration(rapid.IntRange(0, 2_000).Draw(rt, "run_ms")) * time.Millisecond
			blind[i] = rapid.Bool().Draw(rt, "blind")
		}

		var violations []string
		t.Run("", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				violations = scenario(t, faults, runFor[:], blind[:])
			})
		})
		for _, v := range violations {
			rt.Error(v)
		}
	})
}

func scenario(t *testing.T, faults []fault, runFor []time.Duration, blind []bool) (violations []string) {
	ms := memstore.New()
	fx := &effects{}
	job := schedule.Job{Name: "billing", Schedule: every(t, 5*time.Second)}
	var ns []*node
	for i := range runFor {
		id := fmt.Sprintf("n%d", i)
		exec := func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
			fx.record(id, p, token)
			select {
			case <-time.After(runFor[i]):
				return 0, "", nil
			case <-ctx.Done():
				if blind[i] {
					time.Sleep(runFor[i]) // paused: finishes after its term
					return 0, "", nil
				}
				return -1, "", context.Cause(ctx)
			}
		}
		ns = append(ns, newNode(t, ms, id, job, exec).start())
	}
	start := time.Now()

	type step struct {
		at time.Duration
		do func()
	}
	var steps []step
	var mu sync.Mutex
	stopped := map[int]int{}
	for _, f := range faults {
		id := fmt.Sprintf("n%d", f.node)
		n := ns[f.node]
		switch f.kind {
		case "cut":
			steps = append(steps, step{f.at, func() { ms.SetUnreachable(id, true) }}, step{f.at + f.dur, func() { ms.SetUnreachable(id, false) }})
		case "slow":
			steps = append(steps, step{f.at, func() { ms.SetDelay(id, f.delay) }}, step{f.at + f.dur, func() { ms.SetDelay(id, 0) }})
		case "stop":
			steps = append(steps, step{f.at, func() {
				mu.Lock()
				stopped[f.node]++
				first := stopped[f.node] == 1
				mu.Unlock()
				if first {
					n.stop()
				}
			}}, step{f.at + f.dur, func() {
				mu.Lock()
				stopped[f.node]--
				last := stopped[f.node] == 0
				mu.Unlock()
				if last {
					n.start()
				}
			}})
		}
	}
	slices.SortStableFunc(steps, func(a, b step) int { return int(a.at - b.at) })
	for _, s := range steps {
		time.Sleep(time.Until(start.Add(s.at)))
		s.do()
	}
	// Heal: everything reachable, fast and running.
	time.Sleep(time.Until(start.Add(80 * time.Second)))
	for i, n := range ns {
		ms.SetUnreachable(n.id, false)
		ms.SetDelay(n.id, 0)
		if stopped[i] > 0 {
			n.start()
		}
	}
	time.Sleep(60 * time.Second)
	end := time.Now()
	for _, n := range ns {
		n.stop()
	}

	ctx := context.Background()
	j, err := ms.EnsureJob(ctx, store.Job{Name: "billing"})
	if err != nil {
		return []string{err.Error()}
	}
	accepted := map[string][]store.Run{}
	for _, n := range ns {
		for _, r := range n.st.accepted() {
			accepted[r.Period] = append(accepted[r.Period], r)
		}
	}
	rows, err := ms.Runs(ctx, "billing", "", 0)
	if err != nil {
		return []string{err.Error()}
	}
	byKey := map[string]store.Run{}
	for _, r := range rows {
		byKey[r.Period] = r
	}
	for key, acc := range accepted {
		if len(acc) > 1 {
			violations = append(violations, fmt.Sprintf("period %s: %d completions accepted: %+v", key, len(acc), acc))
		}
		for _, st := range fx.of(key) {
			if st.token > acc[0].Token {
				violations = append(violations, fmt.Sprintf("period %s: completion under token %d accepted although an attempt under %d started", key, acc[0].Token, st.token))
			}
		}
		if r := byKey[key]; r.State != acc[0].State || r.Token != acc[0].Token {
			violations = append(violations, fmt.Sprintf("period %s: row %+v is not the accepted completion %+v", key, r, acc[0]))
		}
	}
	for _, r := range rows {
		if r.State == store.Done && len(accepted[r.Period]) != 1 {
			violations = append(violations, fmt.Sprintf("period %s: done row without exactly one accepted completion", r.Period))
		}
		starts := fx.of(r.Period)
		for i := 1; i < len(starts); i++ {
			if starts[i].token < starts[i-1].token {
				violations = append(violations, fmt.Sprintf("period %s: started under token %d after %d", r.Period, starts[i].token, starts[i-1].token))
			}
		}
	}
	due, _ := schedule.Due(job.Schedule, j.Created, end.Add(-10*time.Second), 0)
	for _, at := range due {
		if r := byKey[schedule.Key(at)]; r.State != store.Done {
			violations = append(violations, fmt.Sprintf("period %s is %q, want done (created %v, end %v)", schedule.Key(at), r.State, j.Created, end))
		}
	}
	return violations
}
