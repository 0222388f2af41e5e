package netns

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Timing of the members of an Etcd: etcd's own defaults, which ride out a
// loaded machine. A member that lost its quorum may believe it has a
// leader for up to EtcdElection.
const (
	EtcdHeartbeat = 100 * time.Millisecond
	EtcdElection  = time.Second
)

// Ports of every member on its host.
const (
	EtcdClientPort = 2379
	EtcdPeerPort   = 2380
)

// memberStartTimeout bounds how long a member process may take to say it
// is ready.
const memberStartTimeout = 60 * time.Second

// Etcd is an etcd cluster whose members are processes, one per host, each
// serving clients and peers on its host's address. Its methods are for one
// goroutine at a time.
type Etcd struct {
	nt      *Net
	hosts   []*Host
	command []string // runs EtcdMemberMain with the arguments appended
	env     []string
	dir     string
	initial string

	mu    sync.Mutex
	procs []*exec.Cmd // nil while killed
}

// StartEtcd starts one etcd member on each of hosts (1, 3 or 5) and waits
// until every member is ready (a quorum has a leader). command runs
// EtcdMemberMain with the arguments StartEtcd appends (such as
// {"/path/to/baton", "drill", "etcd-member"}); env is added to its
// environment. Members keep their data in dir, and log to
// dir/NAME.log. Net.Close kills them; Close does too.
func StartEtcd(nt *Net, hosts []*Host, command, env []string, dir string) (*Etcd, error) {
	if n := len(hosts); n != 1 && n != 3 && n != 5 {
		return nil, fmt.Errorf("netns: an etcd cluster has 1, 3 or 5 members, not %d", n)
	}
	if len(command) == 0 {
		return nil, errors.New("netns: StartEtcd needs the member command")
	}
	e := &Etcd{nt: nt, hosts: hosts, command: command, env: env, dir: dir, procs: make([]*exec.Cmd, len(hosts))}
	var initial []string
	for _, h := range hosts {
		initial = append(initial, fmt.Sprintf("%s=http://%s:%d", h.name, h.addr, EtcdPeerPort))
	}
	e.initial = strings.Join(initial, ",")
	ready := make(chan error, len(hosts))
	for i := range hosts {
		go func() { ready <- e.start(i, "new") }()
	}
	var errs []error
	for range hosts {
		errs = append(errs, <-ready)
	}
	if err := errors.Join(errs...); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// start starts member i and waits for its "ready" line.
func (e *Etcd) start(i int, state string) error {
	h := e.hosts[i]
	args := append(e.command[1:len(e.command):len(e.command)],
		"--name", h.name, "--dir", filepath.Join(e.dir, h.name), "--addr", h.addr,
		"--initial-cluster", e.initial, "--state", state)
	cmd := h.Command(e.command[0], args...)
	cmd.Env = append(os.Environ(), e.env...)
	logf, err := os.OpenFile(filepath.Join(e.dir, h.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := e.nt.Start(cmd); err != nil {
		return fmt.Errorf("netns: starting etcd member %s: %w", h.name, err)
	}
	e.mu.Lock()
	e.procs[i] = cmd
	e.mu.Unlock()
	got := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := sc.Scan() && sc.Text() == "ready"
		got <- ok
		io.Copy(io.Discard, out)
	}()
	select {
	case ok := <-got:
		if ok {
			return nil
		}
		return fmt.Errorf("netns: etcd member %s exited before it was ready: %s", h.name, tailFile(filepath.Join(e.dir, h.name+".log")))
	case <-time.After(memberStartTimeout):
		return fmt.Errorf("netns: etcd member %s not ready within %v: %s", h.name, memberStartTimeout, tailFile(filepath.Join(e.dir, h.name+".log")))
	}
}

// Endpoints returns the members' client addresses, host:port each.
func (e *Etcd) Endpoints() []string {
	var eps []string
	for _, h := range e.hosts {
		eps = append(eps, fmt.Sprintf("%s:%d", h.addr, EtcdClientPort))
	}
	return eps
}

// URL returns the store URL of the cluster: etcd://HOST:PORT,...
func (e *Etcd) URL() string { return "etcd://" + strings.Join(e.Endpoints(), ",") }

// Hosts returns the members' hosts.
func (e *Etcd) Hosts() []*Host { return e.hosts }

// Kill kills member i (SIGKILL); its data stays for Restart.
func (e *Etcd) Kill(i int) {
	e.mu.Lock()
	cmd := e.procs[i]
	e.procs[i] = nil
	e.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	e.nt.Wait(cmd)
}

// Restart starts the killed member i again on its data and waits until it
// is ready, which needs a quorum of members running and reachable.
func (e *Etcd) Restart(i int) error {
	e.mu.Lock()
	running := e.procs[i] != nil
	e.mu.Unlock()
	if running {
		return fmt.Errorf("netns: etcd member %s is running", e.hosts[i].name)
	}
	return e.start(i, "existing")
}

// Close kills every member.
func (e *Etcd) Close() {
	for i := range e.hosts {
		e.Kill(i)
	}
}

// EtcdMemberMain is the program of one member process of an Etcd: it
// starts an embedded etcd server (go.etcd.io/etcd/server/v3/embed) on the
// address it is given, prints "ready" on stdout once the member serves,
// and runs until ctx ends or the server fails. It writes without fsync:
// it is for tests and drills. Flags: --name, --dir, --addr,
// --initial-cluster, --state (new or existing).
func EtcdMemberMain(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("etcd-member", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("name", "", "member name")
	dir := fs.String("dir", "", "data directory")
	addr := fs.String("addr", "", "IP address to serve on")
	initial := fs.String("initial-cluster", "", "NAME=PEERURL,...")
	state := fs.String("state", "new", "new or existing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" || *dir == "" || *addr == "" || *initial == "" {
		return errors.New("etcd-member: --name, --dir, --addr and --initial-cluster are required")
	}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("%s:%d", *addr, EtcdPeerPort)}
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("%s:%d", *addr, EtcdClientPort)}
	cfg := embed.NewConfig()
	cfg.Name = *name
	cfg.Dir = *dir
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.InitialCluster = *initial
	cfg.InitialClusterToken = "baton-netns"
	switch *state {
	case "new":
		cfg.ClusterState = embed.ClusterStateFlagNew
	case "existing":
		cfg.ClusterState = embed.ClusterStateFlagExisting
	default:
		return fmt.Errorf("etcd-member: --state %q: want new or existing", *state)
	}
	cfg.TickMs = uint(EtcdHeartbeat / time.Millisecond)
	cfg.ElectionMs = uint(EtcdElection / time.Millisecond)
	cfg.UnsafeNoFsync = true
	cfg.EnableGRPCGateway = false
	cfg.AutoCompactionMode, cfg.AutoCompactionRetention = "periodic", "1m"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("etcd-member %s: %w", *name, err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintln(stdout, "ready")
	case err := <-e.Err():
		return fmt.Errorf("etcd-member %s: %w", *name, err)
	case <-ctx.Done():
		return nil
	}
	select {
	case err := <-e.Err():
		return fmt.Errorf("etcd-member %s: %w", *name, err)
	case <-ctx.Done():
		return nil
	}
}

// tailFile returns the end of a log file, for an error message.
func tailFile(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return strings.TrimSpace(string(b))
}
