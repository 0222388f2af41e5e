package vcluster

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store/memstore"
)

// TestObserveCountsWhatItSkips holds observe, which counts the valid
// leaders again only when a node changed or a counted term ran out, to the
// count at every event: runs with every fault that changes a term, a
// clock, a node's life or its freeze measure the same leaderless and
// two-leader time and days either way.
func TestObserveCountsWhatItSkips(t *testing.T) {
	kinds := []FaultKind{Cut, Reconnect, Freeze, Thaw, ArmFreeze, ArmPause, ArmPauseInFlight, Disarm,
		Crash, Restart, SetRate, SetLatency, Resign, ResignAll}
	measure := func(seed uint64, always bool) Outcome {
		defer func(was bool) { observeAlways = was }(observeAlways)
		observeAlways = always
		rng := rand.New(rand.NewPCG(seed, 7))
		const nodes, end = 4, 40 * time.Second
		var faults []Fault
		for range 60 {
			f := Fault{At: time.Duration(rng.Int64N(int64(end))), Node: rng.IntN(nodes), Kind: kinds[rng.IntN(len(kinds))]}
			switch f.Kind {
			case SetRate:
				f.Rate = []float64{0.9, 0.97, 1, 1.03, 1.2}[rng.IntN(5)]
			case SetLatency:
				f.Latency = time.Duration(rng.IntN(40)) * time.Millisecond
			}
			faults = append(faults, f)
		}
		every, _ := schedule.Every(24*time.Hour, 0)
		clock := NewClock(time.Second)
		c := Config{
			Nodes: nodes, Lease: 3 * time.Second, Renew: time.Second, Margin: 150 * time.Millisecond, Poll: 250 * time.Millisecond,
			Latency: 10 * time.Millisecond, WorkLatency: true, Day: time.Second, Fence: true, Persistent: true, Schedule: every,
			InvoiceLines: 1, Store: memstore.New(memstore.WithTime(clock.Now)), Resource: NewMemResource(), Faults: faults, End: end,
			Clock: clock, Names: 2, Sessions: []bool{seed%2 == 0, true}, Notify: seed%3 == 0, CallLatency: seed%4 == 0,
		}
		out, err := Run(t.Context(), c)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		return out
	}
	for seed := range uint64(40) {
		got, want := measure(seed, false), measure(seed, true)
		g := fmt.Sprint(got.Leaderless, got.TwoLeaders, got.LeaderlessDays, got.TwoLeaderDays, got.Events)
		w := fmt.Sprint(want.Leaderless, want.TwoLeaders, want.LeaderlessDays, want.TwoLeaderDays, want.Events)
		if g != w || !reflect.DeepEqual(got.Elections, want.Elections) {
			t.Fatalf("seed %d: observed %s, counted at every event %s", seed, g, w)
		}
	}
}
