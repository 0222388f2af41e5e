package drill

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/history"
	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/schedule"
)

// The faults only net mode (Config.Net) can inject: real network faults
// between test hosts, and a store member killed.
const (
	// Partition splits the hosts in two: the first leader's host with a
	// minority of the store's members (none for PostgreSQL) on one side,
	// the other nodes and the majority on the other.
	Partition Fault = "partition"
	// Isolate cuts the first leader's host off from every store host,
	// both ways; the other nodes still reach it.
	Isolate Fault = "isolate"
	// OneWayContenders makes the store hosts drop what every other node
	// sends: the contenders cannot reach the store, the leader can.
	OneWayContenders Fault = "oneway-contenders"
	// OneWayLeader makes the store hosts drop what the first leader
	// sends: the leader cannot reach the store, the contenders can.
	OneWayLeader Fault = "oneway-leader"
	// Flap takes the first leader's link down and up every lease/2.
	Flap Fault = "flap"
	// Loss makes the store hosts and the first leader's host drop 30% of
	// the packets they receive, at random.
	Loss Fault = "loss"
	// MemberKill kills a store member (etcd member 0, or the PostgreSQL
	// server) and restarts it after the outage.
	MemberKill Fault = "member-kill"
)

// NetFaults lists the faults of net mode only, in the order "--fault all"
// runs them after Faults.
var NetFaults = []Fault{Partition, Isolate, OneWayContenders, OneWayLeader, Flap, Loss, MemberKill}

// LossPercent is the random loss of the Loss fault.
const LossPercent = 30

// NetStores lists the stores of net mode: etcd with 3 or 5 members, one
// PostgreSQL server.
var NetStores = []string{"etcd3", "etcd5", "postgres"}

func isNetFault(f Fault) bool { return slices.Contains(NetFaults, f) }

// Lab is net mode's machinery (Config.Net): test hosts in network
// namespaces, the store's servers on them (etcd member processes running
// an embedded etcd server, or a PostgreSQL server), and the history
// checker's linearizability check (porcupine). Package netdrill
// implements it; the operator's baton binary does not link it (it is
// built with -tags lab only).
type Lab interface {
	// Start makes one host per node and the hosts of cfg.Net's store,
	// and starts the store on them with fresh data (in dir, its files
	// named after name).
	Start(cfg Config, nodes int, dir, name string) (Network, error)
	// Check runs the history checker over recs (history.Check and the
	// fence's linearizability), due being the periods that must each
	// have been accepted exactly once. On a violation it writes the
	// evidence (violations, records, the fence's timelines) into
	// evidence.
	Check(recs []history.Record, due []string, evidence string) (history.Result, error)
}

// Network is the test network of one net-mode run, made by Lab.Start.
// Nodes are numbered from 0 as the drill's nodes are.
type Network interface {
	// URL is the store's URL, reachable from the node hosts.
	URL() string
	// Command returns the command that runs name with args on node's
	// host; Start starts it there.
	Command(node int, name string, args ...string) *exec.Cmd
	Start(cmd *exec.Cmd) error
	// LinkDown and LinkUp cut and restore node's link.
	LinkDown(node int) error
	LinkUp(node int) error
	// Fault applies the beginning (on) or the end of net fault f
	// (NetFaults) to node, the leader.
	Fault(f Fault, node int, on bool) error
	// Close stops the store and removes the hosts.
	Close()
}

// netActs returns the actions of net fault f on the node that leads when
// it begins, from round start for outage rounds: on, off, and for Flap a
// link toggled every lease/2 in between.
func (d *procDrill) netActs(f Fault, start, outage int) []action {
	p := d.p
	begin, end := time.Duration(start)*p.Round, time.Duration(start+outage)*p.Round
	var target int
	acts := []action{{at: begin, fault: true, do: func() error {
		d.mu.Lock()
		target = max(d.leaderLocked(), 0)
		d.target = target
		d.mu.Unlock()
		return d.net.Fault(f, target, true)
	}}}
	if f == Flap {
		half := time.Duration(p.Lease) * p.Round / 2
		up := true
		for at := begin + half; at < end; at += half {
			acts = append(acts, action{at: at, fault: true, do: func() error {
				if up {
					up = false
					return d.net.LinkUp(target)
				}
				up = true
				return d.net.LinkDown(target)
			}})
		}
	}
	acts = append(acts, action{at: end, fault: true, do: func() error {
		if d.cfg.HealAfterTakeover {
			if err := d.awaitTakeover(target); err != nil {
				return err
			}
		}
		return d.net.Fault(f, target, false)
	}})
	return acts
}

// awaitTakeover waits (Config.HealAfterTakeover), at most startTimeout,
// until a node other than target has won the newest term.
func (d *procDrill) awaitTakeover(target int) error {
	deadline := time.Now().Add(startTimeout)
	for {
		d.mu.Lock()
		leader, failed := d.leaderLocked(), d.failed
		d.mu.Unlock()
		switch {
		case failed != nil:
			return failed
		case leader >= 0 && leader != target:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("drill: no node took over from node-%d, cut off from the store, within %v%s", target, startTimeout, d.logTail())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkHistory runs the history checker over the nodes' records and the
// parent's, writes the evidence to DIR/NAME.evidence on a violation, and
// returns the result. The periods due are keys less those pending at the
// end (still open in the run ledger when the drain gave up, which the
// result counts as pending, not lost: the next leader runs them); a due
// period the ledger does not hold, or holds as final, with no accepted
// write is lost.
func (d *procDrill) checkHistory(keys []string, pending map[string]bool) (*history.Result, error) {
	recs, err := history.Read(filepath.Join(d.dir, d.name+".*.history"))
	if err != nil {
		return nil, err
	}
	var due []string
	if d.col == FencingTrigger {
		for _, k := range keys {
			if !pending[k] {
				due = append(due, k)
			}
		}
	}
	ev := filepath.Join(d.dir, d.name+".evidence")
	res, err := d.cfg.Lab.Check(recs, due, ev)
	if err != nil {
		return &res, err
	}
	if !res.OK() {
		d.progressf("drill --net: %s, %s: %d violations; histories and the fence's timeline in %s", d.label, d.col, len(res.Violations), ev)
	}
	return &res, nil
}

// recordKilled records in the parent's history that the drill killed a
// node process.
func (d *procDrill) recordKilled(pr *proc) {
	if d.net == nil || pr.cmd == nil || pr.cmd.Process == nil {
		return
	}
	d.parent.Add(history.Record{Kind: history.Killed, Holder: fmt.Sprintf("%s#%d", pr.id, pr.cmd.Process.Pid), At: history.Now()})
}

// periodKeys returns the ledger keys of the drill's trigger rounds.
func periodKeys(p Params) []string {
	keys := make([]string, len(p.Triggers))
	for i, r := range p.Triggers {
		keys[i] = scheduleKey(p, r)
	}
	return keys
}

func scheduleKey(p Params, r int) string {
	return schedule.Key(vcluster.Calendar{Day: p.Round}.Wall(time.Duration(r) * p.Round))
}
