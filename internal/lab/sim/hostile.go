package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// Hostile seeds run at the edges of every range instead of the options'
// timings. A seed is hostile when the hostile class is the only one asked
// for, or one seed in eight when it is among others (drawn from a stream
// of its own, so that the other seeds stay what they were). A hostile
// seed:
//   - draws its lease from the bounds (election.MinLease, MaxLease) or
//     anywhere between, and its renew, margin and poll intervals from
//     their bounds or between them (the margin up to the lease minus 1ns;
//     the shortest renew and poll limited to a twelfth and a fortieth of
//     the lease, so that a run stays a few thousand events); every other
//     duration of the run (period, latency, length) scales with the lease;
//   - starts every name at a token within a few million of the largest;
//   - plants one name (with names besides the job's) held by a node that
//     does not exist, with a lease no valid Config writes (the largest
//     Duration, a negative one, zero, just past a bound), on its own
//     record or through a session record of that lease: no node may ever
//     take it, and its record must be unchanged at the end;
//   - in one of three, hands out a damaged ledger row beside the job's
//     (damagedRows): every leader's scheduler must end its work on it
//     without ever writing its period, so that seed runs no period and
//     its liveness is not checked;
//   - and its hostile episodes put the clocks at the very edge of the
//     margin (the largest rate ratio it covers) when a leader stops.
//
// The timeouts of a run and the scheduler's own intervals keep their
// defaults.

// hostileLeases are planted leases outside [election.MinLease, MaxLease].
var hostileLeases = []time.Duration{
	math.MaxInt64, -1, 0, math.MinInt64, election.MinLease - 1, election.MaxLease + 1,
	2562047*time.Hour + 47*time.Minute + 16*time.Second,
}

// ghost is the node id of planted holders: no node of the run has it.
const ghost = "ghost"

// hostile returns the options of seed, and the records to plant, when the
// seed is hostile; otherwise o and nil.
func hostile(o Options, seed uint64) (Options, []store.Record) {
	if !slices.Contains(o.Faults, Hostile) {
		return o, nil
	}
	rng := rand.New(rand.NewPCG(mix(seed), 0x686f7374696c65)) // "hostile"
	if len(o.Faults) > 1 && rng.IntN(8) != 0 {
		return o, nil
	}
	// A bound half the time, else anywhere between.
	edge := func(lo, hi time.Duration) time.Duration {
		switch rng.IntN(4) {
		case 0:
			return lo
		case 1:
			return hi
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	var lease time.Duration
	switch rng.IntN(3) {
	case 0:
		lease = election.MinLease
	case 1:
		lease = election.MaxLease
	default: // log-uniform between
		lease = time.Duration(float64(election.MinLease) * math.Pow(float64(election.MaxLease)/float64(election.MinLease), rng.Float64()))
	}
	f := float64(lease) / float64(o.Lease)
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	h := o
	h.Lease = lease
	h.Renew = edge(max(election.MinInterval, lease/12), lease/2)
	h.Margin = edge(0, lease-1)
	h.Poll = edge(max(election.MinInterval, lease/40), lease/2)
	h.Period = max(scale(o.Period), 10*time.Millisecond)
	h.Jitter = min(scale(o.Jitter), h.Period/2)
	h.Duration = max(scale(o.Duration), 10*lease)
	h.scale = f
	h.hostile = true

	var plant []store.Record
	damaged := -1
	if o.Names > 0 {
		damaged = o.Names // the last shard
	}
	for i := 0; i <= o.Names; i++ {
		name := vcluster.Job
		if i > 0 {
			name = fmt.Sprintf("shard-%d", i)
		}
		token := election.MaxToken - 1_000_000 - uint64(rng.IntN(1_000_000))
		if i != damaged {
			plant = append(plant, store.Record{Name: name, Token: token, Lease: lease})
			continue
		}
		bad := hostileLeases[rng.IntN(len(hostileLeases))]
		held := store.Record{Name: name, Holder: ghost, Incarnation: ghost + ".1", Token: token, Lease: bad}
		if rng.IntN(2) == 0 {
			// Through a session whose record has the hostile lease: the
			// observers must never judge it dead.
			sess := election.SessionName(ghost, ghost+".1", 1)
			plant = append(plant, store.Record{Name: sess, Holder: ghost, Incarnation: ghost + ".1", Token: 1, Lease: bad})
			held.Session, held.Lease = sess, lease
		}
		plant = append(plant, held)
	}
	return h, plant
}

// planted returns the names that p plants held (the damaged ones).
func planted(p []store.Record) []string {
	var names []string
	for _, r := range p {
		if !r.Free() && !store.IsSession(r.Name) {
			names = append(names, r.Name)
		}
	}
	return names
}

// hostileStates are planted ledger states that no baton writes.
var hostileStates = []store.RunState{"weird", "", "DONE", "done\x00", "running ", "pending\x1b[2J"}

// damagedRows returns, for one hostile seed in three (o from hostile),
// the damaged ledger row the store hands out in that seed: a manual row
// of the day before the first period, in a state that is none of
// store.RunStates, claimed once by a node that does not exist. It draws
// from a stream of its own, so the seed's other draws stay what they were.
func damagedRows(o Options, seed uint64) []store.Run {
	if !o.hostile {
		return nil
	}
	rng := rand.New(rand.NewPCG(mix(seed), 0x64616d61676564)) // "damaged"
	if rng.IntN(3) != 0 {
		return nil
	}
	at := vcluster.Epoch.Add(-24 * time.Hour)
	return []store.Run{{Job: vcluster.Job, Period: schedule.Key(at), Scheduled: at, State: hostileStates[rng.IntN(len(hostileStates))],
		Token: 1, Holder: ghost, Attempt: 1, Manual: true, Started: at, Version: 1 << 40}}
}
