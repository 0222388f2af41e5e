package main

import (
	"context"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

//go:embed web
var webFS embed.FS

const serveSynopsis = `serve [--store URL] [--listen ADDR] [--admin-token-file PATH] [--allow-remote] [NAME...]

Serves a live status page and a JSON API over every name in a store: who
holds it, with which token, the lease left as seen from this server's clock,
the newest ledger rows with their delays and outcomes, and the election log
drawn as a timeline. The page refreshes itself every --refresh without a
reload; it loads nothing from the internet (its assets are in the binary).

The page shows a summary (names by state, the largest holders), a table of
one page of names that can be filtered (prefix, state, holder) and the
detail of one name; each refresh reads that page and one name, never every
name, so 100,000 names read as fast as ten. NAMEs restrict it to those
names; without, it shows every name of the store (all four backends list
their names a page at a time).

  GET  /                          the page (?prefix= &state= &holder= &session= &cursor= &name=)
  GET  /api/jobs                  one page of names: {"jobs": [...], "next": CURSOR}; query
                                  limit (1-1000, default 100), cursor (the previous "next"),
                                  prefix, holder, session, state (held, probably-dead,
                                  session-ended, free). A filtered page may be short
                                  before the end: go on while "next" is not empty
  GET  /api/summary               counts by state, holder and session, counted at most
                                  --refresh ago (counted_at says when)
  GET  /api/jobs/NAME             one name with its ledger rows and election log
  POST /api/jobs/NAME/trigger     ?period=KEY (default now): a durable manual run
  POST /api/jobs/NAME/resign      ?token=T (default the current token)
  POST /api/jobs/NAME/transfer    ?to=NODE&token=T

Reading needs nothing. The POST actions answer 403 unless serve was started
with --admin-token, --admin-token-file or $BATON_ADMIN_TOKEN and the request
carries it in the header "Authorization: Bearer TOKEN". serve listens on
loopback only unless --allow-remote is given: the page shows node names and
the ledger to anyone who can connect, and the admin token travels in clear
HTTP (put TLS in front).`

func runServe(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("serve", serveSynopsis)
	storeURL := storeFlag(fs)
	listen := fs.String("listen", "127.0.0.1:7070", "address to serve on (HOST:PORT; port 0 picks a free one)")
	adminToken := fs.String("admin-token", "", "enable the POST actions for requests that carry this `TOKEN` (visible in ps: prefer --admin-token-file or $BATON_ADMIN_TOKEN)")
	fs.Func("admin-token-file", "read the admin token from the first line of `PATH`", func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("cannot read the admin token: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if *adminToken = strings.TrimSpace(line); *adminToken == "" {
			return fmt.Errorf("%s holds no admin token on its first line", path)
		}
		return nil
	})
	allowRemote := fs.Bool("allow-remote", false, "allow a --listen address that is not loopback")
	refresh := fs.Duration("refresh", time.Second, "how often the page refreshes itself")
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	if *adminToken == "" {
		*adminToken = os.Getenv("BATON_ADMIN_TOKEN")
	}
	if *refresh < 100*time.Millisecond {
		return e.fail("serve", usagef("invalid --refresh %v; want 100ms or more", *refresh))
	}
	if err := checkListen(*listen, *allowRemote); err != nil {
		return e.fail("serve", err)
	}
	st, err := e.openStore(ctx, *storeURL)
	if err != nil {
		return e.fail("serve", err)
	}
	defer st.Close()
	label, err := resolveStoreURL(*storeURL)
	if err != nil {
		return e.fail("serve", err)
	}
	s, err := newServer(st, storeurl.Redact(label), pos, *refresh, *adminToken)
	if err != nil {
		return e.fail("serve", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return e.fail("serve", usagef("cannot listen on --listen %q: %v", *listen, errors.Unwrap(err)))
	}
	srv := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 5 * time.Second}
	actions := "POST actions disabled (no --admin-token)"
	if s.admin {
		actions = "POST actions enabled with the admin token"
	}
	fmt.Fprintf(e.stdout, "baton serve: http://%s/ over %s; %s\n", ln.Addr(), s.storeLabel, actions)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return e.fail("serve", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return exitOK
	}
}

// checkListen refuses an address that is not loopback, unless allowed.
func checkListen(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("invalid --listen %q: %v; want HOST:PORT such as 127.0.0.1:7070", addr, errors.Unwrap(err))
	}
	if allowRemote {
		return nil
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	if host == "" {
		host = "every interface"
	}
	return usagef("refusing --listen %q: %s is not a loopback address and the page shows holders and ledgers to anyone who connects; pass --allow-remote to serve it anyway (behind TLS if you use --admin-token)", addr, host)
}

// server is the state of 'baton serve'.
type server struct {
	st         store.Store
	storeLabel string
	extra      []string
	refresh    time.Duration
	admin      bool
	adminHash  [32]byte
	static     http.Handler

	mu      sync.Mutex
	watches map[string]*watch

	sumMu   sync.Mutex
	sum     inspect.Summary
	sumAt   time.Time     // when sum was read (zero: never)
	sumTook time.Duration // how long that took
	sumBusy bool          // a count runs in the background
}

func newServer(st store.Store, label string, extra []string, refresh time.Duration, adminToken string) (*server, error) {
	sub, err := fs.Sub(webFS, "web")
	if err != nil {
		return nil, err
	}
	s := &server{st: st, storeLabel: label, extra: extra, refresh: refresh,
		static: http.FileServerFS(sub), watches: map[string]*watch{}}
	if adminToken != "" {
		s.admin, s.adminHash = true, sha256.Sum256([]byte(adminToken))
	}
	return s, nil
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.handlePage)
	mux.HandleFunc("GET /fragment", s.handleFragment)
	mux.Handle("GET /static/", http.StripPrefix("/static/", s.static))
	mux.HandleFunc("GET /api/jobs", s.handleList)
	mux.HandleFunc("GET /api/summary", s.handleSummary)
	mux.HandleFunc("GET /api/jobs/{name}", s.handleJob)
	mux.HandleFunc("POST /api/jobs/{name}/{action}", s.handleAction)
	return securityHeaders(mux)
}

// pageQuery is the page's relative URL "?QUERY" for q with key set to val
// (an empty val drops it): the links of the table and the pager. It is a
// relative URL, so no value chooses its scheme; its values are escaped
// by url.Values.
func pageQuery(q inspect.ListQuery, key, val string) string {
	v := url.Values{}
	for k, x := range map[string]string{"prefix": q.Prefix, "holder": q.Holder, "session": q.Session, "state": q.State, "cursor": q.After} {
		if x != "" {
			v.Set(k, x)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if val == "" {
		v.Del(key)
	} else {
		v.Set(key, val)
	}
	return "?" + v.Encode()
}

// securityHeaders keeps the page from loading anything but itself.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// names returns the names serve is restricted to (nil: every name).
func (s *server) names() []string {
	if len(s.extra) == 0 {
		return nil
	}
	return s.extra
}

// card is one name as the page draws it.
type card struct {
	jobDetail
	Chart string // markup from package timeline, every text in it escaped
}

type pageData struct {
	Store     string
	RefreshMS int64
	Admin     bool
	Query     inspect.ListQuery
	States    []string
	Summary   inspect.Summary
	SummaryAt string
	Page      jobPage
	Detail    *card
	Selected  string
	Err       string
	Now       string
}

func (s *server) data(r *http.Request) pageData {
	ctx := r.Context()
	pd := pageData{Store: s.storeLabel, RefreshMS: s.refresh.Milliseconds(), Admin: s.admin, States: inspect.States,
		Now: time.Now().UTC().Format("15:04:05Z")}
	q, err := listQuery(r)
	if err != nil {
		pd.Err = escape.String(err.Error())
		q = inspect.ListQuery{}
	}
	pd.Query = q
	fail := func(err error) {
		if pd.Err == "" {
			pd.Err = escape.String(readErr(s.storeLabel, err).Error())
		}
	}
	if sum, at, err := s.summary(ctx, 5*s.refresh); err != nil {
		fail(err)
	} else {
		pd.Summary, pd.SummaryAt = sum, at.UTC().Format("15:04:05Z")
	}
	if pd.Page, err = s.listPage(ctx, q); err != nil {
		fail(err)
	}
	pd.Selected = r.URL.Query().Get("name")
	if pd.Selected == "" && len(pd.Page.Jobs) > 0 {
		pd.Selected = pd.Page.Jobs[0].Name
	}
	if pd.Selected != "" {
		d, err := s.read(ctx, pd.Selected)
		if err != nil {
			d.Error = err.Error()
		}
		d = printableDetail(d) // the page escapes HTML, not control characters
		pd.Detail = &card{jobDetail: d, Chart: historyChart(d)}
	}
	return pd
}

func (s *server) handlePage(w http.ResponseWriter, r *http.Request) {
	s.render(w, renderPage, s.data(r))
}

func (s *server) handleFragment(w http.ResponseWriter, r *http.Request) {
	s.render(w, renderJobs, s.data(r))
}

func (s *server) render(w http.ResponseWriter, draw func(*htmlPage, pageData), data pageData) {
	var p htmlPage
	draw(&p, data)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	io.WriteString(w, p.String())
}
