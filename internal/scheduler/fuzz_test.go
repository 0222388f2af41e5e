package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store/memstore"
)

// workProperty runs the scheduler machine on a small virtual cluster (every
// node's leader drives it, the election machine decides who leads) under a
// fault schedule drawn from the input, with the cluster's checks after
// every event: no effect starts on a term that is not valid, every
// committed ledger write carries the current token, no write lands below
// a token already landed, and at most one completion per period. The
// policy is drawn too: catch-up, window, cap, retries, jitter.
func workProperty(t *rapid.T) {
	const lease = 3 * time.Second
	nodes := rapid.IntRange(2, 4).Draw(t, "nodes")
	period := rapid.SampledFrom([]time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}).Draw(t, "period")
	end := 30 * time.Second
	var faults []vcluster.Fault
	kinds := []vcluster.FaultKind{vcluster.Cut, vcluster.Freeze, vcluster.ArmFreeze, vcluster.ArmPause, vcluster.ArmPauseInFlight, vcluster.Crash, vcluster.Resign, vcluster.SetLatency}
	undo := map[vcluster.FaultKind]vcluster.FaultKind{vcluster.Cut: vcluster.Reconnect, vcluster.Freeze: vcluster.Thaw,
		vcluster.ArmFreeze: vcluster.Disarm, vcluster.ArmPause: vcluster.Disarm, vcluster.ArmPauseInFlight: vcluster.Disarm, vcluster.Crash: vcluster.Restart}
	for i, n := 0, rapid.IntRange(0, 8).Draw(t, "faults"); i < n; i++ {
		at := time.Duration(rapid.Int64Range(int64(lease), int64(end*2/3)).Draw(t, "at"))
		d := time.Duration(rapid.Int64Range(0, int64(3*lease)).Draw(t, "length"))
		f := vcluster.Fault{At: at, Node: rapid.IntRange(0, nodes-1).Draw(t, "node"), Kind: rapid.SampledFrom(kinds).Draw(t, "kind")}
		if f.Kind == vcluster.SetLatency {
			f.Latency = time.Duration(rapid.IntRange(1, 800).Draw(t, "latency")) * time.Millisecond
		}
		faults = append(faults, f)
		if u, ok := undo[f.Kind]; ok {
			faults = append(faults, vcluster.Fault{At: at + d, Node: f.Node, Kind: u})
		} else if f.Kind == vcluster.SetLatency {
			faults = append(faults, vcluster.Fault{At: at + d, Node: f.Node, Kind: vcluster.SetLatency, Latency: 5 * time.Millisecond})
		}
	}
	cal := vcluster.Calendar{Day: period}
	policy := scheduler.Policy{
		CatchUp: rapid.SampledFrom([]string{scheduler.CatchUpAll, scheduler.CatchUpLatest, scheduler.CatchUpNone}).Draw(t, "catchUp"),
		Max:     rapid.IntRange(0, 5).Draw(t, "max"),
		// Whole milliseconds of business time, up to a third of a period.
		Jitter: time.Duration(rapid.Int64Range(0, int64(cal.Business(period/3)/time.Millisecond)).Draw(t, "jitterMS")) * time.Millisecond,
	}
	if rapid.Bool().Draw(t, "window") {
		policy.Window = cal.Business(time.Duration(rapid.Int64Range(int64(period), int64(10*period)).Draw(t, "windowLength")))
	}
	clock := vcluster.NewClock(period)
	every, _ := schedule.Every(24*time.Hour, 0)
	c := vcluster.Config{
		Nodes: nodes, Lease: lease, Renew: time.Second, Margin: 150 * time.Millisecond, Poll: 250 * time.Millisecond,
		WorkPoll: period, Latency: 5 * time.Millisecond, WorkLatency: true, Day: period,
		Fence: true, Persistent: true, Schedule: every, Policy: policy, InvoiceLines: 2,
		Store: memstore.New(memstore.WithTime(clock.Now)), Resource: vcluster.NewMemResource(),
		Faults: faults, End: end, Check: true, Clock: clock,
	}
	out, err := vcluster.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if out.Violation != nil {
		t.Fatalf("%v (policy %+v, faults %s)", out.Violation, policy, describe(faults))
	}
}

func describe(fs []vcluster.Fault) string {
	s := ""
	for _, f := range fs {
		s += fmt.Sprintf(" %v node-%d at %v;", f.Kind, f.Node, f.At)
	}
	return s
}

func TestWorkProperty(t *testing.T) { rapid.Check(t, workProperty) }

// FuzzWork is workProperty from fuzz input (.ci/run fuzzes it for a
// bounded time; testdata/fuzz holds the seed corpus).
func FuzzWork(f *testing.F) { f.Fuzz(rapid.MakeFuzz(workProperty)) }
