// Package fenceproxy is a fencing HTTP reverse proxy: it puts the fence in
// front of any HTTP service, so that a job in any language fences its
// requests by sending one header, and the service itself changes nothing.
// `baton fence proxy` runs it.
//
// A request passes only with a current fencing token: the header
// Baton-Token (fence.HeaderToken), a decimal token, and, when the proxy has
// a key, Baton-Token-Sig (fence.HeaderSig), the token's signature. The
// fence's name is the proxy's fixed name (WithName) or else the request's
// Baton-Name header (fence.HeaderName). For each request the proxy
//
//  1. refuses a missing or malformed name or token with 400 Bad Request,
//     and so fence headers that could be read more than one way
//     (fence.ReadHeaders: a fence header repeated or comma-joined, named
//     in Connection or Trailer, spelt with '_', a token not in canonical
//     decimal);
//     with a key, it refuses a missing or wrong signature with 403
//     Forbidden;
//  2. waits for the other requests of the same name through this proxy to
//     finish (one at a time per name);
//  3. raises the fence in its state database (fence.CheckSignedTx) and
//     commits, or answers 409 Conflict to a token below the highest
//     accepted;
//  4. holds the fence (fence.HoldTx) and forwards the request, body
//     streamed as it arrives, and then the response, unchanged and flushed
//     as it comes, and releases the hold when the response has been sent.
//
// A refused request (400, 403, 409, or 503 when the state database cannot
// be reached) never reaches the upstream, and nothing of it moves the fence.
//
// # What it guarantees
//
// For one name and one state database: once a request with token t has
// been forwarded, no request with a token below t is forwarded afterwards,
// and a request forwarded with token t is not overtaken: no request with a
// higher token reaches the upstream until its response has been sent. This
// holds across proxy processes and Go writers sharing the state's fence
// table (fence.CheckTx, pgfence), because the raise is committed before
// the first byte is forwarded (a proxy that crashes while forwarding leaves
// the fence raised) and the hold keeps the table's newer checks waiting
// until the response is done.
//
// # What it does not guarantee
//
//   - Requests that reach the upstream by another path than this proxy are
//     not fenced.
//   - The raise happens before forwarding, so a request the upstream then
//     fails or never receives (502 Bad Gateway) has raised the fence all
//     the same: older tokens stay refused, as they must, since the proxy
//     cannot know how much of a request the upstream applied.
//   - The upstream may go on working on a request after its response has
//     been sent, or after the client has gone away (the proxy then cancels
//     the upstream request and releases the hold): that work is not held.
//   - Requests of one name are forwarded one at a time, including the time
//     the upstream takes and the time a slow client takes to send its body.
//     With an SQLite state the hold is the database's write lock: requests
//     of every name are forwarded one at a time, and a request that waits
//     for the lock longer than the database's busy timeout gets 503. Use
//     PostgreSQL for names in parallel.
//   - Without a key, tokens are not authenticated: a client that sends a
//     token higher than any election has issued (or a name nobody uses)
//     gets through, and the forged high token shuts out the real leader.
//     Give the proxy the key of `baton run --fence-key-file`.
//
// The upstream sees the fence the proxy checked, exactly: the proxy sets
// Baton-Name to the name it fenced (WithName's too), Baton-Token to the
// token in canonical decimal and Baton-Token-Sig to the signature it
// verified (none if there was none), so that a fenced upstream
// (fence.Middleware, or a database write fenced with the same token) can
// check again and sees what the proxy saw. Baton-Period is passed on as
// sent (once). Hop-by-hop headers are handled as by
// net/http/httputil.ReverseProxy, and X-Forwarded-For, -Host and -Proto are
// set.
package fenceproxy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/bound"
)

// Proxy is a fencing reverse proxy; it is an http.Handler. Make one with
// New. A Proxy is safe for concurrent use.
type Proxy struct {
	db   *sql.DB
	d    fence.Dialect
	key  *fence.Key
	name string
	rp   *httputil.ReverseProxy
	log  *slog.Logger

	mu    sync.Mutex
	locks map[string]*nameLock
}

// nameLock serialises the requests of one name. refs counts the requests
// holding or waiting for it; the entry is dropped at zero, so that a
// client sending many names does not grow the map for good.
type nameLock struct {
	ch   chan struct{}
	refs int
}

// config is what the options set.
type config struct {
	name      string
	key       *fence.Key
	transport http.RoundTripper
	log       *slog.Logger
}

// Option configures a Proxy.
type Option func(*config) error

// WithName fixes the name of the fence: requests need not carry the
// Baton-Name header, and a request whose Baton-Name names another fence is
// refused with 400. Without it, the name is the request's Baton-Name.
func WithName(name string) Option {
	return func(c *config) error {
		if name == "" {
			return optErr("name", `""`, "a fence name (leave WithName out to take each request's Baton-Name)")
		}
		c.name = name
		return nil
	}
}

// WithKey makes the proxy accept only tokens signed with k (the
// Baton-Token-Sig header, see fence.Key): any other is refused with 403
// before the fence is touched.
func WithKey(k *fence.Key) Option {
	return func(c *config) error {
		if k == nil {
			return optErr("key", "nil", "a *fence.Key (leave WithKey out for unsigned tokens)")
		}
		c.key = k
		return nil
	}
}

// WithTransport sets how requests are sent to the upstream; the default is
// http.DefaultTransport.
func WithTransport(t http.RoundTripper) Option {
	return func(c *config) error {
		if t == nil {
			return optErr("transport", "nil", "an http.RoundTripper (leave WithTransport out for http.DefaultTransport)")
		}
		c.transport = t
		return nil
	}
}

// WithLogger sets where the proxy logs the errors it answers 502 and 503
// for; the default discards them.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return optErr("logger", "nil", "a *slog.Logger (leave WithLogger out to discard)")
		}
		c.log = l
		return nil
	}
}

// New returns a proxy that forwards fenced requests to upstream (scheme
// http or https, with a host; its path is prepended to each request's),
// keeping the fence in db's table of dialect d (fence.SQLite or
// fence.Postgres, see fence.CreateTable, which New does not call). Open an
// SQLite db with _txlock=immediate and a busy timeout, as fence.CheckTx
// says. The caller closes db after the proxy's last request. A bad
// argument or option is an error wrapping a *baton.OptionError that names
// it.
func New(upstream *url.URL, db *sql.DB, d fence.Dialect, opts ...Option) (*Proxy, error) {
	if err := CheckUpstream(upstream); err != nil {
		return nil, err
	}
	if db == nil {
		return nil, optErr("db", "nil", "a *sql.DB holding the fence table")
	}
	if d.String() == "<zero Dialect>" {
		return nil, optErr("dialect", "<zero Dialect>", "fence.SQLite or fence.Postgres")
	}
	c := config{transport: http.DefaultTransport, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.key != nil {
		var err error
		if d, err = d.WithKey(c.key); err != nil {
			return nil, err
		}
	}
	p := &Proxy{db: db, d: d, key: c.key, name: c.name, log: c.log, locks: map[string]*nameLock{}}
	target := *upstream
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&target)
			pr.SetXForwarded()
			// After the hop-by-hop headers were removed: the one fence
			// that was checked, whatever the request spelt.
			if c, ok := pr.In.Context().Value(checkedKey{}).(checked); ok {
				h := pr.Out.Header
				h.Set(fence.HeaderName, c.name)
				h.Set(fence.HeaderToken, strconv.FormatUint(c.token, 10))
				h.Del(fence.HeaderSig)
				if c.sig != "" {
					h.Set(fence.HeaderSig, c.sig)
				}
			}
		},
		Transport:     c.transport,
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(c.log.Handler(), slog.LevelError),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil {
				p.log.Error("fenceproxy: forwarding failed", "method", r.Method, "path", r.URL.Path, "err", err)
			}
			http.Error(w, "baton fence proxy: the upstream did not answer: "+err.Error(), http.StatusBadGateway)
		},
	}
	return p, nil
}

// CheckUpstream returns an error unless u is an absolute http or https URL
// with a host and no query or fragment, as New requires. The error wraps
// a *baton.OptionError naming upstream.
func CheckUpstream(u *url.URL) error {
	switch {
	case u == nil:
		return optErr("upstream", "nil", "an http:// or https:// URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return optErr("upstream", fmt.Sprintf("%q (scheme %q)", u.Redacted(), u.Scheme), "http:// or https://")
	case u.Host == "":
		return optErr("upstream", fmt.Sprintf("%q (has no host)", u.Redacted()), "http://HOST[:PORT][/PATH]")
	case u.RawQuery != "" || u.Fragment != "":
		return optErr("upstream", fmt.Sprintf("%q (has a query or fragment)", u.Redacted()), "scheme, host and path only")
	}
	return nil
}

// ServeHTTP fences r and forwards it to the upstream (see the package
// doc for the statuses of a refused request).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, token, sig, err := p.fenceOf(r.Header)
	if err != nil {
		http.Error(w, "baton fence proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	if p.key != nil {
		if err := p.key.Verify(name, token, sig); err != nil {
			http.Error(w, "baton fence proxy: "+err.Error(), http.StatusForbidden)
			return
		}
	}
	release, err := p.admit(r.Context(), name, token, sig)
	if err != nil {
		p.refuse(w, r, err)
		return
	}
	defer release()
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), checkedKey{}, checked{name, token, sig})))
}

// checkedKey is the request context key of the fence the proxy checked.
type checkedKey struct{}

// checked is the fence the proxy checked, which the upstream sees.
type checked struct {
	name  string
	token uint64
	sig   string
}

// refuse answers a request that admit refused.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, fence.ErrStaleToken):
		http.Error(w, "baton fence proxy: "+err.Error(), http.StatusConflict)
	case errors.Is(err, fence.ErrBadSignature):
		http.Error(w, "baton fence proxy: "+err.Error(), http.StatusForbidden)
	case errors.Is(err, fence.ErrInvalidToken), errors.Is(err, fence.ErrNoFence):
		http.Error(w, "baton fence proxy: "+err.Error(), http.StatusBadRequest)
	case r.Context().Err() != nil:
		// The client has gone; nobody reads the answer.
		http.Error(w, "baton fence proxy: the request was canceled", http.StatusServiceUnavailable)
	default:
		p.log.Error("fenceproxy: cannot check the fence", "method", r.Method, "path", r.URL.Path, "err", err)
		http.Error(w, "baton fence proxy: cannot check the fence: the fence state is unavailable (see the proxy's log); nothing was forwarded", http.StatusServiceUnavailable)
	}
}

// fenceOf reads the fence of a request from its headers.
func (p *Proxy) fenceOf(h http.Header) (name string, token uint64, sig string, err error) {
	fw, err := fence.ReadHeaders(h)
	if err != nil {
		return "", 0, "", err
	}
	name = fw.Name
	switch {
	case p.name != "" && name != "" && name != p.name:
		return "", 0, "", fmt.Errorf("%w: header %s names %q, but this proxy fences %q only", fence.ErrNoFence, fence.HeaderName, name, p.name)
	case p.name != "":
		name = p.name
	case name == "":
		return "", 0, "", fmt.Errorf("%w: header %s is missing or empty (this proxy has no fixed name)", fence.ErrNoFence, fence.HeaderName)
	}
	if fw.Token == 0 {
		return "", 0, "", fmt.Errorf("%w: header %s is missing or empty", fence.ErrNoFence, fence.HeaderToken)
	}
	return name, fw.Token, fw.Sig, nil
}

// admit raises the fence of name to token, durably, and holds it; release
// ends the hold. On error nothing is held and the upstream must not see
// the request.
func (p *Proxy) admit(ctx context.Context, name string, token uint64, sig string) (release func(), err error) {
	unlock, err := p.lock(ctx, name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			unlock()
		}
	}()
	if err := p.raise(ctx, name, token, sig); err != nil {
		return nil, err
	}
	// The hold must last until the response is sent even when the client
	// goes away first: database/sql would roll tx back at once on a
	// canceled context.
	tx, err := p.db.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return nil, fmt.Errorf("fenceproxy: hold %q: %w", name, err)
	}
	if err := fence.HoldTx(ctx, tx, p.d, name, token); err != nil {
		tx.Rollback()
		return nil, err
	}
	return func() { tx.Rollback(); unlock() }, nil
}

// raise commits the fence check of name at token in a transaction of its
// own.
func (p *Proxy) raise(ctx context.Context, name string, token uint64, sig string) error {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fenceproxy: check %q: %w", name, err)
	}
	if err := fence.CheckSignedTx(ctx, tx, p.d, name, token, sig); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fenceproxy: check %q: commit: %w", name, err)
	}
	return nil
}

// lock waits for the requests of name through this proxy to finish, or
// for ctx to end.
func (p *Proxy) lock(ctx context.Context, name string) (unlock func(), err error) {
	p.mu.Lock()
	l := p.locks[name]
	if l == nil {
		l = &nameLock{ch: make(chan struct{}, 1)}
		p.locks[name] = l
	}
	l.refs++
	p.mu.Unlock()
	done := func() {
		p.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(p.locks, name)
		}
		p.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; done() }, nil
	case <-ctx.Done():
		done()
		return nil, context.Cause(ctx)
	}
}

// optErr returns the *baton.OptionError of option with value got, want
// formatted with a, wrapped in the package's name.
func optErr(option string, got any, want string, a ...any) error {
	return fmt.Errorf("fenceproxy: %w", bound.Errorf(option, got, want, a...))
}
