// Package netns makes test hosts out of Linux network namespaces, for
// tests and drills that need a real network with real faults: cut links,
// partitions, one-way loss, random loss.
//
// A Net is one bridge living in a namespace of its own and N hosts, each a
// namespace with one veth interface on that bridge and an address from a
// private test subnet (10.231.0.0/24). The subnet exists only inside those
// namespaces: the bridge has no address, is never attached to a real
// interface, and no route or NAT is added anywhere, so every packet stays
// between the Net's own hosts. Two Nets are two bridges in two namespaces
// and never see each other, even with the same addresses.
//
// Processes start in a host with Host.Command (ip netns exec). Faults are
// nftables rules on the receiver's input hook (Partition, Drop, Loss) and
// the host's link taken down on the bridge (LinkDown); tc netem is not
// needed. Close kills every process the Net started and deletes every
// namespace, link and rule: the namespaces carry the creating process's
// pid, and New first removes those of processes that no longer run (a test
// binary killed before its cleanup). A SIGINT or SIGTERM during a Net's
// life closes it before the process exits.
//
// Linux only: elsewhere Available says so, and New fails with it.
// It needs root, the ip command and nft (Debian's nftables package):
// Available says what is missing, and RequireT skips a test (or fails it
// when BATON_REQUIRE lists "netns").
package netns

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
)

// Component is the name BATON_REQUIRE uses for network namespaces.
const Component = "netns"

// Subnet is the private test subnet of every Net's hosts: host i has
// 10.231.0.(i+1).
const Subnet = "10.231.0.0/24"

// MaxHosts bounds the number of hosts of one Net.
const MaxHosts = 32

// namePrefix starts the name of every namespace this package makes:
// "batonnet-PID-SEQ-br" and "batonnet-PID-SEQ-hI".
const namePrefix = "batonnet-"

// Available returns nil if this process can make a Net: it runs as root
// and has ip and nft. Otherwise the error names what is missing and how to
// get it.
func Available() error {
	if err := linuxOnly(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root (run the tests as root)")
	}
	for _, c := range []struct{ bin, pkg string }{{"ip", "iproute2"}, {"nft", "nftables"}} {
		if _, err := exec.LookPath(c.bin); err != nil {
			return fmt.Errorf("no %s command (apt-get install %s)", c.bin, c.pkg)
		}
	}
	return nil
}

// RequireT ends the test through testenv.Require when Available fails: a
// skip, or a failure when BATON_REQUIRE lists "netns".
func RequireT(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		testenv.Require(t, Component, err.Error())
	}
}

// Net is a bridge and its hosts. Its methods are safe for concurrent use.
type Net struct {
	id     string // batonnet-PID-SEQ
	bridge string // the bridge's namespace
	hosts  []*Host

	mu      sync.Mutex
	procs   map[*exec.Cmd]struct{}
	closed  bool
	stopSig chan struct{}
}

// Host is one network namespace on a Net's bridge.
type Host struct {
	net  *Net
	idx  int
	name string // the host's label, e.g. "etcd-0"
	ns   string
	addr string
}

// Name returns the host's label, as given to New.
func (h *Host) Name() string { return h.name }

// NS returns the name of the host's network namespace.
func (h *Host) NS() string { return h.ns }

// Addr returns the host's IPv4 address on the test subnet.
func (h *Host) Addr() string { return h.addr }

var seq struct {
	mu sync.Mutex
	n  int
}

// New makes a Net with one host per label (labels name the hosts in
// errors and histories: "etcd-0", "node-3"). The caller must Close it.
func New(labels ...string) (*Net, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if len(labels) == 0 || len(labels) > MaxHosts {
		return nil, fmt.Errorf("netns: a net has 1 to %d hosts, not %d", MaxHosts, len(labels))
	}
	sweepStale()
	seq.mu.Lock()
	seq.n++
	n := seq.n
	seq.mu.Unlock()
	id := fmt.Sprintf("%s%d-%d", namePrefix, os.Getpid(), n)
	nt := &Net{id: id, bridge: id + "-br", procs: map[*exec.Cmd]struct{}{}, stopSig: make(chan struct{})}
	nt.watchSignals()
	if err := nt.build(labels); err != nil {
		nt.Close()
		return nil, err
	}
	return nt, nil
}

// NewT is New for a test: it ends the test through RequireT without root
// or nft, fails it if the Net cannot be made, and closes the Net when the
// test ends (also when it fails).
func NewT(t testing.TB, labels ...string) *Net {
	t.Helper()
	RequireT(t)
	nt, err := New(labels...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nt.Close)
	return nt
}

func (nt *Net) build(labels []string) error {
	if err := run("ip", "netns", "add", nt.bridge); err != nil {
		return err
	}
	br := []string{"-n", nt.bridge}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "br0", "type", "bridge"},
		{"link", "set", "br0", "up"},
	} {
		if err := run("ip", append(br, args...)...); err != nil {
			return err
		}
	}
	for i, label := range labels {
		h := &Host{net: nt, idx: i, name: label, ns: fmt.Sprintf("%s-h%d", nt.id, i), addr: fmt.Sprintf("10.231.0.%d", i+1)}
		nt.hosts = append(nt.hosts, h)
		if err := run("ip", "netns", "add", h.ns); err != nil {
			return err
		}
		veth := h.veth()
		steps := [][]string{
			append(br, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", h.ns),
			append(br, "link", "set", veth, "master", "br0"),
			append(br, "link", "set", veth, "up"),
			{"-n", h.ns, "link", "set", "lo", "up"},
			{"-n", h.ns, "addr", "add", h.addr + "/24", "dev", "eth0"},
			{"-n", h.ns, "link", "set", "eth0", "up"},
		}
		for _, args := range steps {
			if err := run("ip", args...); err != nil {
				return err
			}
		}
		// Each host gets one nftables table whose input chain holds the
		// faults; Heal flushes it.
		if err := h.nft("add table inet baton\n" +
			"add chain inet baton input { type filter hook input priority 0; policy accept; }\n"); err != nil {
			return err
		}
	}
	return nil
}

// veth is the name of the host's link on the bridge side.
func (h *Host) veth() string { return "vh" + strconv.Itoa(h.idx) }

// Hosts returns the Net's hosts in the order of their labels.
func (nt *Net) Hosts() []*Host { return nt.hosts }

// Host returns the host labelled label, or nil.
func (nt *Net) Host(label string) *Host {
	for _, h := range nt.hosts {
		if h.name == label {
			return h
		}
	}
	return nil
}

// Command returns a command that runs name with args in the host's
// namespace (through ip netns exec). Start it with Net.Start so that Close
// kills it; it gets SIGKILL too if the creating process dies.
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", h.ns, name}, args...)...)
	dieWithParent(cmd)
	return cmd
}

// Start starts cmd (made by Host.Command) and tracks it until Wait or
// Close. The command's own pid is cmd.Process.Pid: ip netns exec execs it.
func (nt *Net) Start(cmd *exec.Cmd) error {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if nt.closed {
		return errors.New("netns: the net is closed")
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	nt.procs[cmd] = struct{}{}
	return nil
}

// Wait waits for cmd (started by Start) and forgets it.
func (nt *Net) Wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	nt.mu.Lock()
	delete(nt.procs, cmd)
	nt.mu.Unlock()
	return err
}

// Partition cuts traffic between every host of a and every host of b, both
// ways, by dropping on each receiver's input hook; other rules stay.
func (nt *Net) Partition(a, b []*Host) error {
	for _, x := range a {
		if err := nt.Drop(b, x); err != nil {
			return err
		}
	}
	for _, y := range b {
		if err := nt.Drop(a, y); err != nil {
			return err
		}
	}
	return nil
}

// Drop makes to drop every packet that comes from one of from: a one-way
// cut, on the receiver's input hook.
func (nt *Net) Drop(from []*Host, to *Host) error {
	if len(from) == 0 {
		return nil
	}
	addrs := make([]string, len(from))
	for i, h := range from {
		addrs[i] = h.addr
	}
	return to.nft(fmt.Sprintf("add rule inet baton input ip saddr { %s } drop\n", strings.Join(addrs, ", ")))
}

// Loss makes h drop pct percent of the packets it receives from the
// other hosts, at random (nftables numgen). pct is 1 to 100.
func (nt *Net) Loss(h *Host, pct int) error {
	if pct < 1 || pct > 100 {
		return fmt.Errorf("netns: loss must be 1 to 100 percent, not %d", pct)
	}
	if pct == 100 {
		return h.nft("add rule inet baton input iifname \"eth0\" drop\n") // numgen's "< 100" is out of its range
	}
	return h.nft(fmt.Sprintf("add rule inet baton input iifname \"eth0\" numgen random mod 100 < %d drop\n", pct))
}

// LinkDown takes h's link on the bridge down: h reaches no other host and
// no host reaches it, as if its cable were pulled.
func (nt *Net) LinkDown(h *Host) error {
	return run("ip", "-n", nt.bridge, "link", "set", h.veth(), "down")
}

// LinkUp brings h's link on the bridge up again and waits (up to two
// seconds) until the link reports its carrier back.
func (nt *Net) LinkUp(h *Host) error {
	if err := run("ip", "-n", nt.bridge, "link", "set", h.veth(), "up"); err != nil {
		return err
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		out, err := exec.Command("ip", "-n", nt.bridge, "-o", "link", "show", h.veth()).Output()
		if err == nil && strings.Contains(string(out), "state UP") {
			return nil
		}
	}
	return nil // the carrier is the kernel's business; callers retry their traffic
}

// Heal removes every fault: it flushes every host's rules and brings every
// link up.
func (nt *Net) Heal() error {
	var errs []error
	for _, h := range nt.hosts {
		errs = append(errs, h.nft("flush chain inet baton input\n"), nt.LinkUp(h))
	}
	return errors.Join(errs...)
}

// Close kills every process the Net started (SIGCONT first, for a stopped
// one), waits for them, and deletes the hosts' and the bridge's namespaces
// with their links and rules. It may be called more than once.
func (nt *Net) Close() {
	nt.mu.Lock()
	if nt.closed {
		nt.mu.Unlock()
		return
	}
	nt.closed = true
	procs := nt.procs
	nt.procs = nil
	nt.mu.Unlock()
	close(nt.stopSig)
	for cmd := range procs {
		if cmd.Process != nil {
			contPid(cmd.Process.Pid)
			cmd.Process.Kill()
		}
	}
	for cmd := range procs {
		cmd.Wait()
	}
	nt.deleteNamespaces()
}

func (nt *Net) deleteNamespaces() {
	for _, h := range nt.hosts {
		killIn(h.ns)
		run("ip", "netns", "del", h.ns)
	}
	killIn(nt.bridge)
	run("ip", "netns", "del", nt.bridge)
}

// watchSignals closes the Net when the process gets SIGINT or SIGTERM
// (an interrupted test run), then exits as the signal would have.
func (nt *Net) watchSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		defer signal.Stop(ch)
		select {
		case s := <-ch:
			nt.Close()
			fmt.Fprintf(os.Stderr, "netns: %v: removed the test network %s\n", s, nt.id)
			signal.Stop(ch)
			p, _ := os.FindProcess(os.Getpid())
			p.Signal(s)
			time.Sleep(time.Second)
			os.Exit(1)
		case <-nt.stopSig:
		}
	}()
}

// killIn kills every process left in namespace ns (one started there
// without Net.Start).
func killIn(ns string) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
			contPid(pid)
			killPid(pid)
		}
	}
}

// sweepStale deletes the namespaces of Nets whose creating process no
// longer runs.
func sweepStale() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], namePrefix) {
			continue
		}
		rest := strings.TrimPrefix(f[0], namePrefix)
		pid, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, '-'), 0)])
		if err != nil || pid <= 0 || pidAlive(pid) {
			continue // unparsable, or its process still runs
		}
		killIn(f[0])
		run("ip", "netns", "del", f[0])
	}
}

// List returns the namespaces of Nets that exist now (this package's
// names only), for tests that check the cleanup.
func List() ([]string, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns list: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], namePrefix) {
			names = append(names, f[0])
		}
	}
	return names, nil
}

func (h *Host) nft(script string) error {
	cmd := exec.Command("ip", "netns", "exec", h.ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("netns: nft in %s (%s): %v: %s", h.name, strings.TrimSpace(script), err, bytes.TrimSpace(out))
	}
	return nil
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("netns: %s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
