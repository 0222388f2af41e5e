package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for a PostgreSQL --state
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", for an SQLite --state

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/fenceproxy"
	"github.com/batonhq/baton/store/storeurl"
)

// The defaults of 'baton fence proxy'.
const (
	fenceProxyListen = "127.0.0.1:8089"
	fenceProxyState  = "sqlite:baton-fence.db"
	// fenceProxyDrain is how long a stopped proxy waits for the requests
	// in flight.
	fenceProxyDrain = 10 * time.Second
)

const fenceProxySynopsis = `fence proxy --upstream URL [--listen ADDR] [--state URL|PATH] [--key-file PATH] [--name NAME] [--allow-remote]

An HTTP reverse proxy that fences any HTTP service: it forwards a request to
--upstream only if it carries a current fencing token, and keeps the highest
token accepted per name in --state, so that a job in any language fences its
requests by sending the token baton run gave it:

  curl -fsS -H "Baton-Name: $BATON_NAME" -H "Baton-Token: $BATON_TOKEN" \
       -H "Baton-Token-Sig: $BATON_TOKEN_SIG" --data @invoice.json http://127.0.0.1:8089/invoices

The fence's name is --name, or else the request's Baton-Name header (with
--name, a request naming another fence is refused). For each request the
proxy raises the name's fence and commits it to --state before forwarding,
then holds it until the upstream's response has been sent, so that no newer
request of the name reaches the upstream meanwhile. Answers:

  400  Baton-Token missing, 0, above 2^63-1 or not in canonical decimal (0013,
       +13); Baton-Name missing (no --name) or not --name; a fence header
       (Baton-Name, Baton-Token, Baton-Token-Sig, Baton-Period) given twice or
       comma-joined, named in Connection or Trailer, or spelt with '_' (Baton_Token)
  403  with --key-file: Baton-Token-Sig missing or not the key's signature of
       the name and token (a forged token); the fence does not move
  409  a stale token: below the highest accepted for the name
  503  --state cannot be read or written
  502  the upstream did not answer (the fence was raised all the same)

A refused request never reaches the upstream. Everything else is forwarded
unchanged (bodies streamed both ways, the path appended to the upstream's),
but for the fence: the upstream sees Baton-Name and Baton-Token set to the
name and token the proxy checked, and Baton-Token-Sig to the signature it
verified, so that a fenced upstream can check again; X-Forwarded-For, -Host
and -Proto are set.

--state is the database of the fence table, baton_fence (name, token), the
table of package fence's CheckTx and pgfence, created if missing:
sqlite:PATH or a PATH (an SQLite file; default ` + fenceProxyState + `), or
postgres://USER@HOST/DB (add ?search_path=SCHEMA for another schema). Several
proxies, and Go writers, sharing one PostgreSQL table fence each other; with
SQLite, requests of every name are forwarded one at a time, and one that
waits over a minute for another gets 503.

Without --key-file anyone who can reach the proxy can send a forged high
token and shut the real leader out: give it the key of baton run
--fence-key-file. It listens on loopback only unless --allow-remote is
given. SIGINT or SIGTERM stops it; requests in flight get ` + "10s" + ` to finish.`

// runFenceProxy implements 'baton fence proxy'.
func runFenceProxy(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("fence proxy", fenceProxySynopsis)
	upstreamRaw := fs.String("upstream", "", "forward accepted requests to `URL` (http:// or https://, with a host; required)")
	listen := fs.String("listen", fenceProxyListen, "address to listen on (`HOST:PORT`; port 0 picks a free one)")
	state := fs.String("state", fenceProxyState, "the fence's durable state, `URL`: sqlite:PATH, a PATH, or postgres://USER@HOST/DB")
	keyFile := fs.String("key-file", "", "accept only tokens signed with the hex key in `PATH` (the key of baton run --fence-key-file); also $BATON_FENCE_KEY_FILE")
	name := fs.String("name", "", "fence every request under `NAME` (default: the request's Baton-Name header)")
	allowRemote := fs.Bool("allow-remote", false, "allow a --listen address that is not loopback")
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	e.secrets = append(e.secrets, storeurl.Secrets(*state)...)
	e.secrets = append(e.secrets, storeurl.Secrets(*upstreamRaw)...)
	const cmd = "fence proxy"
	if len(pos) > 0 {
		return e.fail(cmd, usagef("unexpected argument %q; baton fence proxy takes flags only", pos[0]))
	}
	upstream, err := parseUpstream(*upstreamRaw)
	if err != nil {
		return e.fail(cmd, err)
	}
	if err := checkProxyListen(*listen, *allowRemote); err != nil {
		return e.fail(cmd, err)
	}
	var opts []fenceproxy.Option
	if *name != "" {
		if err := checkName("--name", *name); err != nil {
			return e.fail(cmd, err)
		}
		opts = append(opts, fenceproxy.WithName(*name))
	}
	if *keyFile == "" {
		*keyFile = os.Getenv("BATON_FENCE_KEY_FILE")
	}
	if *keyFile != "" {
		key, err := fence.ReadKeyFile(*keyFile)
		if err != nil {
			return e.fail(cmd, usagef("invalid --key-file: %v", err))
		}
		opts = append(opts, fenceproxy.WithKey(key))
	}
	db, dialect, label, err := openFenceState(ctx, *state)
	if err != nil {
		return e.fail(cmd, err)
	}
	defer db.Close()
	logger := slog.New(slog.NewTextHandler(&scrubWriter{w: e.stderr, secrets: e.secrets}, nil))
	opts = append(opts, fenceproxy.WithLogger(logger))
	p, err := fenceproxy.New(upstream, db, dialect, opts...)
	if err != nil {
		return e.fail(cmd, usagef("%v", err))
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return e.fail(cmd, usagef("cannot listen on --listen %q: %v", *listen, errors.Unwrap(err)))
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	named := "the fence named by each request's Baton-Name"
	if *name != "" {
		named = fmt.Sprintf("the fence %q", *name)
	}
	signed := "unsigned tokens accepted (no --key-file)"
	if *keyFile != "" {
		signed = "signed tokens only"
	}
	fmt.Fprintf(e.stdout, "baton fence proxy: http://%s/ -> %s under %s, %s; state %s\n",
		ln.Addr(), upstream.Redacted(), named, signed, label)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return e.fail(cmd, err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), fenceProxyDrain)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
			return e.fail(cmd, fmt.Errorf("stopped with requests still in flight after %v: %w", fenceProxyDrain, err))
		}
		return exitOK
	}
}

// parseUpstream parses --upstream.
func parseUpstream(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, usagef("missing --upstream; want the URL of the service to fence, such as --upstream http://127.0.0.1:8080")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, usagef("invalid --upstream %q: not a URL; want http://HOST[:PORT][/PATH]", storeurl.Redact(raw))
	}
	if err := fenceproxy.CheckUpstream(u); err != nil {
		return nil, asUsage(err) // a baton.OptionError naming upstream
	}
	return u, nil
}

// checkProxyListen refuses an address that is not loopback, unless
// allowed.
func checkProxyListen(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("invalid --listen %q: %v; want HOST:PORT such as %s", addr, errors.Unwrap(err), fenceProxyListen)
	}
	ip := net.ParseIP(host)
	if allowRemote || host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	if host == "" {
		host = "every interface"
	}
	return usagef("refusing --listen %q: %s is not a loopback address, and whoever can connect reaches the upstream with any token it claims (a forged one too, without --key-file); pass --allow-remote to listen anyway", addr, host)
}

// openFenceState opens --state, checks that it answers and creates the
// fence table if it is missing. label is the state as it may be printed.
func openFenceState(ctx context.Context, raw string) (db *sql.DB, d fence.Dialect, label string, err error) {
	shown := storeurl.Redact(raw)
	scheme, rest, _ := strings.Cut(raw, ":")
	switch {
	case raw == "":
		return nil, d, "", usagef("empty --state; want sqlite:PATH, a PATH or postgres://USER@HOST/DB")
	case scheme == "postgres" || scheme == "postgresql":
		db, err = sql.Open("pgx", raw)
		d, label = fence.Postgres, shown
		if err == nil {
			// Each request in flight holds a connection; more wait.
			db.SetMaxOpenConns(32)
		}
	case scheme == "sqlite" || !strings.Contains(raw, "://"):
		path := raw
		if scheme == "sqlite" {
			path = rest
		}
		if path == "" || strings.HasPrefix(path, "//") {
			return nil, d, "", usagef("invalid --state %q: write sqlite:PATH (e.g. sqlite:/var/lib/baton-fence.db) or a PATH", shown)
		}
		abs, aerr := filepath.Abs(path)
		if aerr != nil {
			return nil, d, "", usagef("invalid --state %q: %v", shown, aerr)
		}
		p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(abs))
		// As fence.CheckTx asks: every transaction takes the write lock at
		// BEGIN; a request waits up to a minute for another's hold.
		db, err = sql.Open("sqlite", "file:"+p+"?_txlock=immediate&_pragma=busy_timeout(60000)&_pragma=journal_mode(wal)&_pragma=synchronous(full)")
		d, label = fence.SQLite, "sqlite:"+abs
	default:
		return nil, d, "", usagef("invalid --state %q: unknown scheme %q; want sqlite:PATH, a PATH or postgres://USER@HOST/DB", shown, scheme)
	}
	if err != nil {
		return nil, d, "", fmt.Errorf("--state %s: %w", label, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := fence.CreateTable(cctx, db, d); err != nil {
		db.Close()
		return nil, d, "", fmt.Errorf("--state %s: %w", label, err)
	}
	return db, d, label, nil
}

// scrubWriter writes to w with the secrets replaced (see storeurl.Scrub).
type scrubWriter struct {
	w       io.Writer
	secrets []string
}

func (s *scrubWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(s.w, storeurl.Scrub(string(b), s.secrets...)); err != nil {
		return 0, err
	}
	return len(b), nil
}
