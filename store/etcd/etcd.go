package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// Defaults of the options.
const (
	DefaultPrefix         = "/baton/"
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 5 * time.Second
)

// Store is a store.Store on an etcd cluster. It is safe for concurrent use.
// Open, OpenURL or FromClient make one.
type Store struct {
	cli     *clientv3.Client
	owned   bool // Close closes cli
	cfg     config
	keys    keys
	nowFunc func() time.Time

	// The store's identity, set by checkSchema: the cluster's id and the
	// revision that created the schema key. See checkIdentity.
	clusterID uint64
	schemaRev int64

	mu    sync.Mutex
	cache map[string]cached // last record seen per name, see cached

	// shrink halves the transaction budgets of the batched calls this many
	// times: raised when the cluster refuses a transaction as too large
	// (see txnOps).
	shrink atomic.Int32

	feed hub // the handle's one watch on the election records
}

// cached is what a Swap needs of the record it replaces: a key's content at
// one ModRevision never changes, so a record seen at ModRevision m is still
// exactly that record for any transaction that compares ModRevision == m.
// What the store shows of it (rec) also depends on the session records
// its resolution read (chain): a transaction that relies on rec compares
// their ModRevisions too (see guards).
type cached struct {
	// stored is the record as its key stores it, Version the version it
	// reports by itself: the pinned version of a settled record, else
	// modRev (see doc.go, "Successions").
	stored store.Record
	modRev int64 // the key's ModRevision (0: no such key)
	logSeq uint64
	// The log events the record carries (inlineEvents): events, or, until
	// heldEvents decodes them, rawEvents as stored.
	events    []loggedEvent
	rawEvents []byte

	// Filled by resolution (resolveIn): the record as the store shows it
	// (store.Resolve), the session records it read with their
	// ModRevisions (0: absent), and the log events of the successions it
	// passed, numbered after logSeq.
	rec     store.Record
	chain   []sessionRev
	implied []store.Event
}

// sessionRev is a session record a resolution read, at ModRevision rev (0:
// absent).
type sessionRev struct {
	name string
	rev  int64
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.Identifier = (*Store)(nil)
)

// Option configures Open. An invalid value makes Open fail with an error
// that wraps store.ErrInvalid and names the option; nothing is clamped
// silently.
type Option func(*config) error

type config struct {
	prefix         string
	dialTimeout    time.Duration
	requestTimeout time.Duration
	readOnly       bool
}

func defaultConfig() config {
	return config{prefix: DefaultPrefix, dialTimeout: DefaultDialTimeout, requestTimeout: DefaultRequestTimeout}
}

func (c *config) apply(opts []Option) error {
	for _, o := range opts {
		if err := o(c); err != nil {
			return err
		}
	}
	return nil
}

// WithPrefix sets the key prefix under which the store keeps all its keys
// (default "/baton/"). Stores with different prefixes on one cluster are
// independent. It must end with "/" (without it, "/baton" would also own
// the keys of "/baton2/"). Open refuses a prefix inside another baton
// store's (such as "/baton/r/x/" beside a store at "/baton/") and one that
// holds keys that are not a baton store's.
func WithPrefix(prefix string) Option {
	return func(c *config) error {
		if prefix == "" {
			return storedriver.InvalidOption("etcd", "prefix", `""`, `a key prefix ending in "/", such as "/baton/"`)
		}
		if !strings.HasSuffix(prefix, "/") {
			return storedriver.InvalidOption("etcd", "prefix", fmt.Sprintf("%q", prefix), fmt.Sprintf(`a key prefix ending in "/", such as %q`, prefix+"/"))
		}
		c.prefix = prefix
		return nil
	}
}

// WithDialTimeout sets how long Open waits for a first connection (default
// 5s). It must be positive. FromClient ignores it: the client is already
// configured.
func WithDialTimeout(d time.Duration) Option {
	return func(c *config) error {
		if err := storedriver.CheckPositive("etcd", "dial-timeout", d, "5s"); err != nil {
			return err
		}
		c.dialTimeout = d
		return nil
	}
}

// WithRequestTimeout bounds every call (default 5s), whichever of it and
// the call's ctx ends first, so that a call to a cluster without quorum
// returns store.ErrUnavailable instead of hanging. It must be positive.
func WithRequestTimeout(d time.Duration) Option {
	return func(c *config) error {
		if err := storedriver.CheckPositive("etcd", "request-timeout", d, "5s"); err != nil {
			return err
		}
		c.requestTimeout = d
		return nil
	}
}

// Open connects to the etcd cluster at endpoints (host:port each, any
// members of one cluster), checks or writes the schema version under the
// prefix, and returns the store. ctx bounds the schema check. The store
// owns the client; Close closes it. For TLS or authentication, configure a
// clientv3.Client yourself and use FromClient.
func Open(ctx context.Context, endpoints []string, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	if err := cfg.apply(opts); err != nil {
		return nil, err
	}
	if err := validateEndpoints(endpoints); err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          cfg.dialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: connecting to %s: %w: %w", strings.Join(endpoints, ","), store.ErrUnavailable, err)
	}
	s, err := newStore(ctx, cli, true, cfg)
	if err != nil {
		cli.Close()
		// A member that answered "no leader" is listening; the hint is
		// for one that did not answer at all.
		if errors.Is(err, store.ErrUnavailable) && !errors.Is(err, rpctypes.ErrNoLeader) {
			err = fmt.Errorf("%w (is a member listening at %s?)", err, strings.Join(endpoints, ","))
		}
		return nil, err
	}
	return s, nil
}

// FromClient returns a store on an existing client, after checking or
// writing the schema version under the prefix. Close does not close cli.
func FromClient(ctx context.Context, cli *clientv3.Client, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	if err := cfg.apply(opts); err != nil {
		return nil, err
	}
	if cli == nil {
		return nil, errors.New("etcd: FromClient: nil client")
	}
	return newStore(ctx, cli, false, cfg)
}

// OpenURL opens the store named by a URL of the form
//
//	etcd://host:port[,host:port...][?prefix=/baton/&dial-timeout=5s&request-timeout=5s]
//
// Query parameters override the defaults and are overridden by opts.
func OpenURL(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	endpoints, urlOpts, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return Open(ctx, endpoints, append(urlOpts, opts...)...)
}

// ParseURL splits an etcd:// store URL (see OpenURL) into endpoints and
// options, validating both.
func ParseURL(rawURL string) (endpoints []string, opts []Option, err error) {
	const scheme = "etcd://"
	const usage = "use etcd://host:port[,host:port...][?prefix=/baton/&dial-timeout=5s&request-timeout=5s]"
	if !strings.HasPrefix(rawURL, scheme) {
		return nil, nil, fmt.Errorf("etcd: store URL %q does not start with %s; %s", rawURL, scheme, usage)
	}
	rest := strings.TrimPrefix(rawURL, scheme)
	hosts, query, _ := strings.Cut(rest, "?")
	hosts = strings.TrimSuffix(hosts, "/")
	if strings.Contains(hosts, "/") {
		return nil, nil, fmt.Errorf("etcd: store URL %q has a path; the key prefix goes in ?prefix=; %s", rawURL, usage)
	}
	if hosts == "" {
		return nil, nil, fmt.Errorf("etcd: store URL %q names no endpoint; %s", rawURL, usage)
	}
	endpoints = strings.Split(hosts, ",")
	if err := validateEndpoints(endpoints); err != nil {
		return nil, nil, err
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, nil, fmt.Errorf("etcd: store URL %q: bad query: %v; %s", rawURL, err, usage)
	}
	for k, vs := range q {
		if len(vs) > 1 {
			return nil, nil, fmt.Errorf("etcd: store URL %q: parameter %s is given %d times; give it once", rawURL, k, len(vs))
		}
		v := vs[0]
		switch k {
		case "prefix":
			opts = append(opts, WithPrefix(v))
		case "dial-timeout", "request-timeout":
			d, err := bound.ParseDuration(v)
			if err != nil {
				return nil, nil, fmt.Errorf("etcd: store URL %q: %s: %w", rawURL, k, err)
			}
			if k == "dial-timeout" {
				opts = append(opts, WithDialTimeout(d))
			} else {
				opts = append(opts, WithRequestTimeout(d))
			}
		default:
			return nil, nil, fmt.Errorf("etcd: store URL %q: unknown parameter %q; the parameters are prefix, dial-timeout and request-timeout", rawURL, k)
		}
	}
	return endpoints, opts, nil
}

func validateEndpoints(endpoints []string) error {
	if len(endpoints) == 0 {
		return errors.New("etcd: no endpoint given; name at least one member as host:port, e.g. 127.0.0.1:2379")
	}
	for _, ep := range endpoints {
		host, port, err := net.SplitHostPort(ep)
		if err != nil || host == "" {
			return fmt.Errorf("etcd: endpoint %q is not host:port; name a member like 127.0.0.1:2379", ep)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("etcd: endpoint %q has an invalid port; use a port between 1 and 65535", ep)
		}
	}
	return nil
}

func newStore(ctx context.Context, cli *clientv3.Client, owned bool, cfg config) (*Store, error) {
	s := &Store{
		cli:     cli,
		owned:   owned,
		cfg:     cfg,
		keys:    keys{prefix: cfg.prefix},
		nowFunc: time.Now,
		cache:   map[string]cached{},
	}
	check := s.checkSchema
	if cfg.readOnly {
		check = s.readSchema
	}
	if err := check(ctx); err != nil {
		if refusedCredentials(err) {
			// At open the credentials are configuration: waiting for the
			// store will not make them right (mid-term they are a change
			// behind a running client, which classify calls unavailable).
			var ee rpctypes.EtcdError
			errors.As(err, &ee)
			return nil, fmt.Errorf("etcd: open: the cluster refused this client's credentials (%v); check the user and password or certificate it connects with", ee)
		}
		return nil, err
	}
	return s, nil
}

// Client returns the underlying etcd client.
func (s *Store) Client() *clientv3.Client { return s.cli }

// Prefix returns the key prefix the store uses.
func (s *Store) Prefix() string { return s.cfg.prefix }

// Capabilities implements store.Store: an identity, an ordered feed and
// successions; no clock of its own (etcd's API carries no server time).
func (s *Store) Capabilities() store.Capabilities {
	return store.CapIdentity | store.CapOrderedFeed | store.CapSuccession
}

// Close releases the store. It closes the client if Open or OpenURL made
// it. Change feeds close.
func (s *Store) Close() error {
	if !s.owned {
		return nil
	}
	if err := s.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("etcd: close: %w", err)
	}
	return nil
}

func (s *Store) now() time.Time { return s.nowFunc().UTC().Round(0) }

// callCtx derives a call's context: bounded by the request timeout, and
// asking the member to refuse at once when it has no leader (instead of
// queueing a request that cannot commit).
func (s *Store) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithTimeout(ctx, s.cfg.requestTimeout)
	return clientv3.WithRequireLeader(c), cancel
}

// txn runs one transaction within a call context. A member without a
// leader refuses a transaction before applying anything, so that refusal
// is retried (on the next endpoint, by the client's round robin) until the
// call's deadline; any other failure is returned at once.
func (s *Store) txn(ctx context.Context, op string, cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.unavailable(ctx, ctx, op, err)
	}
	if err := s.writable(op, then, els); err != nil {
		return nil, err
	}
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	if s.schemaRev != 0 {
		// Every write also compares the store's identity; the else branch
		// reads the schema key to tell a replaced store from a conflict.
		cmps = append(slices.Clip(cmps), clientv3.Compare(clientv3.CreateRevision(s.keys.schema()), "=", s.schemaRev))
		els = append(slices.Clip(els), clientv3.OpGet(s.keys.schema()))
	}
	for {
		resp, err := s.cli.Txn(cctx).If(cmps...).Then(then...).Else(els...).Commit()
		if err == nil {
			if err := s.checkIdentity(op, resp.Header, resp); err != nil {
				return nil, err
			}
			return resp, nil
		}
		if !errors.Is(err, rpctypes.ErrNoLeader) || len(s.cli.Endpoints()) < 2 {
			return nil, s.classify(ctx, cctx, op, err)
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-t.C:
		case <-cctx.Done():
			t.Stop()
			return nil, s.classify(ctx, cctx, op, err)
		}
	}
}

// get runs one read within a call context. The client retries reads that
// a member refuses for want of a leader on its own.
func (s *Store) get(ctx context.Context, op, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.unavailable(ctx, ctx, op, err)
	}
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	resp, err := s.cli.Get(cctx, key, opts...)
	if err != nil {
		return nil, s.classify(ctx, cctx, op, err)
	}
	if err := s.checkIdentity(op, resp.Header, nil); err != nil {
		return nil, err
	}
	return resp, nil
}

// classify turns an etcd client error into a store error: requests that
// etcd rejects as malformed (too large, too many operations) are
// store.ErrInvalid; credentials the cluster refused (a password changed
// behind the client, a token from before a change of users) are
// store.ErrUnavailable, because the same request succeeds once they are
// right, so a leader retries until its deadline (at open, fromClient
// turns this refusal into an error that waiting will not cure); a refused
// permission wraps no sentinel (the cluster answered, and waiting will
// not change its answer); everything else (no leader, timeouts,
// unreachable members, deadlines, a closed client) is
// store.ErrUnavailable.
func (s *Store) classify(ctx, cctx context.Context, op string, err error) error {
	if refusedCredentials(err) {
		// etcd answers a password that no longer authenticates, and a
		// token from before a change of users or roles, with the code of
		// a malformed request; the client has already tried to
		// authenticate again. The same request succeeds once the
		// credentials are right: it heals, so the leader retries until
		// its deadline, and a run's outcome is read back, not dropped.
		return fmt.Errorf("etcd %s: %w: the cluster refused this client's credentials (%w); check the user and password or certificate it connects with", op, store.ErrUnavailable, err)
	}
	code := status.Code(err)
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	}
	switch code {
	case codes.InvalidArgument:
		return fmt.Errorf("etcd %s: %w: %w", op, store.ErrInvalid, err)
	case codes.PermissionDenied, codes.Unauthenticated:
		return fmt.Errorf("etcd %s: the cluster refuses this client (its user, role or credentials): %w", op, err)
	}
	return s.unavailable(ctx, cctx, op, err)
}

// refusedCredentials reports whether err is etcd's refusal of a client's
// user, password or token.
func refusedCredentials(err error) bool {
	for _, e := range []error{rpctypes.ErrAuthFailed, rpctypes.ErrAuthOldRevision, rpctypes.ErrInvalidAuthToken, rpctypes.ErrUserEmpty} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (s *Store) unavailable(ctx, cctx context.Context, op string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("etcd %s: %w: %w", op, store.ErrUnavailable, ctx.Err())
	case cctx.Err() != nil && errors.Is(err, cctx.Err()):
		return fmt.Errorf("etcd %s: %w: no answer within the request timeout %v: %w",
			op, store.ErrUnavailable, s.cfg.requestTimeout, cctx.Err())
	case cctx.Err() != nil:
		return fmt.Errorf("etcd %s: %w: no answer within the request timeout %v (%w): %v",
			op, store.ErrUnavailable, s.cfg.requestTimeout, cctx.Err(), err)
	}
	return fmt.Errorf("etcd %s: %w: %w", op, store.ErrUnavailable, err)
}

// remember keeps the stored record c (its resolution is not kept: it is
// done again with the session records known when it is used).
// A session record found absent is kept too, as absent (a name can point
// at a deleted session).
func (s *Store) remember(name string, c cached) {
	if c.modRev == 0 && !store.IsSession(name) {
		return
	}
	c.rec, c.chain, c.implied = store.Record{}, nil, nil
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.cache[name]; ok && c.modRev != 0 && old.modRev > c.modRev {
		return
	}
	s.cache[name] = c
}

// cachedAt returns the record of name if this handle has seen it, resolved
// with the session records it knows (the handle's latest copies), when the
// record so resolved is at version v. A session record the handle has not
// seen makes it miss (a read follows).
func (s *Store) cachedAt(name string, v int64) (cached, bool) {
	s.mu.Lock()
	c, ok := s.cache[name]
	s.mu.Unlock()
	if !ok {
		return cached{}, false
	}
	miss, err := resolveIn(&c, s.known(nil))
	return c, err == nil && miss == "" && c.rec.Version == v
}

// known returns a lookup of session records: those in got first (read by
// the operation at hand), then this handle's latest copies.
func (s *Store) known(got map[string]cached) func(string) (cached, bool) {
	return func(name string) (cached, bool) {
		if c, ok := got[name]; ok {
			return c, true
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		c, ok := s.cache[name]
		return c, ok
	}
}

// keys builds the store's etcd keys.
type keys struct{ prefix string }

func (k keys) schema() string            { return k.prefix + "schema" }
func (k keys) record(name string) string { return k.prefix + "e/" + url.PathEscape(name) }
func (k keys) logDir(name string) string { return k.prefix + "l/" + url.PathEscape(name) + "/" }
func (k keys) log(name string, seq uint64) string {
	return fmt.Sprintf("%s%020d", k.logDir(name), seq)
}
func (k keys) job(name string) string { return k.prefix + "j/" + url.PathEscape(name) }
func (k keys) deleting(session string) string {
	return k.prefix + "d/" + url.PathEscape(session)
}
func (k keys) runDir(job string) string { return k.prefix + "r/" + url.PathEscape(job) + "/" }
func (k keys) run(job, period string) string {
	return k.runDir(job) + period
}

// WithReadOnly makes the store read-only, as the read commands (status,
// runs, history, next) open it: Open neither writes the schema version
// nor accepts a prefix without one (an error wrapping store.ErrNotFound:
// no baton store there), and every write fails with store.ErrInvalid
// before it is sent. A user whose etcd role grants only reads works.
func WithReadOnly() Option {
	return func(c *config) error {
		c.readOnly = true
		return nil
	}
}

// writable refuses a transaction that writes on a read-only store.
func (s *Store) writable(op string, then, els []clientv3.Op) error {
	if !s.cfg.readOnly {
		return nil
	}
	for _, o := range slices.Concat(then, els) {
		if !o.IsGet() {
			return fmt.Errorf("etcd %s: %w: the store was opened read-only", op, store.ErrInvalid)
		}
	}
	return nil
}
