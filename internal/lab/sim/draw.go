package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/lab/vcluster"
)

// variant is how a seed's cluster runs its names.
type variant struct {
	sessions    []bool        // per node: holds its names through a session
	notify      bool          // change notifications (else polling alone, as when a watch is broken)
	callLatency bool          // election requests travel the latency before the store applies them
	balance     bool          // balanced holding (every node through a session)
	takeStep    int           // election.Config.TakeStep (0: the default)
	succession  bool          // election.Config.Succession (unbalanced session nodes)
	ignores     [][]bool      // vcluster.Config.Ignores (nil: every node campaigns for every name)
	feedLag     time.Duration // vcluster.Config.FeedLag
}

// sessionNodes returns the nodes that hold their names through a session.
func (v variant) sessionNodes() []int {
	var nodes []int
	for i, on := range v.sessions {
		if on {
			nodes = append(nodes, i)
		}
	}
	return nodes
}

// drawVariant says which nodes of a seed hold their names through a
// session, whether the nodes get change notifications and whether the
// election's requests, not only its answers, take the store's latency
// (each half the seeds). It draws from a stream of its own, so that a
// seed's fault schedule does not depend on it.
func drawVariant(o Options, seed uint64) variant {
	// Consecutive seeds make correlated first draws of a PCG: mix the seed.
	rng := rand.New(rand.NewPCG(mix(seed), 0x73657373696f6e)) // "session"
	mode := o.Sessions
	if mode == SessionsSeeded {
		mode = []SessionMode{SessionsOn, SessionsOff, SessionsMixed}[rng.IntN(3)]
		if o.Balance == BalanceOn {
			mode = SessionsOn
		}
	}
	on := make([]bool, o.Nodes)
	switch mode {
	case SessionsOn:
		for i := range on {
			on[i] = true
		}
	case SessionsMixed:
		for i := range on {
			on[i] = rng.IntN(2) == 0
		}
		if o.Nodes > 1 && !slices.Contains(on, true) {
			on[rng.IntN(o.Nodes)] = true
		}
		if o.Nodes > 1 && !slices.Contains(on, false) {
			on[rng.IntN(o.Nodes)] = false
		}
	}
	v := variant{sessions: on, notify: rng.IntN(2) == 0, callLatency: rng.IntN(2) == 0}
	// Drawn last, so that the draws above stay what they were before
	// balanced runs existed.
	v.balance = mode == SessionsOn && (o.Balance == BalanceOn || o.Balance == BalanceSeeded && rng.IntN(2) == 0)
	// Half the seeds take a dead session's names 1 to 3 a step, so that a
	// takeover of a few names runs in steps as one of thousands does.
	if rng.IntN(2) == 0 {
		v.takeStep = 1 + rng.IntN(3)
	}
	// Half the unbalanced seeds with a session node end dead sessions by
	// succession (the in-memory store keeps them): drawn after the rest.
	v.succession = !v.balance && slices.Contains(on, true) && !o.NoSuccession && rng.IntN(2) == 0
	v.ignores = drawIgnores(o, seed, v)
	v.feedLag = drawFeedLag(o, seed, v)
	return v
}

// drawFeedLag draws, in a third of the seeds with change notifications, a
// feed that lags the store by up to three leases, as an etcd watch of a
// loaded cluster can: a succession may then be found before the feed
// reported the writes that came before it (a release, a take elsewhere),
// which a Group that takes the names passed on from its reads must wait
// for (election.Synced). From a stream of its own, so that the other
// draws of a seed stay as they were.
func drawFeedLag(o Options, seed uint64, v variant) time.Duration {
	rng := rand.New(rand.NewPCG(mix(seed), 0x6c6167)) // "lag"
	if !v.notify || rng.IntN(3) != 0 {
		return 0
	}
	return time.Duration(rng.Int64N(int64(3 * o.Lease)))
}

// drawIgnores draws, in a third of the unbalanced seeds with names besides
// the job's and more than one node, which names each node does not
// campaign for: each of those names, a third of the time, every one still
// campaigned for by some node (a balanced run's shares assume the nodes
// campaign for the same names). A session ended by succession then passes
// names to a node that must let them go. From a stream of its own, so
// that the other draws of a seed stay as they were.
func drawIgnores(o Options, seed uint64, v variant) [][]bool {
	rng := rand.New(rand.NewPCG(mix(seed), 0x69676e6f7265)) // "ignore"
	if v.balance || o.Names == 0 || o.Nodes < 2 || rng.IntN(3) != 0 {
		return nil
	}
	ignores := make([][]bool, o.Nodes)
	for n := range ignores {
		ignores[n] = make([]bool, o.Names+1)
	}
	for i := 1; i <= o.Names; i++ {
		all := true
		for n := range ignores {
			ignores[n][i] = rng.IntN(3) == 0
			all = all && ignores[n][i]
		}
		if all {
			ignores[rng.IntN(o.Nodes)][i] = false
		}
	}
	return ignores
}

// drawSuspension draws, in a quarter of the seeds, an operator's
// suspension of the job and its resume (from a stream of its own, so that
// the other faults of a seed stay as they were): suspended from between
// 10% and 35% of the run for 5% to 25% of it, resumed well before the
// heal, so that the periods due meanwhile are caught up before the end.
func drawSuspension(o Options, seed uint64) []vcluster.Fault {
	rng := rand.New(rand.NewPCG(mix(seed), 0x73757370656e64)) // "suspend"
	if rng.IntN(4) != 0 {
		return nil
	}
	t := o.Duration/10 + time.Duration(rng.Int64N(int64(o.Duration/4)))
	d := o.Duration/20 + time.Duration(rng.Int64N(int64(o.Duration/5)))
	return []vcluster.Fault{{At: t, Kind: vcluster.Suspend}, {At: t + d, Kind: vcluster.Resume}}
}

// drawLockFreeze: with the supervisors' records and the pause faults,
// half the seeds arm a node, once or twice, to freeze as its next effect
// starts while it holds the store's write lock (baton stopped inside a
// SQLite write transaction) for longer than a takeover waits, so that
// its effect ends inside its term while nobody can write, and its
// supervisor's record lands within the takeover grace after the thaw,
// when the next term can begin. A stream of its own: the other faults of
// a seed stay as they were.
func drawLockFreeze(o Options, seed uint64) []vcluster.Fault {
	if !o.SupervisorRecords || !slices.Contains(o.Faults, Pause) {
		return nil
	}
	rng := rand.New(rand.NewPCG(mix(seed), 0x6c6f636b)) // "lock"
	if rng.IntN(2) != 0 {
		return nil
	}
	var fs []vcluster.Fault
	for range 1 + rng.IntN(2) {
		t := 2*o.Lease + time.Duration(rng.Int64N(int64(o.Duration*4/10)))
		hold := o.Lease + 2*o.Margin + time.Duration(rng.Int64N(int64(2*o.Lease)))
		after := time.Duration(rng.Int64N(int64(takeoverGrace(o) * 9 / 10)))
		n := 0 // the first leader, most often still leading
		if rng.IntN(2) == 0 {
			n = rng.IntN(o.Nodes)
		}
		fs = append(fs, vcluster.Fault{At: t, Node: n, Kind: vcluster.ArmFreezeLocked, Hold: hold, RecordAfter: after},
			vcluster.Fault{At: t + 3*o.Period, Node: n, Kind: vcluster.Disarm})
	}
	return fs
}

// takeoverGrace is the nodes' TakeoverGrace with the supervisors' records:
// the renew interval, as baton run's (which is at least a second).
func takeoverGrace(o Options) time.Duration { return o.Renew }

// mix is SplitMix64's finalizer: nearby seeds give distant states.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// draw makes the fault schedule of a seed. Faults begin and end within the
// first 70% of the run; at 75% everything is healed, so the rest of the run
// shows liveness.
func draw(o Options, seed uint64) (faults []vcluster.Fault, latency time.Duration, beyond bool) {
	rng := rand.New(rand.NewPCG(seed, 0x62617a6f6e))        // "baton"
	names := rand.New(rand.NewPCG(mix(seed), 0x6e616d6573)) // "names"
	// The store's one-way latency: a local store to a distant one.
	latency = o.scaled(time.Duration(1+rng.IntN(100)) * time.Millisecond)
	window := o.Duration * 7 / 10
	at := func() time.Duration { return 2*o.Lease + time.Duration(rng.Int64N(int64(window-2*o.Lease))) }
	length := func() time.Duration {
		// Any length: most short, some longer than several leases.
		return time.Duration(rng.ExpFloat64() * float64(o.Lease))
	}
	node := func() int {
		if rng.IntN(2) == 0 {
			return 0 // the first leader, most often still leading
		}
		return rng.IntN(o.Nodes)
	}
	add := func(f vcluster.Fault) { faults = append(faults, f) }
	// Hostile is a kind of seed, not of episode (hostile.go): its seeds
	// draw their episodes from the other classes. Clock steps come from a
	// stream of their own (clock.go).
	episodic := func(c FaultClass) bool { return c != Hostile && c != ClockStep }
	classes := slices.DeleteFunc(slices.Clone(o.Faults), func(c FaultClass) bool { return !episodic(c) })
	if len(classes) == 0 && slices.Contains(o.Faults, Hostile) {
		classes = slices.DeleteFunc(slices.Clone(AllFaults), func(c FaultClass) bool { return !episodic(c) })
	}
	episodes := 1 + rng.IntN(10)
	for i := 0; i < episodes && len(classes) > 0; i++ {
		class := classes[rng.IntN(len(classes))]
		t, d, n := at(), length(), node()
		switch class {
		case Partition:
			add(vcluster.Fault{At: t, Node: n, Kind: vcluster.Cut})
			add(vcluster.Fault{At: t + d, Node: n, Kind: vcluster.Reconnect})
		case Pause:
			add(vcluster.Fault{At: t, Node: n, Kind: vcluster.Freeze})
			add(vcluster.Fault{At: t + d, Node: n, Kind: vcluster.Thaw})
		case PauseBeforeEffect:
			// Frozen after the Valid() check (only fencing stops the
			// write that follows), just before it (the check must stop
			// the effect), or with a ledger call in flight (its answer
			// leads to writes under the old token: the ledger's fence
			// stops them).
			arm := []vcluster.FaultKind{vcluster.ArmFreeze, vcluster.ArmPause, vcluster.ArmPauseInFlight}[rng.IntN(3)]
			add(vcluster.Fault{At: t, Node: n, Kind: arm})
			add(vcluster.Fault{At: t + d + o.Lease, Node: n, Kind: vcluster.Disarm})
		case Crash:
			add(vcluster.Fault{At: t, Node: n, Kind: vcluster.Crash})
			add(vcluster.Fault{At: t + d, Node: n, Kind: vcluster.Restart})
		case Drift:
			// Within the margin most of the time, beyond it sometimes.
			bound := float64(o.Margin) / float64(o.Lease) // rates 1±bound stay within (1+b)/(1-b) < 1+2e/lease for small b
			dev := rng.Float64() * bound * 0.9
			if rng.IntN(4) == 0 {
				dev = bound * (2 + 8*rng.Float64())
				beyond = true
			}
			rate := 1 + dev
			if rng.IntN(2) == 0 {
				rate = 1 - min(dev, 0.5)
			}
			add(vcluster.Fault{At: t, Node: n, Kind: vcluster.SetRate, Rate: rate})
			add(vcluster.Fault{At: t + d + o.Lease, Node: n, Kind: vcluster.SetRate, Rate: 1})
		case StoreOutage:
			for x := 0; x < o.Nodes; x++ {
				add(vcluster.Fault{At: t, Node: x, Kind: vcluster.Cut})
				add(vcluster.Fault{At: t + d, Node: x, Kind: vcluster.Reconnect})
			}
		case SlowStore:
			lat := o.scaled(time.Duration(1+rng.IntN(1000)) * time.Millisecond * time.Duration(1+rng.IntN(3)))
			add(vcluster.Fault{At: t, Node: n, Kind: vcluster.SetLatency, Latency: lat})
			add(vcluster.Fault{At: t + d, Node: n, Kind: vcluster.SetLatency, Latency: latency})
		case Operator:
			// The job's name half the time, else one of the others (drawn
			// from a stream of its own: the job's schedule stays the same
			// whatever the number of names).
			name := 0
			if o.Names > 0 && names.IntN(2) == 0 {
				name = 1 + names.IntN(o.Names)
			}
			resign, all := rng.IntN(2) == 0, names.IntN(4) == 0
			if resign || all {
				kind := vcluster.Resign
				if all {
					kind = vcluster.ResignAll // the process gives every name up at once
				}
				add(vcluster.Fault{At: t, Node: n, Kind: kind, Name: name})
			} else {
				add(vcluster.Fault{At: t, Node: n, Kind: vcluster.Transfer, To: rng.IntN(o.Nodes), Name: name})
			}
		case Skew:
			// A leader stops at the worst moment. Node n's clock runs slow
			// and every other fast, their ratio close to the largest the
			// margin covers; then n stops renewing. If n leads, its term
			// stays valid by its slow clock until its last renewal's send
			// time + lease, while a fast contender counts lease + 2e from
			// when it read that renewal: a takeover that waits only the
			// lease lands inside n's term unless store round trips make up
			// for the margin, so the store answers within a few
			// milliseconds while n is cut off or frozen. Or n freezes at
			// its next ledger call (within a period), the call in flight,
			// and wakes about when a contender takes over, the others'
			// store replies slow: the call's answer leads to ledger writes
			// under the old token, which only the ledger's fence refuses
			// while the successor holds the term but has not written yet.
			ratio := 1 + 2*float64(o.Margin)/float64(o.Lease)*(0.6+0.35*rng.Float64())
			if o.hostile {
				// At the very edge of what the margin covers.
				ratio = 1 + 2*float64(o.Margin)/float64(o.Lease)*(1-1e-9)
			}
			slow, fast := 1/math.Sqrt(ratio), math.Sqrt(ratio)
			stop := t + time.Duration(rng.Int64N(int64(o.Renew)))
			end := stop + o.Lease + 2*o.Margin + d
			lat, inFlight := o.scaled(time.Duration(1+rng.IntN(5))*time.Millisecond), false
			switch rng.IntN(3) {
			case 0:
				add(vcluster.Fault{At: stop, Node: n, Kind: vcluster.Cut})
				add(vcluster.Fault{At: end, Node: n, Kind: vcluster.Reconnect})
			case 1:
				add(vcluster.Fault{At: stop, Node: n, Kind: vcluster.Freeze})
				add(vcluster.Fault{At: end, Node: n, Kind: vcluster.Thaw})
			default:
				end = stop + o.Lease + 2*o.Margin + time.Duration(rng.Int64N(int64(o.Renew)))
				lat, inFlight = o.scaled(time.Duration(100+rng.IntN(200))*time.Millisecond), true
				add(vcluster.Fault{At: stop, Node: n, Kind: vcluster.ArmPauseInFlight})
				add(vcluster.Fault{At: end, Node: n, Kind: vcluster.Disarm})
			}
			for x := 0; x < o.Nodes; x++ {
				rate := fast
				if x == n {
					rate = slow
				}
				add(vcluster.Fault{At: t, Node: x, Kind: vcluster.SetRate, Rate: rate})
				add(vcluster.Fault{At: end, Node: x, Kind: vcluster.SetRate, Rate: 1})
				if x != n || !inFlight {
					add(vcluster.Fault{At: t, Node: x, Kind: vcluster.SetLatency, Latency: lat})
					add(vcluster.Fault{At: end, Node: x, Kind: vcluster.SetLatency, Latency: latency})
				}
			}
		}
	}
	if slices.Contains(o.Faults, Operator) {
		faults = append(faults, drawSuspension(o, seed)...)
	}
	heal := o.Duration * 3 / 4
	for i, f := range faults {
		faults[i].At = min(f.At, heal) // episodes that would outlast the window end at the heal
	}
	for x := 0; x < o.Nodes; x++ {
		for _, k := range []vcluster.FaultKind{vcluster.Reconnect, vcluster.Thaw, vcluster.Disarm, vcluster.Restart} {
			add(vcluster.Fault{At: heal, Node: x, Kind: k})
		}
		add(vcluster.Fault{At: heal, Node: x, Kind: vcluster.SetRate, Rate: 1})
		add(vcluster.Fault{At: heal, Node: x, Kind: vcluster.SetLatency, Latency: latency})
	}
	return faults, latency, beyond
}

// drawFeedBreak draws, in half the seeds that end sessions by succession
// with change notifications and two session nodes or more, a feed that
// breaks while names change hands: a session node's change feed closes
// (its store calls go on), another session node resigns a name a poll
// later (another node may take it meanwhile), the feed opens again a few
// polls after that, and the node that resigned crashes a poll later. The
// first node may then succeed the crashed node's session with reads made
// before its feed broke, which the new feed does not cover: those names
// must be read again (the succession-adopt-across-gap mutation takes
// them from those reads, and a name taken elsewhere in the gap is held
// twice). From a stream of its own.
func drawFeedBreak(o Options, seed uint64, v variant) []vcluster.Fault {
	if !v.succession || !v.notify {
		return nil
	}
	rng := rand.New(rand.NewPCG(mix(seed), 0x627265616b)) // "break"
	if rng.IntN(2) != 0 {
		return nil
	}
	nodes := v.sessionNodes()
	if len(nodes) < 2 {
		return nil
	}
	i := rng.IntN(len(nodes))
	a, b := nodes[i], nodes[(i+1+rng.IntN(len(nodes)-1))%len(nodes)]
	t := o.Duration/5 + time.Duration(rng.Int64N(int64(o.Duration/4)))
	heal := t + o.Poll*time.Duration(2+rng.IntN(8))
	crash := heal + o.Poll
	back := crash + 2*o.Lease
	if back > o.Duration*7/10 {
		return nil
	}
	return []vcluster.Fault{
		{At: t, Node: a, Kind: vcluster.FeedBreak},
		{At: t + o.Poll, Node: b, Kind: vcluster.Resign, Name: rng.IntN(o.Names + 1)},
		{At: heal, Node: a, Kind: vcluster.FeedHeal},
		{At: crash, Node: b, Kind: vcluster.Crash},
		{At: back, Node: b, Kind: vcluster.Restart},
	}
}

// drawForge draws, in a fifth of the seeds with change notifications and
// a session node, a client of the store that forges notifications
// (vcluster.Config.Forge) for the whole run. It draws from a stream of its
// own, so that the seed's other draws stay what they were.
func drawForge(seed uint64, v variant) bool {
	if !v.notify || len(v.sessionNodes()) == 0 {
		return false
	}
	rng := rand.New(rand.NewPCG(mix(seed), 0x666f726765)) // "forge"
	return rng.IntN(5) == 0
}

// takeStepText says how many names a step takes, for the trace.
func takeStepText(n int) string {
	if n == 0 {
		return fmt.Sprint(election.DefaultTakeStep)
	}
	return fmt.Sprint(n)
}

// drawStaleWrite draws, in half the seeds that end sessions by succession
// and whose election requests travel the latency, a write of a session's
// holder that lands after its session was passed on: a session node's store
// grows slow (twice the lease each way) and the node resigns a name just
// after, so that its renewals and its release are out while a contender
// finds its session unchanged for the lease plus 2e and passes its names
// on. The release then lands, and must conflict: the succession changed
// the name's version (the succession-stored-version mutation lets it free
// the name, whose next term repeats a token). From a stream of its own.
func drawStaleWrite(o Options, seed uint64, v variant, latency time.Duration) []vcluster.Fault {
	if !v.succession || !v.callLatency {
		return nil
	}
	rng := rand.New(rand.NewPCG(mix(seed), 0x7374616c65)) // "stale"
	if rng.IntN(2) != 0 {
		return nil
	}
	nodes := v.sessionNodes()
	n := nodes[rng.IntN(len(nodes))]
	t := o.Duration/5 + time.Duration(rng.Int64N(int64(o.Duration/4)))
	end := t + 4*o.Lease
	if end > o.Duration*7/10 {
		return nil // a lease too long for the run: healed before it could end
	}
	return []vcluster.Fault{
		{At: t, Node: n, Kind: vcluster.SetLatency, Latency: 2 * o.Lease},
		{At: t + o.Poll, Node: n, Kind: vcluster.Resign, Name: rng.IntN(o.Names + 1)},
		{At: end, Node: n, Kind: vcluster.SetLatency, Latency: latency},
	}
}

// drawCollect draws how a seed's session nodes collect dead session
// records (vcluster.Collect), in every seed with a session node, from a
// stream of its own. Half the seeds collect promptly: a pass starts
// within two store round trips of every succession, besides one every 1
// to 4 leases, so that its settles land while the successor adopts, the
// dead holder's release is out (drawStaleWrite) and contenders' requests
// are late. The other half collect late: a pass every 8 to 20 leases and
// none after a succession, so that names are passed on twice or more
// (a chain of successions) before they are settled. A Settle call
// rewrites 1 to 3 names.
func drawCollect(o Options, seed uint64, v variant, latency time.Duration) vcluster.Collect {
	if !slices.Contains(v.sessions, true) {
		return vcluster.Collect{}
	}
	rng := rand.New(rand.NewPCG(mix(seed), 0x636f6c6c656374)) // "collect"
	c := vcluster.Collect{Page: 1 + rng.IntN(3)}
	if rng.IntN(2) == 0 {
		c.Every = time.Duration(1+rng.IntN(4)) * o.Lease
		c.After = func() time.Duration { return time.Duration(rng.Int64N(int64(4*latency) + 1)) }
		return c
	}
	c.Every = time.Duration(8+rng.IntN(13)) * o.Lease
	return c
}

// drawPrefer draws, in the seeds Options.Prefer says (a third, or all,
// of those that are neither balanced, where the pulls of a balanced
// group move the job by count, not by preference, nor hostile, whose
// quiet end lasts five leases, and whose change feed lags by less than
// half a lease: a target that hears of the handover only from a feed
// lagging by more than the lease plus 2e misses it, the lead returns
// after the lease, and the policy tries again a hysteresis later, for as
// long as the lag lasts (docs/prefer.md, "Known limits")), a preference
// policy for the job
// (vcluster.Config.Prefer, docs/prefer.md), a hysteresis of one to two
// leases, and each node's candidacy: a weight, a version, a zone label;
// in half of them every node comes back from its first restart with
// another version, as in a rolling upgrade (or its rollback). It draws
// from a stream of its own, so that the seed's other draws stay what they
// were, and a seed that draws no policy runs as it did before preferences
// existed.
func drawPrefer(o Options, seed uint64, v variant) (p election.Policy, hysteresis time.Duration, attrs, upgraded []election.Attrs) {
	if o.Prefer == PreferOff || o.Prefer == "" || v.balance || o.hostile || o.Duration/4 < 5*o.Lease || v.feedLag >= o.Lease/2 {
		return
	}
	rng := rand.New(rand.NewPCG(mix(seed), 0x707265666572)) // "prefer"
	if rng.IntN(3) != 0 && o.Prefer != PreferOn {
		return
	}
	policies := []election.Policy{
		{Kind: election.PreferHighestWeight},
		{Kind: election.PreferOldestVersion},
		{Kind: election.PreferNewestVersion},
		{Kind: election.PreferLabel, Key: "zone", Value: "eu-1"},
	}
	p = policies[rng.IntN(len(policies))]
	hysteresis = o.Lease + time.Duration(rng.Int64N(int64(o.Lease)+1))
	versions := []string{"1.4", "1.4.2", "1.9", "1.10", "v1.10.0", "2.0.0-rc.1", ""}
	zones := []string{"eu-1", "us-1", "ap-1"}
	upgrade := rng.IntN(2) == 0
	for range o.Nodes {
		a := election.Attrs{Weight: rng.IntN(11), Version: versions[rng.IntN(len(versions))]}
		if z := rng.IntN(len(zones) + 1); z < len(zones) {
			a.Labels = []election.Label{{Key: "zone", Value: zones[z]}}
		}
		attrs = append(attrs, a)
		u := a
		if upgrade {
			u.Version = versions[rng.IntN(len(versions)-1)] // a version, maybe older: a rollback too
		}
		upgraded = append(upgraded, u)
	}
	return p, hysteresis, attrs, upgraded
}

// drawShares draws, with Options.Shares, each node's weight (1 to 4) in a
// balanced seed; nil otherwise. From a stream of its own, so that the
// other draws of a seed stay as they were.
func drawShares(o Options, seed uint64, v variant) []int {
	if !o.Shares || !v.balance {
		return nil
	}
	rng := rand.New(rand.NewPCG(mix(seed), 0x736861726573)) // "shares"
	shares := make([]int, o.Nodes)
	for i := range shares {
		shares[i] = 1 + rng.IntN(4)
	}
	return shares
}
