package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/timeline"
	"github.com/batonhq/baton/schedule"
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

The store must be able to list its names (all four backends can); NAMEs add
names to show, or name what to show on a store that cannot list.

  GET  /                          the page
  GET  /api/jobs                  every name: name, holder, token, lease, last run
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
	if _, ok := st.(store.Lister); !ok && len(pos) == 0 {
		return e.fail("serve", usagef("this store cannot list its names; name the jobs to show: baton serve --store ... NAME..."))
	}
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
	page       *template.Template
	static     http.Handler

	mu      sync.Mutex
	watches map[string]*watch
}

func newServer(st store.Store, label string, extra []string, refresh time.Duration, adminToken string) (*server, error) {
	sub, err := fs.Sub(webFS, "web")
	if err != nil {
		return nil, err
	}
	page, err := template.New("page.html").Funcs(template.FuncMap{
		"time": func(t *time.Time) string {
			if t == nil {
				return "-"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"secs": func(f float64) string {
			return (time.Duration(f * float64(time.Second))).Round(time.Millisecond).String()
		},
		"css": func() template.CSS { return template.CSS(timeline.CSS) },
		"legend": func() template.HTML {
			return timeline.Legend(timeline.Item{Class: "held", Text: "held (label: token)"},
				timeline.Item{Class: "band", Text: "nobody held it"},
				timeline.Item{Class: "event", Shape: "diamond", Text: "acquired / taken over / transferred"},
				timeline.Item{Class: "lost", Shape: "circle", Text: "released"},
				timeline.Item{Class: "trigger", Shape: "triangle", Text: "handover requested"})
		},
	}).ParseFS(webFS, "web/page.html")
	if err != nil {
		return nil, err
	}
	s := &server{st: st, storeLabel: label, extra: extra, refresh: refresh, page: page,
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
	mux.HandleFunc("GET /api/jobs/{name}", s.handleJob)
	mux.HandleFunc("POST /api/jobs/{name}/{action}", s.handleAction)
	return securityHeaders(mux)
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

// names lists the names to show: the store's and the extra ones.
func (s *server) names(ctx context.Context) ([]string, error) {
	names := slices.Clone(s.extra)
	if l, ok := s.st.(store.Lister); ok {
		n, err := l.Names(ctx)
		if err != nil {
			return nil, err
		}
		names = append(names, n...)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// read reads one name, carrying its observation across requests. Reads
// are serialized: the observation is per server.
func (s *server) read(ctx context.Context, name string) (jobDetail, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.watches[name]
	if w == nil {
		w = &watch{}
		s.watches[name] = w
	}
	return readJob(ctx, s.st, name, w, time.Now())
}

func (s *server) readAll(ctx context.Context) ([]jobDetail, error) {
	names, err := s.names(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]jobDetail, 0, len(names))
	for _, n := range names {
		d, err := s.read(ctx, n)
		if err != nil {
			d.Error = err.Error()
		}
		out = append(out, d)
	}
	return out, nil
}

// card is one name as the page draws it.
type card struct {
	jobDetail
	Chart template.HTML
}

type pageData struct {
	Store     string
	RefreshMS int64
	Admin     bool
	Jobs      []card
	Err       string
	Now       string
}

func (s *server) data(ctx context.Context) pageData {
	pd := pageData{Store: s.storeLabel, RefreshMS: s.refresh.Milliseconds(), Admin: s.admin,
		Now: time.Now().UTC().Format("15:04:05Z")}
	jobs, err := s.readAll(ctx)
	if err != nil {
		pd.Err = escape.String(readErr(s.storeLabel, err).Error())
	}
	for _, d := range jobs {
		d = printableDetail(d) // html/template escapes HTML, not control characters
		pd.Jobs = append(pd.Jobs, card{jobDetail: d, Chart: historyChart(d)})
	}
	return pd
}

func (s *server) handlePage(w http.ResponseWriter, r *http.Request) {
	s.render(w, "page.html", s.data(r.Context()))
}

func (s *server) handleFragment(w http.ResponseWriter, r *http.Request) {
	s.render(w, "jobs", s.data(r.Context()))
}

func (s *server) render(w http.ResponseWriter, name string, data pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.page.ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (s *server) handleList(w http.ResponseWriter, r *http.Request) {
	jobs, err := s.readAll(r.Context())
	if err != nil {
		jsonError(w, http.StatusServiceUnavailable, readErr(s.storeLabel, err).Error())
		return
	}
	list := make([]jobSummary, 0, len(jobs))
	for _, d := range jobs {
		list = append(list, d.jobSummary)
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *server) handleJob(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	d, err := s.read(r.Context(), name)
	if err != nil {
		jsonError(w, http.StatusServiceUnavailable, readErr(s.storeLabel, err).Error())
		return
	}
	if d.Updated == nil && len(d.Runs) == 0 && len(d.History) == 0 {
		jsonError(w, http.StatusNotFound, fmt.Sprintf("%s: no election record and no runs in this store", name))
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// authorized checks the admin token in constant time (of the token's
// SHA-256, so its length does not leak either).
func (s *server) authorized(r *http.Request) (bool, string) {
	if !s.admin {
		return false, "actions are disabled: start baton serve with --admin-token-file PATH (or $BATON_ADMIN_TOKEN)"
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	h := sha256.Sum256([]byte(got))
	if !ok || subtle.ConstantTimeCompare(h[:], s.adminHash[:]) != 1 {
		return false, "missing or wrong admin token: send it as the header \"Authorization: Bearer TOKEN\""
	}
	return true, ""
}

func (s *server) handleAction(w http.ResponseWriter, r *http.Request) {
	if ok, why := s.authorized(r); !ok {
		jsonError(w, http.StatusForbidden, why)
		return
	}
	name, action := r.PathValue("name"), r.PathValue("action")
	q := r.URL.Query()
	ctx := r.Context()
	switch action {
	case "trigger":
		key := q.Get("period")
		if key == "" {
			key = schedule.Key(time.Now())
		} else if _, err := schedule.ParseKey(key); err != nil {
			jsonError(w, http.StatusBadRequest, "invalid period: "+err.Error())
			return
		}
		if err := scheduled(ctx, s.st, name); err != nil {
			jsonError(w, http.StatusNotFound, err.Error()+"; nothing written")
			return
		}
		run, err := schedule.Trigger(ctx, s.st, name, key)
		if err != nil {
			jsonError(w, http.StatusConflict, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"job": name, "period": key, "state": run.State})
	case "resign", "transfer":
		to := q.Get("to")
		if action == "transfer" && to == "" {
			jsonError(w, http.StatusBadRequest, "transfer needs ?to=NODE")
			return
		}
		var tok uint64
		if t := q.Get("token"); t != "" {
			v, err := strconv.ParseUint(t, 10, 64)
			if err != nil {
				jsonError(w, http.StatusBadRequest, "invalid token "+strconv.Quote(t)+"; want a decimal fencing token")
				return
			}
			tok = v
		} else {
			rec, err := s.st.Get(ctx, name)
			if err != nil {
				jsonError(w, http.StatusNotFound, err.Error())
				return
			}
			tok = rec.Token
		}
		var err error
		if action == "transfer" {
			// As 'baton transfer': a target that does not campaign would
			// leave the name leaderless until the lease runs out.
			if err := campaigning(ctx, s.st, name, to); errors.Is(err, errNotWaiting) {
				jsonError(w, http.StatusConflict, err.Error())
				return
			} else if err != nil {
				jsonError(w, http.StatusServiceUnavailable, err.Error())
				return
			}
			err = baton.Transfer(ctx, s.st, name, to, tok)
		} else {
			err = baton.RequestResign(ctx, s.st, name, tok)
		}
		switch {
		case errors.Is(err, baton.ErrStaleToken), errors.Is(err, baton.ErrNotLeader):
			jsonError(w, http.StatusConflict, "refused: "+err.Error())
		case err != nil:
			jsonError(w, http.StatusServiceUnavailable, err.Error())
		default:
			writeJSON(w, http.StatusOK, map[string]any{"name": name, "action": action, "token": tok, "to": to})
		}
	default:
		jsonError(w, http.StatusNotFound, "unknown action "+strconv.Quote(action)+"; want trigger, resign or transfer")
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func jsonError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
