// Package netdrill is the drill's net mode (drill.Config.Net, 'baton
// drill --net'): it implements drill.Lab on test hosts in network
// namespaces (internal/lab/netns), with the store on hosts of its own (etcd
// member processes running an embedded etcd server, or a PostgreSQL
// server), and checks the nodes' histories, the fence's linearizability
// with porcupine (internal/lab/linearize) included.
//
// It is the lab: it links the etcd server, raft and porcupine, and only
// the lab build of baton (go build -tags lab ./cmd/baton) links it. The
// operator's binary refuses --net with a pointer to that build.
//
// What it does not guarantee: net mode needs root, nft and ip (Available
// says why it cannot run); the hosts share one kernel and one
// CLOCK_MONOTONIC, so it exercises the network, not clocks of separate
// machines.
package netdrill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/batonhq/baton/internal/history"
	"github.com/batonhq/baton/internal/lab/drill"
	"github.com/batonhq/baton/internal/lab/linearize"
	"github.com/batonhq/baton/internal/lab/netns"
)

// Lab implements drill.Lab. Its zero value is ready to use.
type Lab struct{}

var (
	_ drill.Lab     = Lab{}
	_ drill.Network = (*netEnv)(nil)
)

// Available says why net mode cannot run on this machine (not root, no
// nft or ip), or returns nil.
func (Lab) Available() error { return netns.Available() }

// EtcdMember runs one etcd member of a net-mode drill on its arguments
// (the hidden 'baton drill etcd-member' of the lab build): see
// netns.EtcdMemberMain.
func (Lab) EtcdMember(ctx context.Context, args []string, stdout io.Writer) error {
	return netns.EtcdMemberMain(ctx, args, stdout)
}

// Check implements drill.Lab: history.Check, then the fence's
// linearizability (linearize.Check); on a violation, history.WriteEvidence
// and the fence's timelines into evidence.
func (Lab) Check(recs []history.Record, due []string, evidence string) (history.Result, error) {
	res := history.Check(recs, due)
	lin := linearize.Check(&res, recs)
	if res.OK() {
		return res, nil
	}
	if err := history.WriteEvidence(evidence, res, recs); err != nil {
		return res, err
	}
	return res, lin.Write(evidence)
}

// URL implements drill.Network.
func (e *netEnv) URL() string { return e.url }

// Command implements drill.Network.
func (e *netEnv) Command(node int, name string, args ...string) *exec.Cmd {
	return e.nodeHosts[node].Command(name, args...)
}

// Start implements drill.Network.
func (e *netEnv) Start(cmd *exec.Cmd) error { return e.nt.Start(cmd) }

// LinkDown implements drill.Network.
func (e *netEnv) LinkDown(node int) error { return e.nt.LinkDown(e.nodeHosts[node]) }

// LinkUp implements drill.Network.
func (e *netEnv) LinkUp(node int) error { return e.nt.LinkUp(e.nodeHosts[node]) }

// netEnv is the test network of a net-mode run: the store's hosts and one
// host per node. It implements drill.Network.
type netEnv struct {
	nt         *netns.Net
	etcd       *netns.Etcd
	pg         *netns.Postgres
	storeHosts []*netns.Host
	nodeHosts  []*netns.Host
	url        string
	scratch    string // the etcd members' data, removed by Close
}

// Start implements drill.Lab: it makes the hosts and starts the store on
// them, with fresh data (etcd's in dir/NAME.etcd).
func (Lab) Start(cfg drill.Config, nodes int, dir, name string) (drill.Network, error) {
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
		return nil, fmt.Errorf("drill --net %q: want %s", cfg.Net, strings.Join(drill.NetStores, ", "))
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
	if err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close implements drill.Network.
func (e *netEnv) Close() {
	if e.pg != nil {
		e.pg.Close()
	}
	e.nt.Close()
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

// Fault implements drill.Network: the beginning (on) or the end of net
// fault f on the node leader.
func (e *netEnv) Fault(f drill.Fault, leader int, on bool) error {
	lh := e.nodeHosts[leader]
	if !on {
		if f == drill.MemberKill {
			if e.etcd != nil {
				return e.etcd.Restart(0)
			}
			return e.pg.Start()
		}
		return e.nt.Heal()
	}
	others := slices.Delete(slices.Clone(e.nodeHosts), leader, leader+1)
	switch f {
	case drill.Partition:
		minority := append([]*netns.Host{lh}, e.storeHosts[:len(e.storeHosts)/2]...)
		majority := append(others, e.storeHosts[len(e.storeHosts)/2:]...)
		return e.nt.Partition(minority, majority)
	case drill.Isolate:
		return e.nt.Partition([]*netns.Host{lh}, e.storeHosts)
	case drill.OneWayContenders:
		for _, s := range e.storeHosts {
			if err := e.nt.Drop(others, s); err != nil {
				return err
			}
		}
		return nil
	case drill.OneWayLeader:
		for _, s := range e.storeHosts {
			if err := e.nt.Drop([]*netns.Host{lh}, s); err != nil {
				return err
			}
		}
		return nil
	case drill.Flap:
		return e.nt.LinkDown(lh)
	case drill.Loss:
		for _, h := range append([]*netns.Host{lh}, e.storeHosts...) {
			if err := e.nt.Loss(h, drill.LossPercent); err != nil {
				return err
			}
		}
		return nil
	case drill.MemberKill:
		if e.etcd != nil {
			e.etcd.Kill(0)
		} else {
			e.pg.Kill()
		}
		return nil
	}
	return fmt.Errorf("drill: %s is not a net fault", f)
}
