package schedule_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// fault is one injected fault: from at, for dur, on node.
type fault struct {
	at, dur time.Duration
	node    int    // -1: the node holding the election when the fault starts
	kind    string // "cut": store calls fail; "slow": store calls wait; "stop": the process stops (resigning) and restarts
	delay   time.Duration
}

// Three nodes run an Elector and a Runner each on a 5s schedule while
// random faults hit them for a minute: cut off from the store, slowed
// down, stopped and restarted; some executors ignore cancellation, like a
// paused process that wakes up after its term. Then the faults heal and
// the cluster runs on for four minutes.
//
// Safety: no period ever has more than one completion accepted (seen by
// the nodes' own store clients), every done row is the one accepted
// completion (or one whose reply was lost), no completion is accepted once a newer attempt started, and
// the attempts of a period start in token order. Liveness: every period due from the job's registration to
// shortly before the end is done (catch-up policy all, no window).
//
// A short run (not CI, no BATON_LONG=1) runs 25 of rapid's draws
// (testenv.Draws); CI runs every one.
func TestPropertyAtMostOneDonePerPeriod(t *testing.T) {
	rapid.Check(t, testenv.NewDraws(t, 25).Prop(func(rt *rapid.T) {
		const nodes = 3
		// rapid draws the shape of the run; the timings come from a seed
		// it draws, uniformly, because rapid's own integers lean towards
		// small values (short faults that rarely hit a leader mid-run).
		seed := rapid.Uint64().Draw(rt, "seed")
		rnd := rand.New(rand.NewPCG(seed, seed>>1|1))
		ms := func(lo, hi int) time.Duration { return time.Duration(lo+rnd.IntN(hi-lo+1)) * time.Millisecond }
		var faults []fault
		for i, n := 0, rapid.IntRange(0, 12).Draw(rt, "faults"); i < n; i++ {
			faults = append(faults, fault{
				at:    ms(0, 60_000),
				dur:   ms(100, 15_000),
				node:  rapid.IntRange(-1, nodes-1).Draw(rt, "node"), // -1: whoever leads then
				kind:  rapid.SampledFrom([]string{"cut", "slow", "stop"}).Draw(rt, "kind"),
				delay: ms(50, 4_000),
			})
		}
		var runFor [nodes]time.Duration
		var blind [nodes]bool
		for i := range nodes {
			// Up to 3.5s of a 5s period: long enough to outlast a
			// takeover (lease + 2e = 3.3s) when blind, short enough that a
			// leader clears a backlog (see the settle time below).
			runFor[i] = ms(0, 3_500)
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
	}))
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
	stopped := map[int]int{} // steps run one at a time, in this goroutine
	cuts, slows := map[int]int{}, map[int]int{}
	for _, f := range faults {
		target := new(int) // the node, fixed when the fault starts
		pick := func() int {
			*target = f.node
			if f.node < 0 {
				*target = 0
				if rec, err := ms.Get(context.Background(), "billing"); err == nil {
					fmt.Sscanf(rec.Holder, "n%d", target)
				}
			}
			return *target
		}
		switch f.kind {
		case "cut":
			steps = append(steps, step{f.at, func() {
				i := pick()
				cuts[i]++
				ms.SetUnreachable(ns[i].id, true)
			}}, step{f.at + f.dur, func() {
				if cuts[*target]--; cuts[*target] == 0 {
					ms.SetUnreachable(ns[*target].id, false)
				}
			}})
		case "slow":
			steps = append(steps, step{f.at, func() {
				i := pick()
				slows[i]++
				ms.SetDelay(ns[i].id, f.delay)
			}}, step{f.at + f.dur, func() {
				if slows[*target]--; slows[*target] == 0 {
					ms.SetDelay(ns[*target].id, 0)
				}
			}})
		case "stop":
			steps = append(steps, step{f.at, func() {
				i := pick()
				if stopped[i]++; stopped[i] == 1 {
					ns[i].stop()
				}
			}}, step{f.at + f.dur, func() {
				if stopped[*target]--; stopped[*target] == 0 {
					ns[*target].start()
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
	// A leader whose runs take 3.5s of every 5s period works off a backlog
	// of 16 periods (the 80s of faults) at 1/3.5 - 1/5 periods a second:
	// 187s. (With runs of up to 4.5s, as this test once drew, no bound
	// short of 720s holds.)
	time.Sleep(240 * time.Second)
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
		if r.State == store.Done && len(accepted[r.Period]) == 0 {
			// The write was applied but its reply lost (the node was cut
			// off on the way back): one of the completions whose outcome
			// its sender could not know must be this one.
			found := false
			for _, n := range ns {
				for _, c := range n.st.unknown() {
					found = found || (c.Period == r.Period && c.Token == r.Token && c.State == r.State)
				}
			}
			if !found {
				violations = append(violations, fmt.Sprintf("period %s: done row %+v that no completion wrote", r.Period, r))
			}
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
