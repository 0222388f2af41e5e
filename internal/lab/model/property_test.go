package model

import (
	"testing"

	"pgregory.net/rapid"
)

func genParams(t *rapid.T) Params {
	return Params{
		Nodes:             rapid.IntRange(2, 9).Draw(t, "nodes"),
		Lease:             rapid.IntRange(1, 12).Draw(t, "lease"),
		Renewal:           rapid.IntRange(1, 9).Draw(t, "renewal"),
		Outage:            rapid.IntRange(0, 20).Draw(t, "outage"),
		Start:             rapid.IntRange(1, 30).Draw(t, "start"),
		Triggers:          rapid.SliceOfN(rapid.IntRange(1, 70), 0, 8).Draw(t, "triggers"),
		Rounds:            rapid.IntRange(1, 60).Draw(t, "rounds"),
		Fencing:           rapid.Bool().Draw(t, "fencing"),
		PersistentTrigger: rapid.Bool().Draw(t, "persistentTrigger"),
	}
}

// triggerRounds counts the distinct rounds of the run that trigger.
func triggerRounds(p Params) int {
	seen := map[int]bool{}
	for _, x := range p.Triggers {
		if x >= 1 && x <= p.Rounds {
			seen[x] = true
		}
	}
	return len(seen)
}

func TestRunProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genParams(t)
		r := Run(p)
		due := triggerRounds(p)
		if !p.PersistentTrigger && r.Started+r.Missed != due {
			t.Fatalf("started %d + missed %d != %d trigger rounds", r.Started, r.Missed, due)
		}
		if p.PersistentTrigger && (r.Missed != 0 || r.Started > due) {
			t.Fatalf("persistent trigger: missed %d, started %d of %d", r.Missed, r.Started, due)
		}
		if !p.PersistentTrigger && r.DelayedRounds != 0 {
			t.Fatalf("delayed rounds %d without a persistent trigger", r.DelayedRounds)
		}
		if p.Fencing && r.DoubleStarts != 0 {
			t.Fatalf("fencing let %d double starts through", r.DoubleStarts)
		}
		if !p.Fencing && r.Rejected != 0 {
			t.Fatalf("%d rejections without fencing", r.Rejected)
		}
		if r.Handovers > 1 {
			t.Fatalf("%d handovers; only node 0 fails, so at most one", r.Handovers)
		}
		if r.Handovers == 1 && r.HandoverRounds != p.Lease {
			t.Fatalf("handover after %d rounds, lease %d", r.HandoverRounds, p.Lease)
		}
		if r.TwoLeaderRounds+r.LeaderlessRounds > p.Rounds {
			t.Fatalf("two-leader %d + leaderless %d rounds > %d rounds", r.TwoLeaderRounds, r.LeaderlessRounds, p.Rounds)
		}
		if r.LeaderlessRounds > p.Outage {
			t.Fatalf("leaderless %d rounds > outage %d", r.LeaderlessRounds, p.Outage)
		}
		// Fencing and the persistent trigger change effect, never belief.
		q := p
		q.Fencing, q.PersistentTrigger = !p.Fencing, !p.PersistentTrigger
		s := Run(q)
		if s.TwoLeaderRounds != r.TwoLeaderRounds || s.LeaderlessRounds != r.LeaderlessRounds ||
			s.HandoverRounds != r.HandoverRounds || s.Handovers != r.Handovers {
			t.Fatalf("belief measures changed with fencing/trigger: %+v vs %+v", r, s)
		}
	})
}

func TestRunIgnoresTriggerOrderAndDuplicates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genParams(t)
		q := p
		q.Triggers = append(rapid.Permutation(p.Triggers).Draw(t, "perm"), p.Triggers...)
		if a, b := Run(p), Run(q); a != b {
			t.Fatalf("Run depends on trigger order or duplicates: %+v vs %+v", a, b)
		}
	})
}
