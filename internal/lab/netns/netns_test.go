package netns_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/lab/netns"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
	"github.com/batonhq/baton/store/postgres"
)

// TestMain lets the test binary be a tiny server or client inside a host:
// with NETNS_TEST_LISTEN=ADDR it answers "ok" to every connection; with
// NETNS_TEST_DIAL=ADDR it exits 0 if it got "ok" from ADDR within a
// second.
func TestMain(m *testing.M) {
	if addr := os.Getenv("NETNS_TEST_LISTEN"); addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("listening")
		for {
			c, err := l.Accept()
			if err != nil {
				os.Exit(1)
			}
			io.WriteString(c, "ok")
			c.Close()
		}
	}
	if os.Getenv("NETNS_TEST_HOLD") == "1" {
		// Make a net with a process in it, say its namespaces, and wait
		// to be interrupted.
		nt, err := netns.New("a", "b")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		nt.Start(nt.Hosts()[0].Command("sleep", "60"))
		fmt.Println(nt.Hosts()[0].NS(), nt.Hosts()[1].NS())
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	if os.Getenv("NETNS_TEST_ETCD_MEMBER") == "1" {
		if err := netns.EtcdMemberMain(context.Background(), os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if u := os.Getenv("NETNS_TEST_STORE"); u != "" {
		// Open the store at u and write and read a run: exit 0 if it works.
		timeout, err := time.ParseDuration(os.Getenv("NETNS_TEST_TIMEOUT"))
		if err != nil {
			timeout = 20 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var st store.Store
		if strings.HasPrefix(u, "etcd://") {
			st, err = etcd.OpenURL(ctx, u)
		} else {
			st, err = postgres.Open(ctx, u)
		}
		if err == nil {
			_, err = st.EnsureJob(ctx, store.Job{Name: "netns-test", Schedule: "test"})
			st.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if addr := os.Getenv("NETNS_TEST_DIAL"); addr != "" {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			os.Exit(1)
		}
		c.SetDeadline(time.Now().Add(time.Second))
		b, _ := io.ReadAll(c)
		if string(b) != "ok" {
			os.Exit(1)
		}
		os.Exit(0)
	}
	// The parallel tests (faults on their own hosts, the PostgreSQL and
	// etcd hosts) mostly wait on real time: outside CI all three at once.
	if !testenv.Long() {
		testenv.DefaultParallel(4)
	}
	os.Exit(testenv.Run(m))
}

// reach reports whether from can open a connection to the server on to.
func reach(t *testing.T, from, to *netns.Host) bool {
	t.Helper()
	cmd := from.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "NETNS_TEST_DIAL="+to.Addr()+":7000")
	return cmd.Run() == nil
}

func TestNetFaults(t *testing.T) {
	t.Parallel() // a Net of its own
	nt := netns.NewT(t, "a", "b", "c")
	a, b, c := nt.Host("a"), nt.Host("b"), nt.Host("c")
	for _, h := range nt.Hosts() {
		srv := h.Command(os.Args[0])
		srv.Env = append(os.Environ(), "NETNS_TEST_LISTEN="+h.Addr()+":7000")
		out, err := srv.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := nt.Start(srv); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len("listening"))
		if _, err := io.ReadFull(out, buf); err != nil {
			t.Fatalf("server on %s: %v", h.Name(), err)
		}
	}
	// check tries the pairs of a step at once: a pair that must not reach
	// waits out its dial's timeout (a second), one after the other they
	// took most of the test's 9 s.
	check := func(step string, want map[[2]*netns.Host]bool) {
		t.Helper()
		got := make(map[[2]*netns.Host]bool, len(want))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for pair, ok := range want {
			wg.Go(func() {
				r := reach(t, pair[0], pair[1])
				for try := 0; ok && !r && try < 3; try++ {
					r = reach(t, pair[0], pair[1]) // a link just up, or a slow machine
				}
				mu.Lock()
				got[pair] = r
				mu.Unlock()
			})
		}
		wg.Wait()
		for pair, ok := range want {
			if got[pair] != ok {
				t.Errorf("%s: %s reaches %s = %v, want %v", step, pair[0].Name(), pair[1].Name(), got[pair], ok)
			}
		}
	}
	check("connected", map[[2]*netns.Host]bool{{a, b}: true, {b, a}: true, {c, a}: true})

	if err := nt.Partition([]*netns.Host{a}, []*netns.Host{b}); err != nil {
		t.Fatal(err)
	}
	check("a|b", map[[2]*netns.Host]bool{{a, b}: false, {b, a}: false, {c, a}: true, {c, b}: true})
	if err := nt.Heal(); err != nil {
		t.Fatal(err)
	}
	check("healed", map[[2]*netns.Host]bool{{a, b}: true, {b, a}: true})

	// One way: a drops what b sends. TCP needs both ways, so neither side
	// can connect to the other; c still reaches a.
	if err := nt.Drop([]*netns.Host{b}, a); err != nil {
		t.Fatal(err)
	}
	check("a drops b", map[[2]*netns.Host]bool{{b, a}: false, {a, b}: false, {c, a}: true})
	nt.Heal()

	if err := nt.LinkDown(a); err != nil {
		t.Fatal(err)
	}
	check("a's link down", map[[2]*netns.Host]bool{{c, a}: false, {a, c}: false, {b, c}: true})
	nt.Heal()
	check("link up", map[[2]*netns.Host]bool{{c, a}: true})

	if err := nt.Loss(a, 100); err != nil {
		t.Fatal(err)
	}
	check("a loses 100%", map[[2]*netns.Host]bool{{c, a}: false, {b, c}: true})
	if err := nt.Loss(a, 0); err == nil {
		t.Error("Loss 0% was accepted")
	}
	nt.Heal()
	check("healed again", map[[2]*netns.Host]bool{{c, a}: true})
}

// The test subnet exists only inside the Net: the bridge has no address,
// and the root namespace gains no route or link.
func TestNetStaysInside(t *testing.T) {
	netns.RequireT(t)
	before, err := exec.Command("ip", "-o", "link").Output()
	if err != nil {
		t.Fatal(err)
	}
	nt := netns.NewT(t, "a")
	after, _ := exec.Command("ip", "-o", "link").Output()
	if len(strings.Split(string(after), "\n")) != len(strings.Split(string(before), "\n")) {
		t.Errorf("the root namespace gained links:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	routes, _ := exec.Command("ip", "route").Output()
	if strings.Contains(string(routes), "10.231.") {
		t.Errorf("the root namespace has a route to the test subnet:\n%s", routes)
	}
	out, err := exec.Command("ip", "netns", "exec", nt.Hosts()[0].NS(), "ip", "route").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "default") {
		t.Errorf("a host has a default route:\n%s", out)
	}
}

// Close removes every namespace, and a Net of a process that died is
// removed by the next New.
func TestNetCleanup(t *testing.T) {
	netns.RequireT(t)
	nt, err := netns.New("a", "b")
	if err != nil {
		t.Fatal(err)
	}
	sleep := nt.Hosts()[0].Command("sleep", "60")
	if err := nt.Start(sleep); err != nil {
		t.Fatal(err)
	}
	ns := nt.Hosts()[0].NS()
	nt.Close()
	if sleep.ProcessState == nil {
		t.Error("Close left the host's process running")
	}
	names, err := netns.List()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, ns) {
		t.Fatalf("Close left namespace %s", ns)
	}

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("batonnet-%d-1-h0", dead.Process.Pid)
	if out, err := exec.Command("ip", "netns", "add", stale).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", stale).Run() })
	nt = netns.NewT(t, "a")
	names, _ = netns.List()
	if slices.Contains(names, stale) {
		t.Fatalf("New left the namespace %s of a dead process", stale)
	}
	nt.Close()
}

// storeWorks reports whether a process on h can use the store at url
// within timeout.
func storeWorks(t *testing.T, h *netns.Host, url string, timeout time.Duration) bool {
	t.Helper()
	cmd := h.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "NETNS_TEST_STORE="+url, "NETNS_TEST_TIMEOUT="+timeout.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("store at %s from %s: %v: %s", url, h.Name(), err, out)
	}
	return err == nil
}

// storeServes reports whether the store at url serves h within a few
// tries: an etcd call fails while the members elect a leader.
func storeServes(t *testing.T, h *netns.Host, url string) bool {
	t.Helper()
	for try := 0; try < 5; try++ {
		if storeWorks(t, h, url, 20*time.Second) {
			return true
		}
	}
	return false
}

// Real etcd member processes, one per host: a client on another host uses
// them, a majority survives a killed member, and the member restarts on
// its data.
func TestEtcdMembers(t *testing.T) {
	t.Parallel() // a Net of its own
	nt := netns.NewT(t, "etcd-0", "etcd-1", "etcd-2", "client")
	members := nt.Hosts()[:3]
	e, err := netns.StartEtcd(nt, members, []string{os.Args[0]}, []string{"NETNS_TEST_ETCD_MEMBER=1"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	client := nt.Host("client")
	if !storeServes(t, client, e.URL()) {
		t.Fatal("the client cannot use the cluster")
	}
	e.Kill(0)
	// The killed member may have been the raft leader: the other two
	// elect one within an election timeout or two, and a call in between
	// fails ("leader changed"), so try a few times.
	if !storeServes(t, client, e.URL()) {
		t.Fatal("2 of 3 members do not serve")
	}
	if err := e.Restart(0); err != nil {
		t.Fatal(err)
	}
	// Member 0 alone in a minority: it cannot serve a write.
	if err := nt.Partition(members[:1], append(members[1:3:3], client)); err != nil {
		t.Fatal(err)
	}
	if !storeServes(t, client, "etcd://"+e.Endpoints()[1]) {
		t.Fatal("the majority side does not serve")
	}
}

// A PostgreSQL server on its own host serves a client on another.
func TestPostgresHost(t *testing.T) {
	t.Parallel() // a Net of its own
	nt := netns.NewT(t, "pg", "client")
	p, err := netns.StartPostgres(nt, nt.Host("pg"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !storeWorks(t, nt.Host("client"), p.URL(), 20*time.Second) {
		t.Fatal("the client cannot use the server")
	}
	if err := nt.Partition([]*netns.Host{nt.Host("pg")}, []*netns.Host{nt.Host("client")}); err != nil {
		t.Fatal(err)
	}
	if storeWorks(t, nt.Host("client"), p.URL(), 3*time.Second) {
		t.Fatal("the client used the server across a partition")
	}
	nt.Heal()
	// Killed (a crash) and started again on its data.
	p.Kill()
	if storeWorks(t, nt.Host("client"), p.URL(), 3*time.Second) {
		t.Fatal("the client used a killed server")
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if !storeWorks(t, nt.Host("client"), p.URL(), 20*time.Second) {
		t.Fatal("the client cannot use the restarted server")
	}
}

// An interrupted test run (SIGINT, SIGTERM) removes its namespaces before
// it exits.
func TestNetInterrupted(t *testing.T) {
	netns.RequireT(t)
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "NETNS_TEST_HOLD=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var a, b string
		if _, err := fmt.Fscan(out, &a, &b); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the holding process said nothing: %v", err)
		}
		cmd.Process.Signal(sig)
		cmd.Wait()
		names, err := netns.List()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names, a) || slices.Contains(names, b) {
			t.Fatalf("%v left namespaces: %v", sig, names)
		}
	}
}
