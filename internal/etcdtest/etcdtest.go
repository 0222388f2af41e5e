// Package etcdtest starts real etcd members inside the test process, for the
// etcd store backend's tests and benchmarks.
//
// Members are go.etcd.io/etcd/server/v3/embed servers on 127.0.0.1 free
// ports with temporary data directories. Their heartbeat and election
// timeouts are short (50ms, 500ms) so that a lost quorum is noticed within
// about a second, and they log only errors.
//
// Peer traffic goes through small TCP proxies that the test controls: every
// member advertises a peer URL that points at its own proxy, and each proxy
// reads the first request of every connection to learn which member is
// calling (rafthttp sends the caller's peer URLs in the X-PeerURLs header).
// Partition cuts the connections between two groups of members and refuses
// new ones until Heal; during a partition it also refuses connections whose
// caller is unknown (probes, version checks), because HTTP keep-alive could
// reuse them for raft messages. Client traffic does not go through the proxies: a
// client connected to a member on the minority side reaches that member and
// sees it lose its leader.
//
// Nothing here is for production: members write without fsync, except
// those of StartDurable (for benchmarks).
package etcdtest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/internal/testport"
)

// Timing of every member. ElectionTimeout is also how long a member that
// lost its quorum may still believe it has a leader.
const (
	HeartbeatInterval = 50 * time.Millisecond
	ElectionTimeout   = 500 * time.Millisecond
)

// startTimeout bounds how long a member may take to become ready.
const startTimeout = 30 * time.Second

// Cluster is a set of embedded etcd members. Its methods are safe for use by
// one test goroutine at a time (they are not meant to race each other).
type Cluster struct {
	dir     string // parent of the members' data dirs; removed by Close
	token   string // initial cluster token
	initial string // initial-cluster flag value
	members []*member

	fsync     bool                // members write with fsync (StartDurable)
	configure func(*embed.Config) // StartClusterWith's; nil: none

	mu     sync.Mutex
	groups []int // partition group per member; 0 = connected to all
	closed bool
}

type member struct {
	name      string
	dir       string
	clientURL url.URL // where clients connect (no proxy)
	peerURL   url.URL // where the member listens for peers
	proxyURL  url.URL // what the member advertises to peers: its proxy (durable: peerURL)
	proxy     *proxy
	etcd      *embed.Etcd // nil while stopped
}

// StartCluster starts an n-member cluster (n is 1, 3 or 5) for the test,
// waits until it has a leader, and stops it when the test ends. If the
// members cannot start, the test ends through testenv.Require: skipped,
// or failed when BATON_REQUIRE lists etcd.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c, err := Start(n)
	if err != nil {
		testenv.Require(t, "etcd", err.Error())
	}
	t.Cleanup(c.Close)
	return c
}

// StartClusterWith is StartCluster with configure applied to every
// member's configuration last, at every start: for a test of a server
// setting (authentication tokens, compaction) the other tests do not need.
func StartClusterWith(t testing.TB, n int, configure func(*embed.Config)) *Cluster {
	t.Helper()
	c, err := start(n, false, configure)
	if err != nil {
		testenv.Require(t, "etcd", err.Error())
	}
	t.Cleanup(c.Close)
	return c
}

// Start starts an n-member cluster (n is 1, 3 or 5) and waits until it has
// a leader. The caller must Close it. It is StartCluster for TestMain and
// other places without a testing.TB.
func Start(n int) (*Cluster, error) { return start(n, false, nil) }

// StartDurable is Start with members that fsync their writes and talk to
// each other directly, as a production cluster does: for benchmarks whose
// figures must include the cost of durable writes and no test proxy's. Its
// members cannot be partitioned (Partition panics).
func StartDurable(n int) (*Cluster, error) { return start(n, true, nil) }

// startAttempts bounds start's tries of fresh ports.
const startAttempts = 5

// start starts a cluster, again on fresh ports when a member's port was
// taken between its choice and etcd's bind (another cluster's member may
// take a port just released, and before testport any process's outgoing
// connection could: with
// sixteen of store/etcd's clusters starting side by side it happened in
// two suite runs of five).
func start(n int, fsync bool, configure func(*embed.Config)) (*Cluster, error) {
	for attempt := 1; ; attempt++ {
		c, err := startOnce(n, fsync, configure)
		if err == nil || attempt == startAttempts || !addrInUse(err) {
			return c, err
		}
	}
}

// addrInUse reports whether err is a bind's "address already in use".
// embed's errors do not always wrap the listener's, so the text counts
// too.
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

func startOnce(n int, fsync bool, configure func(*embed.Config)) (*Cluster, error) {
	if n != 1 && n != 3 && n != 5 {
		return nil, fmt.Errorf("etcdtest: a cluster has 1, 3 or 5 members, not %d", n)
	}
	dir, err := os.MkdirTemp("", "baton-etcdtest-")
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	c := &Cluster{dir: dir, token: "baton-" + filepath.Base(dir), groups: make([]int, n), fsync: fsync, configure: configure}
	// Hold every port while choosing, so that no two choices collide; the
	// member ports are released just before etcd binds them. They lie
	// below the ephemeral range, so that no outgoing connection takes a
	// stopped member's port before its Restart.
	var held []net.Listener
	pick := func() (url.URL, error) {
		l, err := testport.Listen()
		if err != nil {
			return url.URL{}, err
		}
		held = append(held, l)
		return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
	}
	var initial []string
	for i := 0; i < n; i++ {
		m := &member{name: fmt.Sprintf("m%d", i), dir: filepath.Join(dir, fmt.Sprintf("m%d", i))}
		if m.clientURL, err = pick(); err == nil {
			m.peerURL, err = pick()
		}
		if err != nil {
			closeAll(held)
			c.Close()
			return nil, fmt.Errorf("etcdtest: choosing ports: %w", err)
		}
		m.proxyURL = m.peerURL
		if !fsync {
			pl, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				closeAll(held)
				c.Close()
				return nil, fmt.Errorf("etcdtest: proxy listener: %w", err)
			}
			m.proxyURL = url.URL{Scheme: "http", Host: pl.Addr().String()}
			m.proxy = newProxy(c, i, pl, m.peerURL.Host)
		}
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.proxyURL.String())
	}
	c.initial = strings.Join(initial, ",")
	closeAll(held)
	for i := range c.members {
		if err := c.startMember(i); err != nil {
			c.Close()
			return nil, err
		}
	}
	for i := range c.members {
		if err := c.waitReady(i); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.WaitLeader(startTimeout); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func closeAll(ls []net.Listener) {
	for _, l := range ls {
		l.Close()
	}
}

func (c *Cluster) config(i int) *embed.Config {
	m := c.members[i]
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenPeerUrls = []url.URL{m.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{m.proxyURL}
	cfg.ListenClientUrls = []url.URL{m.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{m.clientURL}
	cfg.InitialCluster = c.initial
	cfg.InitialClusterToken = c.token
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.TickMs = uint(HeartbeatInterval / time.Millisecond)
	cfg.ElectionMs = uint(ElectionTimeout / time.Millisecond)
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(quietLogger())
	cfg.UnsafeNoFsync = !c.fsync
	if c.fsync {
		// Benchmarks: etcd's own default timings, which ride out a loaded
		// machine, and the periodic compaction a production cluster runs
		// (without it every renewal's revision is kept until the space
		// quota is reached).
		cfg.TickMs, cfg.ElectionMs = 100, 1000
		cfg.AutoCompactionMode = "periodic"
		cfg.AutoCompactionRetention = "1m"
	}
	cfg.EnableGRPCGateway = false
	if c.configure != nil {
		c.configure(cfg)
	}
	return cfg
}

func (c *Cluster) startMember(i int) error {
	e, err := embed.StartEtcd(c.config(i))
	if err != nil {
		return fmt.Errorf("etcdtest: starting member %d: %w", i, err)
	}
	c.members[i].etcd = e
	return nil
}

func (c *Cluster) waitReady(i int) error {
	e := c.members[i].etcd
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("etcdtest: member %d failed: %v", i, err)
	case <-time.After(startTimeout):
		return fmt.Errorf("etcdtest: member %d not ready within %v", i, startTimeout)
	}
}

// Len returns the number of members.
func (c *Cluster) Len() int { return len(c.members) }

// ClientURL returns member i's client URL, such as "http://127.0.0.1:41234".
func (c *Cluster) ClientURL(i int) string { return c.members[i].clientURL.String() }

// Endpoint returns member i's client address as host:port.
func (c *Cluster) Endpoint(i int) string { return c.members[i].clientURL.Host }

// Endpoints returns every member's client address as host:port.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for i := range c.members {
		eps = append(eps, c.Endpoint(i))
	}
	return eps
}

// Running reports whether member i is running.
func (c *Cluster) Running(i int) bool { return c.members[i].etcd != nil }

// Stop stops member i gracefully; its data dir and ports are kept for
// Restart.
func (c *Cluster) Stop(i int) {
	m := c.members[i]
	if m.etcd == nil {
		return
	}
	m.etcd.Close()
	m.etcd = nil
}

// Restart starts the stopped member i again with the same data dir and
// ports, and waits until it is ready, which needs a quorum of members to be
// running and connected.
func (c *Cluster) Restart(i int) error {
	if c.members[i].etcd != nil {
		return fmt.Errorf("etcdtest: member %d is running", i)
	}
	if err := c.startMember(i); err != nil {
		return err
	}
	return c.waitReady(i)
}

// Leader returns the index of the member that running member i believes is
// the leader, or -1 if it knows none.
func (c *Cluster) Leader(i int) int {
	e := c.members[i].etcd
	if e == nil {
		return -1
	}
	lead := e.Server.Leader()
	for j, m := range c.members {
		if m.etcd != nil && m.etcd.Server.MemberID() == lead {
			return j
		}
	}
	return -1
}

// Term returns the Raft term that running member i is in (0 when it is
// stopped): a term that changed across a fault means the members elected
// a leader again, even if they chose the same one.
func (c *Cluster) Term(i int) uint64 {
	e := c.members[i].etcd
	if e == nil {
		return 0
	}
	return e.Server.Term()
}

// WaitLeader waits until every running member knows the same leader.
func (c *Cluster) WaitLeader(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		lead, agree := -1, true
		for i, m := range c.members {
			if m.etcd == nil {
				continue
			}
			l := c.Leader(i)
			if l < 0 || (lead >= 0 && l != lead) {
				agree = false
				break
			}
			lead = l
		}
		if agree && lead >= 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcdtest: no leader agreed on within %v", timeout)
		}
		time.Sleep(HeartbeatInterval)
	}
}

// Partition cuts peer traffic between every member of groupA and every
// member of groupB: open connections between them are closed and new ones
// refused until Heal. Members in neither group stay connected to all.
func (c *Cluster) Partition(groupA, groupB []int) {
	c.mu.Lock()
	for i := range c.groups {
		c.groups[i] = 0
	}
	for _, i := range groupA {
		c.groups[i] = 1
	}
	for _, i := range groupB {
		c.groups[i] = 2
	}
	c.mu.Unlock()
	for _, m := range c.members {
		if m.proxy == nil {
			panic("etcdtest: the members of a durable cluster talk directly and cannot be partitioned")
		}
		m.proxy.cut()
	}
}

// Heal ends a partition: proxies accept connections between all members
// again.
func (c *Cluster) Heal() {
	c.mu.Lock()
	for i := range c.groups {
		c.groups[i] = 0
	}
	c.mu.Unlock()
}

// blocked reports whether traffic from member a to member b is cut.
//
// An unknown caller (a == -1) is blocked whenever b is in a partition
// group: its connection's first request did not name the caller (a
// prober's GET /raft/probing, a GET /version), and Go's HTTP keep-alive
// may later reuse that connection for raft messages, since rafthttp's
// prober shares the pipeline's transport. Letting such connections through
// leaked raft traffic across the partition.
func (c *Cluster) blocked(a, b int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	gb := c.groups[b]
	if a < 0 {
		return gb != 0
	}
	ga := c.groups[a]
	return ga != 0 && gb != 0 && ga != gb
}

// member returns the index of the member that advertises peer URL u, or -1.
func (c *Cluster) memberByPeerURL(u string) int {
	for i, m := range c.members {
		if m.proxyURL.String() == strings.TrimSpace(u) {
			return i
		}
	}
	return -1
}

// Close stops every member and proxy and removes the data dirs.
func (c *Cluster) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	// Hard-stop every member first: a graceful stop of the leader would
	// try to hand leadership to a member that is stopping too, and wait.
	var wg sync.WaitGroup
	for _, m := range c.members {
		if m.etcd == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.etcd.Server.HardStop()
			m.etcd.Close()
			m.etcd = nil
		}()
	}
	wg.Wait()
	for _, m := range c.members {
		if m.proxy != nil {
			m.proxy.close()
		}
	}
	os.RemoveAll(c.dir)
}

// maxHeader bounds the request head the proxy reads to identify a caller.
const maxHeader = 64 << 10
