package etcd_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton"

	"github.com/batonhq/baton/internal/electortest"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// These tests run baton Electors (and a schedule.Runner) on real embedded
// etcd clusters through the shared real-time harness, each node with a
// client that reaches only the members on its side; the etcd-specific
// faults (quorum loss, partitions) are here, the scenarios every backend
// shares are in electortest.Run. A real cluster runs on real time, so the
// leases are short and the timing assertions leave slack for a loaded
// 2-core machine.
var timing = electortest.Timing{
	Lease:       1500 * time.Millisecond,
	Renew:       300 * time.Millisecond,
	Margin:      100 * time.Millisecond, // the clock uncertainty e
	Poll:        100 * time.Millisecond,
	Slack:       500 * time.Millisecond,
	WriteEvery:  50 * time.Millisecond,
	CallTimeout: reqTimeout,
}

// TestElector runs the shared real-time elector scenarios on one member.
func TestElector(t *testing.T) {
	// Its scenarios mostly wait: serial, it held the package's serial
	// tests back 7 s.
	testenv.ParallelUnlessLong(t)
	electortest.Run(t, electortest.Backend{
		Timing: timing,
		Fresh: func(t *testing.T) electortest.Location {
			c := sharedCluster(t)
			prefix := freshPrefix(t)
			open := func(string) store.Store {
				return openStore(t, c.Endpoints(), etcd.WithPrefix(prefix), etcd.WithRequestTimeout(reqTimeout))
			}
			return electortest.Location{
				Open: open,
				// The prefix's keys deleted, and a store created afresh there.
				Replace: func() {
					st := open("replacer").(*etcd.Store)
					ctx, cancel := context.WithTimeout(context.Background(), reqTimeout)
					defer cancel()
					if _, err := st.Client().Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
						t.Fatal(err)
					}
					st.Close()
					open("replacer").Close()
				},
			}
		},
	})
}

// ecluster is a harness cluster on an etcd cluster whose nodes' clients
// reach only some members.
type ecluster struct {
	*electortest.Cluster
	t      *testing.T
	c      *etcdtest.Cluster
	prefix string
}

func newECluster(t *testing.T, c *etcdtest.Cluster) *ecluster {
	return &ecluster{Cluster: electortest.New(t, timing, nil), t: t, c: c, prefix: freshPrefix(t)}
}

// open opens a store on members ms. The cluster must have a quorum: Open
// checks the schema with a write.
func (ec *ecluster) open(ms ...int) *etcd.Store {
	var eps []string
	for _, i := range ms {
		eps = append(eps, ec.c.Endpoint(i))
	}
	return openStore(ec.t, eps, etcd.WithPrefix(ec.prefix), etcd.WithRequestTimeout(reqTimeout))
}

// addNode makes node id on members ms without starting it.
func (ec *ecluster) addNode(id string, ms ...int) *electortest.Node {
	return ec.AddNode(id, ec.open(ms...))
}

// TestElectorQuorumLoss: a baton leader whose client reaches only member 0
// of three, with a contender on all three and a Runner running a 1s job on
// whoever leads. Members 1 and 2 stop: the leader cannot renew and steps
// down at its deadline with ErrLeaseExpired; for the whole outage nobody is
// Valid and no fenced write or run is accepted (degraded mode). After the
// members restart exactly one node leads, under a higher token, and it
// catches up the periods that came due during the outage.
func TestElectorQuorumLoss(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	c := etcdtest.StartCluster(t, 3)
	ec := newECluster(t, c)
	ec.Runner = true
	a := ec.addNode("a", 0)
	b := ec.addNode("b", 0, 1, 2)
	observer := ec.open(0, 1, 2)
	defer observer.Close()

	first := ec.LeadFirst(a, b) // periods run; the others watch a renew

	c.Stop(1)
	c.Stop(2)
	lost := time.Now()
	ended := a.WaitEnded(first, timing.Lease+2*timing.Slack)
	a.CheckSteppedDown(first, ended)
	t.Logf("a stepped down %v after the second member had stopped", ended.Sub(lost).Round(time.Millisecond))

	// The outage lasts well beyond lease + 2e: had anything been able to
	// take over, it would have.
	s := electortest.Sample(ec.Nodes(), 10*time.Millisecond)
	outage := first.Term.Deadline()
	// baton status says so (see TestStatusEtcdQuorumLoss in cmd/baton): a
	// read without a quorum, made during the outage (it waits out the
	// request timeout).
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := observer.Get(ctx, electortest.Name)
		got <- err
	}()
	time.Sleep(2 * timing.Safe())
	n, valid := s.Halt()
	outageEnd := time.Now()
	t.Logf("outage: Valid() of both nodes sampled %d times over %v, true in %d samples", n, outageEnd.Sub(outage).Round(time.Millisecond), len(valid))
	if len(valid) > 0 {
		t.Errorf("a node was Valid without a quorum: %v", valid)
	}
	applied, _ := ec.Res.Applied(context.Background())
	for _, w := range applied {
		if !w.At.Before(outage) {
			t.Errorf("write by %s with token %d accepted at %v, during the outage", w.Node, w.Token, w.At.Format("15:04:05.000"))
		}
	}
	for _, node := range ec.Nodes() {
		for _, r := range node.Terms() {
			if r.Won.After(outage) {
				t.Errorf("%s won term %d at %v, during the outage", node.ID, r.Term.Token(), r.Won.Format("15:04:05.000"))
			}
		}
	}
	if err := <-got; !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Get without a quorum: %v, want ErrUnavailable", err)
	}

	if err := c.Restart(1); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now() // a quorum again
	if err := c.Restart(2); err != nil {
		t.Fatal(err)
	}
	leader, next := ec.WaitOneLeader(15 * time.Second)
	t.Logf("after the restart %s leads with token %d, %v after member 1 was ready again (a quorum)", leader.ID, next.Term.Token(), next.Won.Sub(restarted).Round(time.Millisecond))
	if next.Term.Token() <= first.Term.Token() {
		t.Errorf("token after the outage %d, want above %d", next.Term.Token(), first.Term.Token())
	}
	ec.DoneThrough(observer, time.Now(), 10*time.Second)
	ec.Check(observer)
}

// TestElectorPartition3Plus2: five members cut 3+2, with etcd's Raft leader
// on the two-member side, and two baton nodes on each side whose clients
// reach only their side's members. Only the three-member side elects: its
// nodes lead and hand over (a resignation leaves the record free, and even
// a free record is out of the two-member side's reach); the two-member
// side's nodes are never Valid and write nothing. After the partition heals
// there is one leader; when the big side's nodes stop, a node of the small
// side takes over under a higher token: tokens only ever increased.
func TestElectorPartition3Plus2(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	c := etcdtest.StartCluster(t, 5)
	lead := c.Leader(0)
	minority := []int{lead, (lead + 1) % 5}
	majority := []int{(lead + 2) % 5, (lead + 3) % 5, (lead + 4) % 5}
	ec := newECluster(t, c)
	// Stores check their schema with a write: open them while whole.
	big := []*electortest.Node{ec.addNode("m1", majority...), ec.addNode("m2", majority...)}
	small := []*electortest.Node{ec.addNode("s1", minority...), ec.addNode("s2", minority...)}
	observer := ec.open(majority...)
	defer observer.Close()

	c.Partition(majority, minority)
	cut := time.Now()
	t.Logf("partitioned: members %v | %v (etcd leader %d on the small side)", majority, minority, lead)
	smp := electortest.Sample(small, 5*time.Millisecond)
	ec.StartAll()
	leader, first := ec.WaitOneLeader(15 * time.Second)
	if !slices.Contains(big, leader) {
		t.Fatalf("%s leads on the small side", leader.ID)
	}
	t.Logf("%s elected with token %d, %v after the cut", leader.ID, first.Term.Token(), first.Won.Sub(cut).Round(time.Millisecond))
	time.Sleep(timing.Safe())
	leader.Resign(first)
	leader, second := ec.WaitOneLeader(30 * time.Second) // liveness only: a loaded machine slows the resignation's handover, never its safety
	if !slices.Contains(big, leader) {
		t.Fatalf("%s leads on the small side", leader.ID)
	}
	t.Logf("after a resignation %s leads with token %d", leader.ID, second.Term.Token())
	raftBefore := c.Term(majority[0])
	time.Sleep(timing.Safe())

	n, valid := smp.Halt()
	healed := time.Now()
	t.Logf("small side: Valid() sampled %d times over %v, true in %d samples", n, healed.Sub(cut).Round(time.Millisecond), len(valid))
	if len(valid) > 0 {
		t.Errorf("a node on the small side was Valid: %v", valid)
	}
	for _, n := range small {
		if ts := n.Terms(); len(ts) > 0 {
			t.Errorf("%s on the small side won %d terms during the partition", n.ID, len(ts))
		}
	}
	for _, w := range ec.Acked() {
		if w.Node == "s1" || w.Node == "s2" {
			t.Errorf("write by %s with token %d accepted during the partition", w.Node, w.Token)
		}
	}

	c.Heal()
	if err := c.WaitLeader(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	leader, tr := ec.WaitOneLeader(15 * time.Second)
	if tr != second {
		// The heal (or the partition) may cost the leader its term, never
		// safety (ec.Check, and the sampler of two Valid terms): its
		// renewals fail while etcd elects a Raft leader again (the
		// members of the small side come back with higher terms), or
		// while the process is starved (at load 8-20 on two cores a
		// lease of 1.5 s ran out across the heal). Either ends the term
		// at its own deadline, never deposed (nobody may take the record
		// before lease + 2e), and the next term has a higher token. The
		// measured scheduling delay is logged, not required: a starved
		// embedded etcd applies writes late without any one wake-up of
		// this process being late by the lease.
		raftAfter, starved := c.Term(majority[0]), ec.Slack(second.Won, time.Now())-timing.Slack
		t.Logf("after the heal %s leads with token %d; %s's term %d ended: %v (Raft term %d when it was won, %d after the heal; scheduling delay up to %v measured)",
			leader.ID, tr.Term.Token(), second.Term.Node(), second.Term.Token(), second.Term.Err(), raftBefore, raftAfter, starved)
		if !errors.Is(second.Term.Err(), baton.ErrLeaseExpired) || tr.Term.Token() <= second.Term.Token() {
			t.Errorf("after the heal %s leads with token %d; %s's term %d ended with %v, want it kept, or ended by its lease (ErrLeaseExpired) and a higher token next",
				leader.ID, tr.Term.Token(), second.Term.Node(), second.Term.Token(), second.Term.Err())
		}
	}
	// The big side's nodes stop (resigning): the small side's nodes, back
	// in reach of a quorum, take over under a higher token.
	for _, n := range big {
		n.Stop()
	}
	leader, last := ec.WaitOneLeader(15 * time.Second)
	t.Logf("after the heal the big side's nodes stopped; %s leads with token %d", leader.ID, last.Term.Token())
	if !slices.Contains(small, leader) {
		t.Errorf("%s leads, want a node of the small side", leader.ID)
	}
	if last.Term.Token() <= second.Term.Token() {
		t.Errorf("token after the heal %d, want above %d", last.Term.Token(), second.Term.Token())
	}
	ec.Check(observer)
}

// TestElectorLeaderMemberCutOff: three members; the baton leader's client
// reaches only one member, etcd's Raft leader, and that member alone is cut
// off from the other two. Two contenders reach only the other two members.
// The leader steps down at its deadline, its last successful renewal's
// start plus the lease; a contender takes over no sooner than lease + 2e
// after that start (the glossary's T_safe, so the old deadline is strictly
// before the takeover) and within lease + 2e + poll + slack. A Runner runs
// a 1s job throughout: the periods of the handover are each done once.
// After the heal the old leader rejoins as a contender.
func TestElectorLeaderMemberCutOff(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	c := etcdtest.StartCluster(t, 3)
	alone := c.Leader(0)
	rest := []int{(alone + 1) % 3, (alone + 2) % 3}
	ec := newECluster(t, c)
	ec.Runner = true
	a := ec.addNode("a", alone)
	b := ec.addNode("b", rest...)
	cc := ec.addNode("c", rest...)
	observer := ec.open(rest...)
	defer observer.Close()

	first := ec.LeadFirst(a, b, cc) // periods run; the others watch a renew

	c.Partition([]int{alone}, rest)
	cut := time.Now()
	ended := a.WaitEnded(first, timing.Lease+2*timing.Slack)
	a.CheckSteppedDown(first, ended)
	leader, next := ec.WaitOneLeader(timing.Safe() + 10*time.Second)
	if leader == a {
		t.Fatal("a leads again while cut off")
	}
	electortest.CheckCutTakeover(t, timing, first, next, leader, cut, ended, timing.Safe()+timing.Poll+2*ec.Slack(cut, next.Won))
	ec.DoneThrough(observer, time.Now(), 10*time.Second)

	c.Heal()
	if err := c.WaitLeader(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(timing.Safe()) // a reads the record again and contends
	if l, tr := ec.WaitOneLeader(10 * time.Second); tr != next {
		t.Errorf("after the heal %s leads with token %d, want %s to keep token %d", l.ID, tr.Term.Token(), leader.ID, next.Term.Token())
	}
	ec.DoneThrough(observer, time.Now(), 10*time.Second)
	ec.Check(observer)
}
