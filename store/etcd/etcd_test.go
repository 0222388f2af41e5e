package etcd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
	"github.com/batonhq/baton/store/storetest"
)

// Tests and benchmarks share lazily started clusters, one per size, stopped
// by TestMain: the conformance suite a single member, the benchmarks three.
var clusters struct {
	mu   sync.Mutex
	by   map[int]*etcdtest.Cluster
	errs map[int]error
}

// lazyCluster returns the shared cluster of n members, starting it on first
// use.
func lazyCluster(tb testing.TB, n int) *etcdtest.Cluster {
	tb.Helper()
	clusters.mu.Lock()
	defer clusters.mu.Unlock()
	if clusters.by == nil {
		clusters.by, clusters.errs = map[int]*etcdtest.Cluster{}, map[int]error{}
	}
	if _, tried := clusters.by[n]; !tried && clusters.errs[n] == nil {
		clusters.by[n], clusters.errs[n] = etcdtest.Start(n)
	}
	if err := clusters.errs[n]; err != nil {
		testenv.Require(tb, "etcd", err.Error())
	}
	return clusters.by[n]
}

func sharedCluster(t *testing.T) *etcdtest.Cluster { return lazyCluster(t, 1) }

// The tests on clusters of their own (quorum loss, partitions,
// compaction, token expiry) spend most of their time waiting on leases
// and elections: unless -test.parallel is given, four run at once
// instead of one per CPU. Not more: their leases are 1.5 s, and at eight
// (or sixteen) beside a suite on a slow moment of the VM a leader missed
// its renewals, or a takeover its timing bound, in one run in five. In
// CI (testenv.Long) they run one at a time
// (testenv.ParallelUnlessLong).
func TestMain(m *testing.M) {
	if !testenv.Long() {
		testenv.DefaultParallel(4)
	}
	code := testenv.Run(m)
	for _, c := range clusters.by {
		if c != nil {
			c.Close()
		}
	}
	os.Exit(code)
}

var prefixSeq atomic.Int64

// freshPrefix returns a key prefix no other test uses.
func freshPrefix(t *testing.T) string {
	return fmt.Sprintf("/test/%d-%s/", prefixSeq.Add(1), strings.ReplaceAll(t.Name(), "/", "_"))
}

func openStore(t testing.TB, endpoints []string, opts ...etcd.Option) *etcd.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := etcd.Open(ctx, endpoints, opts...)
	if err != nil {
		t.Fatalf("Open(%v): %v", endpoints, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	c := sharedCluster(t)
	storetest.Run(t, func(t *testing.T) func() store.Store {
		prefix := freshPrefix(t)
		return func() store.Store { return openStore(t, c.Endpoints(), etcd.WithPrefix(prefix)) }
	})
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		url       string
		endpoints []string
		err       string // substring of the error; "" for success
	}{
		{"etcd://127.0.0.1:2379", []string{"127.0.0.1:2379"}, ""},
		{"etcd://a:1,b:2,c:3/", []string{"a:1", "b:2", "c:3"}, ""},
		{"etcd://a:1?prefix=/x/&dial-timeout=2s&request-timeout=1s", []string{"a:1"}, ""},
		{"postgres://a:1", nil, "does not start with etcd://"},
		{"etcd://", nil, "names no endpoint"},
		{"etcd://a", nil, "not host:port"},
		{"etcd://a:1,", nil, "not host:port"},
		{"etcd://:1", nil, "not host:port"},
		{"etcd://a:0", nil, "invalid port"},
		{"etcd://a:x", nil, "invalid port"},
		{"etcd://a:1/baton", nil, "has a path"},
		{"etcd://a:1?dial-timeout=soon", nil, "not a duration"},
		{"etcd://a:1?request-timeout=5", nil, `"5" needs a unit`},
		{"etcd://a:1?dial-timeout=9999999999h", nil, "out of range: a duration is at most"},
		{"etcd://a:1?pefix=/x/", nil, "unknown parameter \"pefix\""},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			eps, _, err := etcd.ParseURL(tc.url)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseURL(%q) error = %v, want one containing %q", tc.url, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(eps, ",") != strings.Join(tc.endpoints, ",") {
				t.Fatalf("endpoints = %v, want %v", eps, tc.endpoints)
			}
		})
	}
}

func TestOpenValidatesOptions(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		eps  []string
		opt  etcd.Option
		want string
	}{
		{"no endpoints", nil, etcd.WithPrefix("/x/"), "no endpoint"},
		{"empty prefix", []string{"a:1"}, etcd.WithPrefix(""), "invalid prefix"},
		{"zero dial timeout", []string{"a:1"}, etcd.WithDialTimeout(0), "invalid dial-timeout"},
		{"negative request timeout", []string{"a:1"}, etcd.WithRequestTimeout(-time.Second), "invalid request-timeout"},
		{"bad URL", nil, nil, "not host:port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.opt == nil {
				_, err = etcd.OpenURL(ctx, "etcd://nohost")
			} else {
				_, err = etcd.Open(ctx, tc.eps, tc.opt)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestOpenURL(t *testing.T) {
	c := sharedCluster(t)
	prefix := freshPrefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := etcd.OpenURL(ctx, "etcd://"+c.Endpoint(0)+"?prefix="+prefix+"&request-timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Prefix() != prefix {
		t.Fatalf("Prefix() = %q, want %q", s.Prefix(), prefix)
	}
	// The keys are where the package doc says: the record carries its
	// first four events, the fifth moves all five to one log key.
	keys := func() string {
		t.Helper()
		resp, err := s.Client().Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, kv := range resp.Kvs {
			keys = append(keys, strings.TrimPrefix(string(kv.Key), prefix))
		}
		return strings.Join(keys, " ")
	}
	var rec store.Record
	for i := range 5 {
		next := store.Record{Name: "u", Holder: "n1", Token: uint64(i + 1)}
		rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: next, Event: store.Acquired})
		if err != nil {
			t.Fatal(err)
		}
		want := "e/u schema"
		if i == 4 {
			want = "e/u l/u/00000000000000000001 schema"
		}
		if got := keys(); got != want {
			t.Fatalf("keys after %d events = %s, want %s", i+1, got, want)
		}
	}
}

func TestUnknownSchema(t *testing.T) {
	c := sharedCluster(t)
	prefix := freshPrefix(t)
	s := openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Client().Put(ctx, prefix+"schema", "99"); err != nil {
		t.Fatal(err)
	}
	_, err := etcd.Open(ctx, c.Endpoints(), etcd.WithPrefix(prefix))
	if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), `"99"`) || !strings.Contains(err.Error(), "versions 1 to 5") {
		t.Fatalf("Open on schema 99: %v, want ErrSchema naming both versions", err)
	}
	resp, err := s.Client().Get(ctx, prefix+"schema")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "99" {
		t.Fatalf("the schema key was rewritten: %v %v", resp, err)
	}
}

// TestNamesWithSlashes checks that a name cannot reach into another name's
// keys.
func TestNamesWithSlashes(t *testing.T) {
	c := sharedCluster(t)
	s := openStore(t, c.Endpoints(), etcd.WithPrefix(freshPrefix(t)))
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"a", "a/b"} {
		if _, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: name, Holder: "n", Token: 1}, Event: store.Acquired}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: name, Period: "p", State: store.Pending}}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.History(ctx, "a", 0, 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("History(a) = %+v, %v; want one event", evs, err)
	}
	runs, err := s.Runs(ctx, "a", "", 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("Runs(a) = %+v, %v; want one run", runs, err)
	}
}

// TestSwapWithoutCache checks the path where a handle has not seen the
// version it is asked to replace: it reads first, and the log sequence
// continues.
func TestSwapWithoutCache(t *testing.T) {
	c := sharedCluster(t)
	prefix := freshPrefix(t)
	a := openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
	defer a.Close()
	b := openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r1, err := a.Swap(ctx, store.Swap{Record: store.Record{Name: "x", Holder: "n1", Token: 1}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.Swap(ctx, store.Swap{Expect: r1.Version, Record: store.Record{Name: "x", Holder: "n2", Token: 2}, Event: store.TakenOver})
	if err != nil {
		t.Fatal(err)
	}
	// a's memory is stale now; its swap on r2 must still work, and one on
	// r1 must conflict.
	if _, err := a.Swap(ctx, store.Swap{Expect: r1.Version, Record: r1}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("swap on a stale version: %v, want ErrConflict", err)
	}
	if _, err := a.Swap(ctx, store.Swap{Expect: r2.Version, Record: store.Record{Name: "x", Token: 2}, Event: store.Released}); err != nil {
		t.Fatal(err)
	}
	evs, _ := a.History(ctx, "x", 0, 0)
	if len(evs) != 3 || evs[2].Seq != 3 || evs[2].Kind != store.Released {
		t.Fatalf("History = %+v, want 3 events ending in released", evs)
	}
}

// TestFencedRunSurvivesRenewals checks that renewals of the election record
// between a fenced SwapRun's read and its write do not make it fail.
func TestFencedRunSurvivesRenewals(t *testing.T) {
	c := sharedCluster(t)
	prefix := freshPrefix(t)
	s := openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
	defer s.Close()
	renewer := openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
	defer renewer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "f", Holder: "n1", Token: 1}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		r := rec
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			var err error
			if r, err = renewer.Swap(ctx, store.Swap{Expect: r.Version, Record: r}); err != nil {
				done <- err
				return
			}
		}
	}()
	for i := 0; i < 20; i++ {
		_, err := s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "f", Period: fmt.Sprintf("p%02d", i), State: store.Running, Token: 1}, Fenced: true})
		if err != nil && !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("fenced SwapRun %d under renewals: %v", i, err)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestOpenUnreachable checks that Open against an address where no member
// listens fails with ErrUnavailable within the request timeout, even when
// ctx has no deadline.
func TestOpenUnreachable(t *testing.T) {
	testenv.ParallelUnlessLong(t) // waits out a dial timeout
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	delay := testenv.MeasureDelay(t)
	start := time.Now()
	_, err = etcd.Open(context.Background(), []string{addr}, etcd.WithRequestTimeout(time.Second), etcd.WithDialTimeout(time.Second))
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Open(%s): %v, want ErrUnavailable", addr, err)
	}
	if took, bound := time.Since(start), delay.Slack(5*time.Second, start, time.Now()); took > bound {
		t.Fatalf("Open of an unreachable endpoint took %v, over %v", took, bound)
	}
	t.Log(err)
}

func TestDamagedConformance(t *testing.T) {
	c := sharedCluster(t)
	storetest.RunDamaged(t, func(t *testing.T) (func() store.Store, storetest.Planter) {
		prefix := freshPrefix(t)
		return func() store.Store { return openStore(t, c.Endpoints(), etcd.WithPrefix(prefix)) }, func(t *testing.T, job, period string, state store.RunState) {
			cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			ctx := context.Background()
			key := prefix + "r/" + url.PathEscape(job) + "/" + period
			resp, err := cli.Get(ctx, key)
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("reading %s to plant a state: %v, %d keys", key, err, len(resp.Kvs))
			}
			var v map[string]any
			if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil {
				t.Fatal(err)
			}
			v["state"] = string(state)
			b, _ := json.Marshal(v)
			if _, err := cli.Put(ctx, key, string(b)); err != nil {
				t.Fatal(err)
			}
		}
	})
}
