package etcd_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// hookKV runs before right before the next transaction that puts a key
// is sent, once it is armed.
type hookKV struct {
	clientv3.KV
	armed  atomic.Bool
	before func()
}

func (k *hookKV) Txn(ctx context.Context) clientv3.Txn { return &hookTxn{Txn: k.KV.Txn(ctx), kv: k} }

type hookTxn struct {
	clientv3.Txn
	kv   *hookKV
	puts bool
}

func (t *hookTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }
func (t *hookTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *hookTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		t.puts = t.puts || op.IsPut()
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *hookTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.puts && t.kv.armed.CompareAndSwap(true, false) {
		t.kv.before()
	}
	return t.Txn.Commit()
}

// A suspension that commits between SwapRun's read and its write
// transaction: the write's compare on the job key fails, the check is
// made again on what the transaction read, and the claim is refused.
func TestClaimAfterSuspensionBetweenReadAndWrite(t *testing.T) {
	c := sharedCluster(t)
	prefix := freshPrefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	op := openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
	defer op.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	kv := &hookKV{KV: cli.KV, before: func() {
		if _, err := op.SuspendJob(ctx, store.JobSuspend{Name: "job", Suspend: true, By: "ops@h1"}); err != nil {
			t.Error(err)
		}
	}}
	cli.KV = kv
	s, err := etcd.FromClient(ctx, cli, etcd.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.EnsureJob(ctx, store.Job{Name: "job", Schedule: "every 1h"}); err != nil {
		t.Fatal(err)
	}
	kv.armed.Store(true)
	const period = "2026-01-01T00:00:00Z"
	_, err = s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "job", Period: period, State: store.Running, Token: 1, Holder: "n1", Attempt: 1}})
	if kv.armed.Load() {
		t.Fatal("the hook did not run: no write transaction was sent")
	}
	if !errors.Is(err, store.ErrSuspended) {
		t.Fatalf("a claim whose write came after the suspension: %v, want ErrSuspended", err)
	}
	if _, err := s.GetRun(ctx, "job", period); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused claim wrote its row: %v", err)
	}
}
