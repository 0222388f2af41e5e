package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// reqTimeout is the request timeout of the cluster tests' stores: the bound
// on how long a call to a cluster without quorum may take.
const reqTimeout = 2 * time.Second

// unavailableWithin bounds how long such a call may take in the tests:
// the request timeout plus slack for a loaded 2-core machine.
const unavailableWithin = reqTimeout + 3*time.Second

func acquire(name, node string, token uint64) store.Record {
	return store.Record{Name: name, Holder: node, Incarnation: node + "-1", Token: token, Lease: 3 * time.Second}
}

func bg(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// expectUnavailable runs call and checks that it fails with ErrUnavailable,
// never ErrConflict, within unavailableWithin.
func expectUnavailable(t *testing.T, what string, call func(ctx context.Context) error) {
	t.Helper()
	start := time.Now()
	err := call(context.Background()) // no deadline: the store's own bound must hold
	took := time.Since(start)
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrConflict) {
		t.Fatalf("%s without quorum: %v, want ErrUnavailable", what, err)
	}
	if took > unavailableWithin {
		t.Fatalf("%s without quorum took %v, want at most %v", what, took.Round(time.Millisecond), unavailableWithin)
	}
	t.Logf("%s without quorum, after %v: %v", what, took.Round(time.Millisecond), err)
}

// eventually retries call until it succeeds or d passes, retrying only
// ErrUnavailable.
func eventually(t *testing.T, what string, d time.Duration, call func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := call(bg(t, reqTimeout))
		if err == nil {
			return
		}
		if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestQuorumLoss stops two of three members: calls through the survivor
// fail with ErrUnavailable within a bounded time, its change feed ends, and
// after the members restart everything written before is intact.
func TestQuorumLoss(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own cluster; mostly waits
	c := etcdtest.StartCluster(t, 3)
	prefix := freshPrefix(t)
	s := openStore(t, []string{c.Endpoint(0)}, etcd.WithPrefix(prefix), etcd.WithRequestTimeout(reqTimeout))
	defer s.Close()

	ctx := bg(t, 10*time.Second)
	rec, err := s.Swap(ctx, store.Swap{Record: acquire("q", "n1", 1), Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "q", Period: "p1", State: store.Running, Token: 1}, Fenced: true}); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	feed := s.WatchChanges(wctx)

	c.Stop(1)
	c.Stop(2)

	expectUnavailable(t, "Swap", func(ctx context.Context) error {
		_, err := s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec})
		return err
	})
	expectUnavailable(t, "Get", func(ctx context.Context) error {
		_, err := s.Get(ctx, "q")
		return err
	})
	expectUnavailable(t, "SwapRun", func(ctx context.Context) error {
		_, err := s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "q", Period: "p2", State: store.Pending}})
		return err
	})
	// The member ends watches that require a leader after three election
	// timeouts without one, and the change feed rides on the handle's
	// etcd watch: it ends with it.
	select {
	case <-drain(feed):
	case <-time.After(10 * time.Second):
		t.Fatal("the change feed did not end within 10s of the quorum loss")
	}

	for _, i := range []int{1, 2} {
		if err := c.Restart(i); err != nil {
			t.Fatal(err)
		}
	}
	var got store.Record
	eventually(t, "Get after restart", 10*time.Second, func(ctx context.Context) (err error) {
		got, err = s.Get(ctx, "q")
		return err
	})
	// The renewal that failed may or may not have been applied (that is
	// what ErrUnavailable means); everything else is as it was.
	if got.Holder != "n1" || got.Token != 1 {
		t.Fatalf("after restart: %+v, want n1 at token 1", got)
	}
	evs, err := s.History(bg(t, reqTimeout), "q", 0, 0)
	if err != nil || len(evs) != 1 || evs[0].Kind != store.Acquired {
		t.Fatalf("History after restart = %+v, %v", evs, err)
	}
	run, err := s.GetRun(bg(t, reqTimeout), "q", "p1")
	if err != nil || run.State != store.Running || run.Token != 1 {
		t.Fatalf("run after restart = %+v, %v", run, err)
	}
	if _, err := s.Swap(bg(t, reqTimeout), store.Swap{Expect: got.Version, Record: got}); err != nil {
		t.Fatalf("renewal after restart: %v", err)
	}
}

// drain returns a channel that closes when ch closes, discarding values.
func drain[T any](ch <-chan T) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		for range ch {
		}
		close(out)
	}()
	return out
}

// TestPartition cuts a five-member cluster into 3+2, with the Raft leader
// on the minority side: a client there cannot write (a baton leader there
// would fail to renew), a client on the majority side takes over, and after
// the partition heals both sides see the majority's write.
func TestPartition(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own cluster; mostly waits
	c := etcdtest.StartCluster(t, 5)
	lead := c.Leader(0)
	minority := []int{lead, (lead + 1) % 5}
	majority := []int{(lead + 2) % 5, (lead + 3) % 5, (lead + 4) % 5}
	endpoints := func(ms []int) []string {
		var eps []string
		for _, i := range ms {
			eps = append(eps, c.Endpoint(i))
		}
		return eps
	}
	prefix := freshPrefix(t)
	small := openStore(t, endpoints(minority), etcd.WithPrefix(prefix), etcd.WithRequestTimeout(reqTimeout))
	defer small.Close()
	big := openStore(t, endpoints(majority), etcd.WithPrefix(prefix), etcd.WithRequestTimeout(reqTimeout))
	defer big.Close()

	rec, err := small.Swap(bg(t, 10*time.Second), store.Swap{Record: acquire("p", "n1", 1), Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	c.Partition(majority, minority)

	expectUnavailable(t, "renewal on the minority side", func(ctx context.Context) error {
		_, err := small.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec})
		return err
	})
	takeover := store.Swap{Expect: rec.Version, Record: acquire("p", "n2", 2), Event: store.TakenOver}
	eventually(t, "takeover on the majority side", 15*time.Second, func(ctx context.Context) error {
		_, err := big.Swap(ctx, takeover)
		if errors.Is(err, store.ErrConflict) {
			// An earlier attempt that reported ErrUnavailable was
			// applied, if the record now says so: read it (again, on
			// a loaded machine, when the read is unavailable).
			cur, gerr := big.Get(ctx, "p")
			if gerr != nil {
				return gerr
			}
			if cur.Holder == "n2" && cur.Token == 2 {
				return nil
			}
			return fmt.Errorf("%w; the record is held by %q at token %d, version %d", err, cur.Holder, cur.Token, cur.Version)
		}
		return err
	})
	expectUnavailable(t, "read on the minority side", func(ctx context.Context) error {
		_, err := small.Get(ctx, "p")
		return err
	})

	c.Heal()
	if err := c.WaitLeader(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]store.Store{"minority": small, "majority": big} {
		var got store.Record
		eventually(t, "Get on the "+name+" side after heal", 15*time.Second, func(ctx context.Context) (err error) {
			got, err = s.Get(ctx, "p")
			return err
		})
		if got.Holder != "n2" || got.Token != 2 {
			t.Fatalf("%s side after heal: %+v, want n2 at token 2", name, got)
		}
		evs, err := s.History(bg(t, reqTimeout), "p", 0, 0)
		if err != nil || len(evs) != 2 || evs[1].Kind != store.TakenOver || evs[1].Seq != 2 {
			t.Fatalf("%s side history after heal = %+v, %v", name, evs, err)
		}
	}
}
