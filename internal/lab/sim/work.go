package sim

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/schedule"
)

// work is what a seed draws about the job itself, beside the faults: the
// policy operators steer (catch-up policy and window, overlap, retries and
// their backoff), the retention, how long each run takes and whether it
// fails, and the operators' backfills. Each comes from a stream of its
// own, so that the fault schedule and the cluster's variant stay what
// they were before these draws existed.
type work struct {
	policy     scheduler.Policy // without Max and Jitter, which are the options'
	retention  scheduler.Retention
	pruneEvery time.Duration // virtual
	pruneBatch int
	effect     func(key string, attempt int) (time.Duration, bool)
	// longest is the longest a run takes (virtual), and slack how much
	// later than before the job may finish its backlog after the heal.
	longest, slack time.Duration
	backfills      []vcluster.Fault
}

// drawWork draws a seed's work. Policies: catch-up all in half the seeds,
// latest and none in a quarter each; a window of 1 to 3 periods in a
// third; overlap skip in half; 1 to 3 retries, with a backoff of a
// quarter to one and a half periods, in half; a retention by rows or by
// age in a third. Runs take time in half the seeds: of the periods due
// before the heal, most take up to 30% of the period, a fifth from one to
// two periods (longer than the period: the overlap policy decides), a
// tenth no time; a run fails with a chance of 0, 10% or 30% (drawn per
// seed); after the heal every run is short and succeeds, so that the
// backlog is worked off. Half the seeds whose runs take time stop a run
// after a timeout of half a period to one and a half. With the operator faults a third of the seeds
// backfill one or two ranges of up to three past periods.
func drawWork(o Options, seed uint64) work {
	pol := rand.New(rand.NewPCG(mix(seed), 0x706f6c696379)) // "policy"
	cal := vcluster.Calendar{Day: o.Period}
	var w work
	switch pol.IntN(4) {
	case 0:
		w.policy.CatchUp = scheduler.CatchUpLatest
	case 1:
		w.policy.CatchUp = scheduler.CatchUpNone
	default:
		w.policy.CatchUp = scheduler.CatchUpAll
	}
	if pol.IntN(3) == 0 {
		w.policy.Window = cal.Business(time.Duration(1+pol.IntN(3)) * o.Period)
	}
	w.policy.Overlap = scheduler.OverlapQueue
	if pol.IntN(2) == 0 {
		w.policy.Overlap = scheduler.OverlapSkip
	}
	if pol.IntN(2) == 0 {
		w.policy.Retries = 1 + pol.IntN(3)
		w.policy.RetryBackoff = cal.Business(o.Period/4 + time.Duration(pol.Int64N(int64(o.Period*5/4))))
	}
	switch pol.IntN(6) {
	case 0:
		w.retention.Rows = 2 + pol.IntN(10)
	case 1:
		w.retention.Age = cal.Business(time.Duration(2+pol.IntN(8)) * o.Period)
	}
	if w.retention.On() {
		w.pruneEvery = time.Duration(1+pol.IntN(5)) * o.Period
		w.pruneBatch = 1 + pol.IntN(5)
	}

	eff := rand.New(rand.NewPCG(mix(seed), 0x656666656374)) // "effect"
	if eff.IntN(2) == 0 {
		salt := eff.Uint64()
		failure := []uint64{0, 10, 30}[eff.IntN(3)]
		heal := cal.Wall(o.Duration * 3 / 4)
		period := o.Period
		w.effect = func(key string, attempt int) (time.Duration, bool) {
			h := fnv.New64a()
			var b [16]byte
			binary.LittleEndian.PutUint64(b[:8], salt)
			binary.LittleEndian.PutUint64(b[8:], uint64(attempt))
			h.Write(b[:])
			h.Write([]byte(key))
			x := mix(h.Sum64())
			u := float64(x>>11) / (1 << 53) // the length, uniform in [0, 1)
			kind, fail := (x>>3)%10, (x>>8)%100 < failure
			if at, err := schedule.ParseKey(key); err != nil || !at.Before(heal) {
				return time.Duration(u * float64(period) / 10), false
			}
			switch {
			case kind < 1:
				return 0, fail
			case kind < 3:
				return period + time.Duration(u*float64(period)), fail
			}
			return time.Duration(u * float64(period) * 3 / 10), fail
		}
		w.longest = 2 * o.Period
		if eff.IntN(2) == 0 {
			// From half a period to one and a half: the long runs
			// outlast it often, the others never.
			w.policy.Timeout = cal.Business(o.Period/2 + time.Duration(eff.Int64N(int64(o.Period))))
		}
	}
	// A long run before the heal holds up to the cap's periods behind it,
	// each possibly long; a failure is retried after the backoff.
	w.slack = 3*w.longest + time.Duration(w.policy.Retries)*(cal.Elapsed(w.policy.RetryBackoff)+w.longest)

	if slices.Contains(o.Faults, Operator) {
		bf := rand.New(rand.NewPCG(mix(seed), 0x6261636b66696c6c)) // "backfill"
		if bf.IntN(3) == 0 {
			for range 1 + bf.IntN(2) {
				at := o.Duration/5 + time.Duration(bf.Int64N(int64(o.Duration/2)))
				from := time.Duration(bf.Int64N(int64(at - o.Period)))
				until := min(from+time.Duration(1+bf.IntN(3))*o.Period-1, at-o.Period/2)
				w.backfills = append(w.backfills, vcluster.Fault{At: at, Kind: vcluster.Backfill, From: from, Until: until})
			}
		}
	}
	return w
}
