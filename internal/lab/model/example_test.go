package model_test

import (
	"fmt"

	"github.com/batonhq/baton/internal/lab/model"
)

// The lesson's plain run: node 0 is unreachable in rounds 6-10, the batch of
// round 6 is missed, and the batch of round 12 is started by both the old
// and the new leader.
func ExampleRun() {
	r := model.Run(model.DefaultParams())
	for _, m := range r.Measures() {
		fmt.Printf("%-24s %d\n", m.Label, m.Value)
	}
	// Output:
	// batches started          3
	// batches missed           1
	// delayed start rounds     0
	// double-started batches   1
	// rejected by fencing      0
	// two-leader rounds        2
	// leaderless rounds        2
	// handover rounds          3
	// handovers                1
}

// With fencing the stale leader's work is rejected, and with a persistent
// trigger the missed batch is started two rounds late.
func ExampleRun_fencingAndPersistentTrigger() {
	p := model.DefaultParams()
	p.Fencing, p.PersistentTrigger = true, true
	r := model.Run(p)
	fmt.Printf("started %d, missed %d, double %d, rejected %d, delayed %d rounds\n",
		r.Started, r.Missed, r.DoubleStarts, r.Rejected, r.DelayedRounds)
	// Output:
	// started 4, missed 0, double 0, rejected 2, delayed 2 rounds
}

func ExampleActivation() {
	safe, wait, err := model.Activation(8e9, 150e6, 3.7e9) // 8s, 150ms, 3.7s
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(safe, wait)
	// Output:
	// 8.3s 4.6s
}
