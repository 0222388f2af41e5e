package drill

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/history"
	"github.com/batonhq/baton/internal/netns"
	"github.com/batonhq/baton/internal/vcluster"
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

// netEnv is the test network of a net-mode run: the store's hosts and one
// host per node.
type netEnv struct {
	nt         *netns.Net
	etcd       *netns.Etcd
	pg         *netns.Postgres
	storeHosts []*netns.Host
	nodeHosts  []*netns.Host
	url        string
	parent     *history.Recorder // what the drill did to nodes (killed)
	scratch    string            // the etcd members' data, removed by close
}

// startNet makes the hosts and starts the store on them, with fresh data
// (etcd's in dir/NAME.etcd).
func startNet(cfg Config, nodes int, dir, name string) (*netEnv, error) {
	var labels []string
	members := 0
	switch cfg.Net {
	case "etcd3":
		members = 3
	case "etcd5":
		members = 5
	case "postgres":
		labels = append(labels, "pg")
	default:
		return nil, fmt.Errorf("drill --net %q: want %s", cfg.Net, strings.Join(NetStores, ", "))
	}
	for i := range members {
		labels = append(labels, fmt.Sprintf("etcd-%d", i))
	}
	for i := range nodes {
		labels = append(labels, fmt.Sprintf("node-%d", i))
	}
	nt, err := netns.New(labels...)
	if err != nil {
		return nil, err
	}
	e := &netEnv{nt: nt}
	hosts := nt.Hosts()
	e.storeHosts, e.nodeHosts = hosts[:len(hosts)-nodes], hosts[len(hosts)-nodes:]
	if members > 0 {
		if len(cfg.Member) == 0 {
			nt.Close()
			return nil, errors.New("drill: Config.Member must name the etcd member command in net mode")
		}
		mdir := filepath.Join(dir, name+".etcd")
		os.RemoveAll(mdir)
		if err := os.MkdirAll(mdir, 0o755); err != nil {
			nt.Close()
			return nil, err
		}
		e.scratch = mdir
		e.etcd, err = netns.StartEtcd(nt, e.storeHosts, cfg.Member, cfg.MemberEnv, mdir)
		if err == nil {
			e.url = e.etcd.URL()
		}
	} else {
		e.pg, err = netns.StartPostgres(nt, e.storeHosts[0])
		if err == nil {
			e.url = e.pg.URL()
		}
	}
	if err == nil {
		e.parent, err = history.Create(filepath.Join(dir, name+".parent.history"))
	}
	if err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *netEnv) close() {
	if e.pg != nil {
		e.pg.Close()
	}
	e.nt.Close()
	e.parent.Close()
	if e.scratch != "" {
		// The members' data (preallocated write-ahead logs); their logs
		// stay beside the drill's other files.
		logs, _ := filepath.Glob(filepath.Join(e.scratch, "*.log"))
		for _, l := range logs {
			os.Rename(l, e.scratch+"-"+filepath.Base(l))
		}
		os.RemoveAll(e.scratch)
	}
}

// netFault applies the beginning (on) or the end of net fault f to the
// node leader.
func (d *procDrill) netFault(f Fault, leader int, on bool) error {
	e := d.net
	lh := e.nodeHosts[leader]
	if !on {
		if f == MemberKill {
			if e.etcd != nil {
				return e.etcd.Restart(0)
			}
			return e.pg.Start()
		}
		return e.nt.Heal()
	}
	others := slices.Delete(slices.Clone(e.nodeHosts), leader, leader+1)
	switch f {
	case Partition:
		minority := append([]*netns.Host{lh}, e.storeHosts[:len(e.storeHosts)/2]...)
		majority := append(others, e.storeHosts[len(e.storeHosts)/2:]...)
		return e.nt.Partition(minority, majority)
	case Isolate:
		return e.nt.Partition([]*netns.Host{lh}, e.storeHosts)
	case OneWayContenders:
		for _, s := range e.storeHosts {
			if err := e.nt.Drop(others, s); err != nil {
				return err
			}
		}
		return nil
	case OneWayLeader:
		for _, s := range e.storeHosts {
			if err := e.nt.Drop([]*netns.Host{lh}, s); err != nil {
				return err
			}
		}
		return nil
	case Flap:
		return e.nt.LinkDown(lh)
	case Loss:
		for _, h := range append([]*netns.Host{lh}, e.storeHosts...) {
			if err := e.nt.Loss(h, LossPercent); err != nil {
				return err
			}
		}
		return nil
	case MemberKill:
		if e.etcd != nil {
			e.etcd.Kill(0)
		} else {
			e.pg.Kill()
		}
		return nil
	}
	return fmt.Errorf("drill: %s is not a net fault", f)
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
		return d.netFault(f, target, true)
	}}}
	if f == Flap {
		half := time.Duration(p.Lease) * p.Round / 2
		up := true
		for at := begin + half; at < end; at += half {
			acts = append(acts, action{at: at, fault: true, do: func() error {
				lh := d.net.nodeHosts[target]
				if up {
					up = false
					return d.net.nt.LinkUp(lh)
				}
				up = true
				return d.net.nt.LinkDown(lh)
			}})
		}
	}
	acts = append(acts, action{at: end, fault: true, do: func() error {
		if d.cfg.HealAfterTakeover {
			if err := d.awaitTakeover(target); err != nil {
				return err
			}
		}
		return d.netFault(f, target, false)
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
	res := history.Check(recs, due)
	if !res.OK() {
		ev := filepath.Join(d.dir, d.name+".evidence")
		if err := history.WriteEvidence(ev, res, recs); err != nil {
			return &res, err
		}
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
	d.net.parent.Add(history.Record{Kind: history.Killed, Holder: fmt.Sprintf("%s#%d", pr.id, pr.cmd.Process.Pid), At: history.Now()})
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
