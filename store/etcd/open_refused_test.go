package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// A cluster that answers with a refusal (authentication is on and the
// client gives no user, or its user may not touch baton's keys) is not
// unavailable: waiting will not change its answer, and baton run exits
// instead of waiting for it.
func TestOpenRefusedIsNotUnavailable(t *testing.T) {
	testenv.ParallelUnlessLong(t)    // its own cluster
	c := etcdtest.StartCluster(t, 1) // its own: authentication stays on
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := func(user, password string) *clientv3.Client {
		cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second,
			Username: user, Password: password, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		return cli
	}
	admin := client("", "")
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.UserAdd(ctx, "nobody", "nobodypw"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	opts := []etcd.Option{etcd.WithRequestTimeout(2 * time.Second)}
	if _, err := etcd.Open(ctx, c.Endpoints(), opts...); err == nil || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("open without a user: %v, want a refusal, not unavailable", err)
	}
	if _, err := etcd.FromClient(ctx, client("nobody", "nobodypw"), opts...); err == nil || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("open as a user without a role: %v, want a refusal, not unavailable", err)
	} else {
		t.Logf("user without a role: %v", err)
	}
	if s, err := etcd.FromClient(ctx, client("root", "rootpw"), opts...); err != nil {
		t.Errorf("open as root: %v", err)
	} else {
		s.Close()
	}
}
