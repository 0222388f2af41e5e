package model

import "math"

// Result holds the measures of one run. The JSON names and their order are
// the lesson's.
type Result struct {
	// Started counts batches that were started, on time or late.
	Started int `json:"started"`
	// Missed counts trigger rounds in which no node's work was accepted and
	// no persistent trigger kept the request.
	Missed int `json:"missed"`
	// DoubleStarts counts the extra starts: a trigger round in which k nodes
	// had their work accepted adds k-1.
	DoubleStarts int `json:"doubleStarts"`
	// Rejected counts node-rounds whose work fencing refused.
	Rejected int `json:"rejected"`
	// DelayedRounds sums, over batches started from a persistent trigger,
	// the rounds between the (last) recorded trigger and the start.
	DelayedRounds int `json:"delayedRounds"`
	// TwoLeaderRounds counts rounds in which more than one reachable node
	// believed it was the leader.
	TwoLeaderRounds int `json:"twoLeaderRounds"`
	// LeaderlessRounds counts rounds in which no reachable node believed it
	// was the leader.
	LeaderlessRounds int `json:"leaderlessRounds"`
	// HandoverRounds sums, over takeovers, the rounds since the record's
	// last renewal.
	HandoverRounds int `json:"handoverRounds"`
	// Handovers counts takeovers.
	Handovers int `json:"handovers"`
}

// noNode stands for "no node": the leader named by the record when a
// takeover finds no candidate. It is never 0, so it counts as reachable, and
// it is never a real node's index, so no node acts for it.
const noNode = -1

// node is what one node holds in its own memory.
type node struct {
	believes bool // it believes it is the leader
	token    int  // the token it got when it became leader; 0 if never
}

// Run plays rounds 1 to p.Rounds of the lesson's model and returns its
// measures. It is deterministic and does no I/O.
//
// Each round: the leader named in the record renews it if reachable; if the
// record is at least Lease rounds old, the lowest-numbered reachable node
// other than the named leader takes over with the next token; the reachable
// nodes that believe they lead do the round's work (with fencing, only those
// holding the record's token are accepted); a trigger round starts the batch
// once per accepted node, or misses it, or (with a persistent trigger)
// records it for the next round with an accepted node; and in every round
// that is a multiple of Renewal, each of those nodes re-reads the record and
// stops believing unless it is named there.
//
// Only node 0 is ever unreachable, and only while the record names node 0
// can the lease expire, so for valid parameters (Nodes >= 2) the takeover
// always finds node 1 and happens at most once. The lesson's model would
// name no node at all when Nodes < 2; Run reproduces that case too (the
// record then names a leader that always renews and never acts).
//
// A persistent trigger still waiting at the end of the run is neither
// started nor missed, as in the lesson; several triggers waiting at once are
// started as one batch.
//
// Run does not call Validate and does not panic: parameters that Validate
// rejects give a result that follows the same rules (a negative Nodes acts
// as 0), which is of little use but well defined.
func Run(p Params) Result {
	var s Result
	n := max(p.Nodes, 0)
	nodes := make([]node, n)
	end := satAdd(satAdd(p.Start, p.Outage), -1) // last round node 0 is unreachable
	reachable := func(d, t int) bool { return d != 0 || t < p.Start || t > end }
	triggered := func(t int) bool {
		for _, x := range p.Triggers {
			if x == t {
				return true
			}
		}
		return false
	}

	leader, lastRenewal, token := 0, 0, 1
	if n > 0 {
		nodes[0] = node{believes: true, token: 1}
	}
	pending, pendingRound := 0, 0

	for t := 1; t <= p.Rounds; t++ {
		if reachable(leader, t) {
			lastRenewal = t
		}
		if t-lastRenewal >= p.Lease {
			next := noNode
			for d := range n {
				if d != leader && reachable(d, t) {
					next = d
					break
				}
			}
			s.HandoverRounds += t - lastRenewal
			s.Handovers++
			leader, lastRenewal = next, t
			token++
			if next != noNode {
				nodes[next] = node{believes: true, token: token}
			}
		}

		active, accepted := 0, 0
		for d := range n {
			if !nodes[d].believes || !reachable(d, t) {
				continue
			}
			active++
			if p.Fencing && nodes[d].token < token {
				s.Rejected++
				continue
			}
			accepted++
		}
		if active > 1 {
			s.TwoLeaderRounds++
		}
		if active == 0 {
			s.LeaderlessRounds++
		}

		switch {
		case triggered(t):
			switch {
			case accepted > 0:
				s.Started++
				s.DoubleStarts += accepted - 1
			case p.PersistentTrigger:
				pending++
				pendingRound = t
			default:
				s.Missed++
			}
		case pending > 0 && accepted > 0:
			s.Started++
			s.DelayedRounds += t - pendingRound
			pending = 0
		}

		// A zero Renewal never divides evenly, as in the lesson's arithmetic.
		if p.Renewal != 0 && t%p.Renewal == 0 {
			for d := range n {
				if nodes[d].believes && reachable(d, t) && d != leader {
					nodes[d].believes = false
				}
			}
		}
	}
	return s
}

// satAdd returns a+b, saturated at the bounds of int. Only the comparison of
// the outage's end with round numbers matters, so saturating keeps it exact.
func satAdd(a, b int) int {
	switch {
	case b > 0 && a > math.MaxInt-b:
		return math.MaxInt
	case b < 0 && a < math.MinInt-b:
		return math.MinInt
	}
	return a + b
}
