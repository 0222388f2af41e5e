package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func client(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func put(cli *clientv3.Client, k, v string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := cli.Put(clientv3.WithRequireLeader(ctx), k, v)
	return err
}

func get(t *testing.T, cli *clientv3.Client, k string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, k)
	if err != nil {
		t.Fatalf("get %s: %v", k, err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

func TestStartValidatesSize(t *testing.T) {
	if _, err := Start(2); err == nil {
		t.Fatal("Start(2) succeeded, want an error naming the allowed sizes")
	}
}

func TestSingleMemberStopRestart(t *testing.T) {
	c := StartCluster(t, 1)
	cli := client(t, c.Endpoint(0))
	if err := put(cli, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	c.Stop(0)
	if c.Running(0) {
		t.Fatal("member 0 running after Stop")
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	if got := get(t, cli, "k"); got != "v1" {
		t.Fatalf("after restart k = %q, want v1", got)
	}
}

// TestPartition checks that the proxies really cut peer traffic: the
// isolated member loses its leader and cannot write, the majority keeps
// writing, and after Heal the isolated member catches up.
func TestPartition(t *testing.T) {
	c := StartCluster(t, 3)
	// Isolate a follower so that the majority keeps its leader.
	iso := 0
	if c.Leader(0) == 0 {
		iso = 1
	}
	rest := []int{}
	for i := 0; i < 3; i++ {
		if i != iso {
			rest = append(rest, i)
		}
	}
	c.Partition([]int{iso}, rest)
	isoCli := client(t, c.Endpoint(iso))
	majCli := client(t, c.Endpoint(rest[0]))

	deadline := time.Now().Add(10 * time.Second)
	for c.Leader(iso) >= 0 {
		if time.Now().After(deadline) {
			t.Fatalf("isolated member %d still sees leader %d", iso, c.Leader(iso))
		}
		time.Sleep(HeartbeatInterval)
	}
	if err := put(isoCli, "p", "minority"); err == nil {
		t.Fatal("a write through the isolated member succeeded")
	}
	if err := put(majCli, "p", "majority"); err != nil {
		t.Fatalf("write through the majority: %v", err)
	}
	// A linearizable read through the isolated member must fail too: if
	// it returned the majority's write, raft traffic leaked through a
	// proxy.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if resp, err := isoCli.Get(clientv3.WithRequireLeader(ctx), "p"); err == nil {
		t.Fatalf("a linearizable read through the isolated member succeeded: %v", resp.Kvs)
	}
	c.Heal()
	if err := c.WaitLeader(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := get(t, isoCli, "p"); got != "majority" {
		t.Fatalf("after heal the isolated member reads %q, want majority", got)
	}
}

// TestBlocked pins the proxies' rule, including unknown callers, which the
// 5-member partition test in store/etcd showed can carry raft traffic.
func TestBlocked(t *testing.T) {
	c := &Cluster{groups: make([]int, 4)}
	if c.blocked(-1, 0) || c.blocked(0, 1) {
		t.Fatal("blocked without a partition")
	}
	c.Partition([]int{0, 1}, []int{2})
	tests := []struct {
		from, to int
		want     bool
	}{
		{0, 1, false}, {0, 2, true}, {2, 1, true}, {3, 0, false}, {2, 3, false},
		{-1, 0, true}, {-1, 2, true}, {-1, 3, false},
	}
	for _, tc := range tests {
		if got := c.blocked(tc.from, tc.to); got != tc.want {
			t.Errorf("blocked(%d, %d) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	c.Heal()
	if c.blocked(-1, 0) || c.blocked(0, 2) {
		t.Fatal("blocked after Heal")
	}
}

// A port taken between its choice and etcd's bind is recognised as such
// (start then tries fresh ports); any other failure is not retried.
func TestAddrInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = net.Listen("tcp", l.Addr().String())
	if err == nil || !addrInUse(fmt.Errorf("etcdtest: starting member 0: %w", err)) {
		t.Fatalf("a second bind of %s: %v, not recognised as a port in use", l.Addr(), err)
	}
	if addrInUse(errors.New("etcdtest: member 0 not ready within 20s")) {
		t.Fatal("a member that was not ready was taken for a port in use")
	}
}
