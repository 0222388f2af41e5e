package kubetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/kube"
	"github.com/batonhq/baton/store/storetest"
)

func TestMain(m *testing.M) {
	runFleetChild() // a process of testMixedFleetFaults, if it is one
	runJobChild()   // the job of testRunFailover, if it is one
	os.Exit(testenv.Run(m))
}

// TestKube starts one API server and runs every test of the Lease store
// on it as a subtest: a start costs seconds, and StartTestServer ties the
// server's life to the test that started it.
func TestKube(t *testing.T) {
	srv := StartServer(t)
	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	env := &env{srv: srv, cs: cs}
	defer env.close()
	t.Run("ResourceVersionEnforced", env.testResourceVersion)
	t.Run("ClientGoLease", env.testClientGoLease)
	t.Run("ClientGoSeesSeconds", env.testClientGoSeesSeconds)
	t.Run("GroupBesideClientGo", env.testGroupBesideClientGo)
	t.Run("SessionHold", env.testSessionHold)
	t.Run("GetManyByList", env.testGetManyByList)
	t.Run("BatonWaitsForClientGo", env.testBatonWaitsForClientGo)
	t.Run("BatonAfterClientGoReleases", env.testBatonAfterClientGoReleases)
	t.Run("ExampleRBAC", env.testExampleRBAC)
	t.Run("WatchSlowReader", env.testWatchSlowReader)
	t.Run("MixedFleetFaults", env.testMixedFleetFaults)
	t.Run("MissingNamespace", env.testMissingNamespace)
	t.Run("WatchGone", env.testWatchGone)
	t.Run("RunFailover", env.testRunFailover)
	t.Run("BenchTakeover", env.testBenchTakeover)
	t.Run("Drill", env.testDrill)
	t.Run("Conformance", func(t *testing.T) { storetest.Run(t, env.factory) })
	t.Run("Damaged", func(t *testing.T) { storetest.RunDamaged(t, env.damagedFactory) })
}

type env struct {
	srv *Server
	cs  kubernetes.Interface
	n   atomic.Int64

	// The CLI built with -tags kube (batonCLI), once.
	cliOnce sync.Once
	cli     string
	cliDir  string
	cliErr  error
}

// close removes what the tests left outside their temporary directories.
func (e *env) close() {
	if e.cliDir != "" {
		os.RemoveAll(e.cliDir)
	}
}

// namespace creates a fresh namespace: one store location.
func (e *env) namespace(t testing.TB) string {
	t.Helper()
	ns := fmt.Sprintf("t%d", e.n.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	return ns
}

// factory is storetest's Factory: a namespace per test.
func (e *env) factory(t *testing.T) func() store.Store {
	ns := e.namespace(t)
	return func() store.Store {
		s, err := kube.Open(context.Background(), e.srv.Config, ns)
		if err != nil {
			t.Fatalf("kube.Open: %v", err)
		}
		return s
	}
}

// damagedFactory plants a ledger row's state by editing the Lease's
// annotation with a plain client, below the store.
func (e *env) damagedFactory(t *testing.T) (func() store.Store, storetest.Planter) {
	open := e.factory(t)
	ns := fmt.Sprintf("t%d", e.n.Load())
	plant := func(t *testing.T, job, period string, state store.RunState) {
		ctx := context.Background()
		leases := e.cs.CoordinationV1().Leases(ns)
		l, err := leases.Get(ctx, job, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]any
		if err := json.Unmarshal([]byte(l.Annotations["batonhq.github.io/state"]), &st); err != nil {
			t.Fatal(err)
		}
		runs, _ := st["runs"].(map[string]any)
		row, ok := runs[period].(map[string]any)
		if !ok {
			t.Fatalf("no ledger row %s/%s to plant into", job, period)
		}
		row["State"] = string(state)
		raw, _ := json.Marshal(st)
		l.Annotations["batonhq.github.io/state"] = string(raw)
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return open, plant
}

// testResourceVersion is the reason this module exists: a write with a
// stale resourceVersion gets 409 Conflict from the real server (client-go's
// fake clientset accepts it).
func (e *env) testResourceVersion(t *testing.T) {
	ns := e.namespace(t)
	leases := e.cs.CoordinationV1().Leases(ns)
	ctx := context.Background()
	l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := l.DeepCopy()
	a, b := "a", "b"
	l.Spec.HolderIdentity = &a
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale.Spec.HolderIdentity = &b
	if _, err := leases.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("an update with a stale resourceVersion: %v, want 409 Conflict", err)
	}
}

// testMissingNamespace: Open cannot tell a missing namespace (a list
// there is empty); the first write says it in one line.
func (e *env) testMissingNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := kube.Open(ctx, e.srv.Config, "no-such-namespace")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	_, err = st.Swap(ctx, store.Swap{Record: store.Record{Name: "x", Holder: "n1", Incarnation: "n1-1", Token: 1, Lease: time.Second}})
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "namespace no-such-namespace not found") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a write in a missing namespace: %v; want one line naming it", err)
	}
}
