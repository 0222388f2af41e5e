package sim

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/lab/vcluster"
)

// clockGuard is what a seed draws of the wall-clock guard (baton run
// --clock-tolerance and --clock-step-down): whether it is on, its
// tolerance and step-down (business time, as the scheduler reads them),
// and the steps of the nodes' wall clocks.
type clockGuard struct {
	tolerance, stepDown time.Duration
	steps               []vcluster.Fault
}

// drawClock draws, in a third of the seeds with the clock-step faults (from
// a stream of its own, so that the other draws of a seed stay what they
// were), the clock guard on: a tolerance of a quarter period, a step-down
// after two periods or never (a quarter of those seeds keep the term, as
// --clock-step-down 0 does), and one to four steps of a node's wall clock
// off the store's: within the tolerance a third of the time (the guard
// must let the node work), beyond it otherwise, ahead or behind, by up to
// ten tolerances; each set right again after up to eight periods, most
// long enough for the step-down. Every clock is right at the heal.
func drawClock(o Options, seed uint64) clockGuard {
	rng := rand.New(rand.NewPCG(mix(seed), 0x636c6f636b)) // "clock"
	if !slices.Contains(o.Faults, ClockStep) || rng.IntN(3) != 0 {
		return clockGuard{}
	}
	cal := vcluster.Calendar{Day: o.Period}
	g := clockGuard{tolerance: cal.Business(o.Period / 4)}
	if rng.IntN(4) != 0 {
		g.stepDown = cal.Business(2 * o.Period)
	}
	heal := o.Duration * 3 / 4
	window := o.Duration * 7 / 10
	for range 1 + rng.IntN(4) {
		n := 0 // the first leader half the time
		if rng.IntN(2) == 0 {
			n = rng.IntN(o.Nodes)
		}
		off := time.Duration(rng.Float64() * float64(g.tolerance))
		if rng.IntN(3) != 0 {
			off = g.tolerance + time.Duration(rng.Float64()*float64(9*g.tolerance)) + 1
		}
		if rng.IntN(2) == 0 {
			off = -off
		}
		at := 2*o.Lease + time.Duration(rng.Int64N(int64(window-2*o.Lease)))
		end := min(at+time.Duration(rng.Float64()*float64(8*o.Period)), heal)
		g.steps = append(g.steps,
			vcluster.Fault{At: at, Node: n, Kind: vcluster.StepClock, Offset: off},
			vcluster.Fault{At: end, Node: n, Kind: vcluster.StepClock})
	}
	for x := range o.Nodes {
		g.steps = append(g.steps, vcluster.Fault{At: heal, Node: x, Kind: vcluster.StepClock})
	}
	return g
}
