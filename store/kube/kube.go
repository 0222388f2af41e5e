package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// Store is a baton store on the Lease objects of one Kubernetes namespace.
// It is safe for concurrent use.
type Store struct {
	leases      *leaseClient
	namespace   string
	readOnly    bool
	now         func() time.Time
	sessionHold time.Duration
	holds       holds

	// bgCtx ends at Close, which waits for bg: the background writes of
	// names held through a session (refreshSession).
	bgCtx  context.Context
	bgStop context.CancelFunc
	bg     sync.WaitGroup
}

var _ store.Store = (*Store)(nil)

// The client-side rate limit of a configuration that sets none: requests
// per second, and the burst above it.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// Option configures Open. An invalid value makes Open fail with an error
// that wraps store.ErrInvalid and names the option; nothing is clamped
// silently.
type Option func(*config) error

type config struct {
	kubeconfig  string
	readOnly    bool
	now         func() time.Time
	sessionHold time.Duration
	qps         int
}

// WithSessionHold sets the leaseDurationSeconds written on the Lease of a
// name held through a session (baton.Group); the default is
// DefaultSessionHold. It is how long a client-go candidate of such a name
// waits after the holder's process died (baton's candidates take over
// after the session's lease), and each name's Lease is written again
// about every third of it while the session lives. It is at least a
// second and at most a year; a value below the session's lease plus 3 s
// acts as that.
func WithSessionHold(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Second || d > maxSessionHold {
			return storedriver.InvalidOption("kube", "session-hold", d.String(), "a duration from 1s to 8760h, such as 1h")
		}
		c.sessionHold = d
		return nil
	}
}

// maxSessionHold is the longest WithSessionHold: a year.
const maxSessionHold = 8760 * time.Hour

// WithQPS sets the client's limit of requests a second (bursts of twice
// that) where the client configuration sets none; the default is
// DefaultQPS. The API server's priority and fairness still apply.
func WithQPS(qps int) Option {
	return func(c *config) error {
		if qps < 1 || qps > maxQPS {
			return storedriver.InvalidOption("kube", "qps", strconv.Itoa(qps), fmt.Sprintf("requests a second, from 1 to %d", maxQPS))
		}
		c.qps = qps
		return nil
	}
}

// maxQPS is the highest WithQPS.
const maxQPS = 10000

// WithKubeconfig makes OpenURL read the client configuration from the
// kubeconfig file at path instead of the in-cluster configuration.
func WithKubeconfig(path string) Option {
	return func(c *config) error {
		if path == "" {
			return storedriver.InvalidOption("kube", "kubeconfig", `""`, "the path of a kubeconfig file, such as ~/.kube/config")
		}
		c.kubeconfig = path
		return nil
	}
}

// WithReadOnly opens the store for reading: every write returns an error
// wrapping store.ErrInvalid, and Open writes nothing.
func WithReadOnly() Option {
	return func(c *config) error { c.readOnly = true; return nil }
}

// WithClock sets the clock of the store's times (Record.Updated, the
// Lease's renewTime, candidate rows), for tests; the default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if err := storedriver.CheckClock("kube", now); err != nil {
			return err
		}
		c.now = now
		return nil
	}
}

// Open opens the store in namespace through the API server that cfg
// reaches, and checks that the namespace's Leases can be listed (an
// unreachable server or a refused permission fails here, in one line). It
// creates nothing: every object is created by the first write of its
// name, which fails, in one line, if the namespace does not exist (a list
// there is merely empty, so Open cannot tell).
func Open(ctx context.Context, cfg *rest.Config, namespace string, opts ...Option) (*Store, error) {
	c := config{now: time.Now, sessionHold: DefaultSessionHold}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("%w: kube: namespace %q: %s", store.ErrInvalid, namespace, errs[0])
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "baton"
	}
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		// client-go's default (5 per second, bursts of 10) would throttle
		// the renewals of a few names; the API server's priority and
		// fairness still limit a runaway client.
		cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
		if c.qps > 0 {
			cfg.QPS, cfg.Burst = float32(c.qps), 2*c.qps
		}
	}
	leases, err := newLeaseClient(cfg, namespace)
	if err != nil {
		return nil, fmt.Errorf("%w: kube: client configuration: %v", store.ErrInvalid, err)
	}
	s := &Store{leases: leases, namespace: namespace, readOnly: c.readOnly, now: c.now, sessionHold: c.sessionHold}
	if _, err := s.leases.List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: labelSelector}); err != nil {
		return nil, s.apiError(ctx, "list", "", err)
	}
	if err := s.checkVerbs(ctx); err != nil {
		return nil, err
	}
	s.bgCtx, s.bgStop = context.WithCancel(context.Background())
	return s, nil
}

// probeName is a Lease name that no baton name maps to (objectName's
// encodings use the letters 0-9a-v after "baton--"): Open's permission
// checks name it, and write nothing.
const probeName = "baton--z-permission-check"

// checkVerbs asks the API server for each verb the store uses besides
// list, writing nothing (a watch stopped at once, a get of probeName,
// dry-run writes), so that a Role that lacks one fails Open, in one line
// naming the verb, instead of a later write or a feed that never comes.
// Only a refused permission fails it: the probes' other answers (not
// found, already exists) are what a granted verb gets.
func (s *Store) checkVerbs(ctx context.Context) error {
	type probe struct {
		verb string
		err  error
	}
	w, err := s.leases.Watch(ctx, metav1.ListOptions{LabelSelector: labelSelector, TimeoutSeconds: ptr(int64(1))})
	if err == nil {
		w.Stop()
	}
	probes := []probe{{"watch", err}}
	_, err = s.leases.Get(ctx, probeName, metav1.GetOptions{})
	probes = append(probes, probe{"get", err})
	if !s.readOnly {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: probeName}}
		dry := []string{metav1.DryRunAll}
		_, err = s.leases.Create(ctx, l, metav1.CreateOptions{DryRun: dry})
		probes = append(probes, probe{"create", err})
		_, err = s.leases.Update(ctx, l, metav1.UpdateOptions{DryRun: dry})
		probes = append(probes, probe{"update", err})
	}
	for _, p := range probes {
		if apierrors.IsForbidden(p.err) || apierrors.IsUnauthorized(p.err) {
			return s.apiError(ctx, p.verb, "", p.err)
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// OpenURL opens the store named by a URL of the form
//
//	kube://NAMESPACE[?kubeconfig=PATH&session-hold=DURATION&qps=N]
//
// With no kubeconfig parameter it uses $KUBECONFIG if set, else the
// in-cluster configuration (the pod's service account). session-hold is
// WithSessionHold, qps WithQPS. opts override the URL's parameters.
func OpenURL(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	namespace, urlOpts, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	c := config{now: time.Now, sessionHold: DefaultSessionHold}
	if env := os.Getenv("KUBECONFIG"); env != "" {
		c.kubeconfig = env
	}
	all := append(urlOpts, opts...)
	for _, o := range all {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	var cfg *rest.Config
	if c.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", c.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("%w: kube: kubeconfig %s: %v", store.ErrInvalid, c.kubeconfig, err)
		}
	} else {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("%w: kube: not inside a cluster (%v); outside one, name a kubeconfig: kube://%s?kubeconfig=PATH or $KUBECONFIG", store.ErrInvalid, err, namespace)
		}
	}
	return Open(ctx, cfg, namespace, all...)
}

// Capabilities implements store.Store: none of the optional ones. The
// Lease API has no multi-object transaction (no successions), no server
// clock a client can read, and this store keeps no identity of its own;
// its watch is not declared an ordered feed (Change.Through) yet.
func (s *Store) Capabilities() store.Capabilities { return 0 }

var _ store.LedgerBounded = (*Store)(nil)

// LedgerRows implements store.LedgerBounded: a job's ledger lives in its
// Lease's annotations, which hold about 800 rows of short outputs; the
// bound is LedgerRows, with room to spare.
func (s *Store) LedgerRows() int { return LedgerRows }

// Close implements store.Store: it waits up to closeGrace for the
// background writes of a released session's names, and stops the others.
func (s *Store) Close() error {
	s.holds.mu.Lock()
	s.holds.closed = true
	s.holds.mu.Unlock()
	done := make(chan struct{})
	go func() { s.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeGrace):
	}
	s.bgStop()
	<-done
	return nil
}

// apiError turns an API error of verb on the Lease name ("" for the
// collection) into the store's: a refused permission names the verb and
// the resource in one line; the rest may heal (store.ErrUnavailable),
// except what ctx ended.
func (s *Store) apiError(ctx context.Context, verb, name string, err error) error {
	what := "leases.coordination.k8s.io in namespace " + s.namespace
	if name != "" {
		what = fmt.Sprintf("lease %s in namespace %s", name, s.namespace)
	}
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w: kube: %s %s", store.ErrUnavailable, ctx.Err(), verb, what)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w: kube: forbidden to %s %s: grant the verb %q on leases.coordination.k8s.io to this service account", store.ErrUnavailable, verb, what, verb)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%w: kube: unauthorized to %s %s: the credentials were refused", store.ErrUnavailable, verb, what)
	case apierrors.IsNotFound(err) && verb == "create":
		// A Lease is created only where its namespace exists (a list in
		// a missing namespace is merely empty).
		return fmt.Errorf("%w: kube: cannot create %s: namespace %s not found: create it, or name another in kube://NAMESPACE", store.ErrUnavailable, what, s.namespace)
	case apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsInvalid(err):
		return fmt.Errorf("%w: kube: %s %s refused: %v", store.ErrInvalid, verb, what, err)
	}
	return fmt.Errorf("%w: kube: %s %s: %v", store.ErrUnavailable, verb, what, err)
}

// errReadOnly is what every write of a read-only handle returns.
var errReadOnly = fmt.Errorf("%w: kube: the store was opened read-only", store.ErrInvalid)

// isRetry reports whether err is a lost compare-and-swap of the whole
// object (409 Conflict, or a create that found it), after which the
// write is read and applied again.
func isRetry(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || errors.Is(err, errGone)
}

// errGone: the object was deleted between the read and the write.
var errGone = errors.New("kube: object deleted under the write")
