// Package kubetest starts a real kube-apiserver inside the test process, on
// an embedded etcd member, for the Kubernetes Lease store's tests.
//
// It is its own Go module (github.com/batonhq/baton/kubetest) so that baton's
// module never links Kubernetes server code: a user of baton, `go install`
// of the CLI and the root's `go test ./...` never build kube-apiserver. Only
// this module's tests do, and its cold build is long (see BENCHMARKS.md).
//
// The server is k8s.io/kubernetes/cmd/kube-apiserver/app/testing's
// StartTestServer: the same kube-apiserver that a cluster runs, with its
// admission, validation, resourceVersion checks and watch cache, serving
// HTTPS on a free 127.0.0.1 port and storing in an etcdtest member. It is
// NOT a cluster: no controller manager runs (nothing garbage-collects or
// creates service accounts' tokens), and its client is the loopback
// superuser unless a test asks for another identity (impersonation); it
// authorizes by RBAC.
package kubetest

import (
	"testing"

	"github.com/google/uuid"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/testenv"
)

// Component is the name BATON_REQUIRE lists to make a missing API server a
// failure instead of a skip.
const Component = "kube-apiserver"

// Server is a running kube-apiserver.
type Server struct {
	// Config is a client configuration for the server's loopback
	// superuser; copy it (rest.CopyConfig) before changing it.
	Config *rest.Config
	// EtcdURL is the client URL of the server's etcd member, for a test
	// that acts below the API server (a compaction).
	EtcdURL string
	stop    func()
}

// Start starts an etcd member and a kube-apiserver on it, with flags
// added to the server's command line. The caller must Close the server.
// A start costs seconds: one server serves many tests.
func Start(t testing.TB, flags ...string) (*Server, error) {
	etcd, err := etcdtest.Start(1)
	if err != nil {
		return nil, err
	}
	cfg := storagebackend.NewDefaultConfig("/"+uuid.NewString()+"/registry", nil)
	cfg.Transport.ServerList = []string{etcd.ClientURL(0)}
	opts := kubeapiservertesting.NewDefaultTestServerOptions()
	opts.DisableInvariantChecks = true
	// RBAC, as a cluster authorizes, so that a test can run under a
	// Role's permissions (the loopback superuser is in system:masters).
	ts, err := kubeapiservertesting.StartTestServer(t, opts, append([]string{"--authorization-mode=RBAC"}, flags...), cfg)
	if err != nil {
		etcd.Close()
		return nil, err
	}
	return &Server{Config: ts.ClientConfig, EtcdURL: etcd.ClientURL(0), stop: func() { ts.TearDownFn(); etcd.Close() }}, nil
}

// StartServer is Start for one test: the server stops when the test ends.
// If it cannot start, the test ends through testenv.Require (skipped, or
// failed when BATON_REQUIRE lists kube-apiserver).
func StartServer(t testing.TB, flags ...string) *Server {
	t.Helper()
	s, err := Start(t, flags...)
	if err != nil {
		testenv.Require(t, Component, err.Error())
	}
	t.Cleanup(s.Close)
	return s
}

// Close stops the API server and its etcd member.
func (s *Server) Close() { s.stop() }
