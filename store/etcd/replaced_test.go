package etcd_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// A store whose keys are deleted, or deleted and created afresh by another
// process, answers the next write of a handle that opened it with
// ErrReplaced.
func TestStoreReplaced(t *testing.T) {
	c := sharedCluster(t)
	for _, how := range []string{"deleted", "recreated"} {
		t.Run(how, func(t *testing.T) {
			prefix := freshPrefix(t)
			s := openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			rec, err := s.Swap(ctx, store.Swap{Record: acquire("billing", "n1", 1), Event: store.Acquired})
			if err != nil {
				t.Fatal(err)
			}
			id := s.StoreID()
			if _, err := s.Client().Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
				t.Fatal(err)
			}
			if how == "recreated" {
				other := openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
				defer other.Close()
				if other.StoreID() == id {
					t.Fatalf("a recreated store has the id %s of the one it replaced", id)
				}
				if _, err := other.Swap(ctx, store.Swap{Record: acquire("billing", "n2", 1), Event: store.Acquired}); err != nil {
					t.Fatal(err)
				}
			}
			_, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec})
			if !errors.Is(err, store.ErrReplaced) || !store.Permanent(err) {
				t.Fatalf("renewal after the store was %s: %v, want ErrReplaced", how, err)
			}
			t.Logf("%s: %v", how, err)
			if _, err := s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "billing", Period: "p", State: store.Running, Token: 1}, Fenced: true}); !errors.Is(err, store.ErrReplaced) {
				t.Fatalf("fenced ledger write after the store was %s: %v, want ErrReplaced", how, err)
			}
		})
	}
}

// Prefixes: a trailing slash is required, a prefix inside another store's
// and one holding foreign keys are refused, and so is a repeated URL
// parameter.
func TestPrefixValidated(t *testing.T) {
	c := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := etcd.Open(ctx, c.Endpoints(), etcd.WithPrefix("/baton")); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), `"/baton/"`) {
		t.Errorf("prefix without a trailing slash: %v", err)
	}
	outer := freshPrefix(t)
	s := openStore(t, c.Endpoints(), etcd.WithPrefix(outer))
	defer s.Close()
	if _, err := s.Swap(ctx, store.Swap{Record: acquire("x", "n1", 1), Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	inner := outer + "r/x/"
	_, err := etcd.Open(ctx, c.Endpoints(), etcd.WithPrefix(inner))
	if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), outer) {
		t.Errorf("prefix inside another store: %v, want ErrSchema naming %s", err, outer)
	}
	foreign := freshPrefix(t)
	if _, err := s.Client().Put(ctx, foreign+"config/app", "{}"); err != nil {
		t.Fatal(err)
	}
	_, err = etcd.Open(ctx, c.Endpoints(), etcd.WithPrefix(foreign))
	if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "config/app") {
		t.Errorf("prefix with foreign keys: %v, want ErrSchema naming the key", err)
	}
	if _, _, err := etcd.ParseURL("etcd://127.0.0.1:2379?prefix=/a/&prefix=/b/"); err == nil || !strings.Contains(err.Error(), "2 times") {
		t.Errorf("repeated parameter: %v", err)
	}
	if _, err := s.Client().Put(ctx, outer+"e/broken", "not json"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "broken"); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("a record that is not baton's: %v, want ErrCorrupt", err)
	}
	// A job value that is not baton's is damaged data, not another schema,
	// for a read and for every write that reads it first.
	if _, err := s.Client().Put(ctx, outer+"j/broken", "not json"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetJob(ctx, "broken"); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("GetJob of a job that is not baton's: %v, want ErrCorrupt", err)
	}
	if _, err := s.SuspendJob(ctx, store.JobSuspend{Name: "broken", Suspend: true, By: "op"}); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("SuspendJob of a job that is not baton's: %v, want ErrCorrupt", err)
	}
}
