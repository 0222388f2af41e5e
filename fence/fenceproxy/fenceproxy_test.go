package fenceproxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/fenceproxy"
	"github.com/batonhq/baton/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// A backend opens the fence state: n handles on one database, as n proxy
// processes would have.
type backend struct {
	name    string
	dialect fence.Dialect
	open    func(t testing.TB, n int) []*sql.DB
}

var backends = []backend{
	{"sqlite", fence.SQLite, func(t testing.TB, n int) []*sql.DB {
		path := filepath.Join(t.TempDir(), "fence.db")
		var dbs []*sql.DB
		for range n {
			db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(30000)&_pragma=journal_mode(wal)")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			dbs = append(dbs, db)
		}
		return dbs
	}},
	{"postgres", fence.Postgres, func(t testing.TB, n int) []*sql.DB {
		u := pgtest.Start(t)
		var dbs []*sql.DB
		for range n {
			db, err := sql.Open("pgx", u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			dbs = append(dbs, db)
		}
		return dbs
	}},
}

// upstream is a real HTTP service behind the proxy that records what
// reaches it.
type upstream struct {
	srv      *httptest.Server
	mu       sync.Mutex
	tokens   []uint64 // Baton-Token of each request, in arrival order
	overlaps int      // requests that arrived while another was in flight
	inflight atomic.Int32
	hold     time.Duration // how long each request is worked on
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.inflight.Add(1) > 1 {
			u.mu.Lock()
			u.overlaps++
			u.mu.Unlock()
		}
		defer u.inflight.Add(-1)
		tok, _ := strconv.ParseUint(r.Header.Get(fence.HeaderToken), 10, 64)
		u.mu.Lock()
		u.tokens = append(u.tokens, tok)
		u.mu.Unlock()
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		time.Sleep(u.hold)
		w.Header().Set("X-Body-Sha256", hex.EncodeToString(h.Sum(nil)))
		w.Header().Set("X-Body-Len", strconv.FormatInt(n, 10))
		w.Header().Set("X-Path", r.URL.RequestURI())
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "applied token %d for %s\n", tok, r.Header.Get(fence.HeaderName))
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) seen() []uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]uint64(nil), u.tokens...)
}

// newProxy starts a proxy in front of up, with its state in db.
func newProxy(t testing.TB, up *upstream, db *sql.DB, d fence.Dialect, opts ...fenceproxy.Option) *httptest.Server {
	t.Helper()
	if err := fence.CreateTable(context.Background(), db, d); err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(up.srv.URL + "/api")
	p, err := fenceproxy.New(target, db, d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv
}

// send posts body through the proxy with the fence headers given (an
// empty value leaves the header out).
func send(t *testing.T, proxy, name, token, sig string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, proxy+"/invoices?x=1", body)
	if err != nil {
		t.Fatal(err)
	}
	for h, v := range map[string]string{fence.HeaderName: name, fence.HeaderToken: token, fence.HeaderSig: sig} {
		if v != "" {
			req.Header.Set(h, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// stored returns the fence table's token for name, 0 if it has no row.
func stored(t *testing.T, db *sql.DB, name string) uint64 {
	t.Helper()
	var tok int64
	err := db.QueryRow(`SELECT token FROM baton_fence WHERE name = '` + name + `'`).Scan(&tok)
	if errors.Is(err, sql.ErrNoRows) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return uint64(tok)
}

func each(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

// A current token is forwarded with its whole body, streamed, and the
// response comes back unchanged; a stale one gets 409 and the upstream
// sees nothing of it.
func TestForwardAndStale(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		db := b.open(t, 1)[0]
		up := newUpstream(t)
		proxy := newProxy(t, up, db, b.dialect)

		body := make([]byte, 8<<20)
		rand.NewChaCha8([32]byte{1}).Read(body)
		sum := sha256.Sum256(body)
		// io.MultiReader hides the length: the body goes chunked, as a
		// stream of unknown size.
		resp, text := send(t, proxy.URL, "billing", "5", "", io.MultiReader(bytes.NewReader(body)))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("token 5: %s %s", resp.Status, text)
		}
		if got := resp.Header.Get("X-Body-Sha256"); got != hex.EncodeToString(sum[:]) {
			t.Errorf("upstream got a body with sha256 %s (%s bytes), want %x (%d bytes)", got, resp.Header.Get("X-Body-Len"), sum, len(body))
		}
		if got := resp.Header.Get("X-Path"); got != "/api/invoices?x=1" {
			t.Errorf("upstream path %q", got)
		}
		if text != "applied token 5 for billing\n" {
			t.Errorf("response body %q", text)
		}
		if got := stored(t, db, "billing"); got != 5 {
			t.Errorf("fence at %d after token 5", got)
		}

		resp, text = send(t, proxy.URL, "billing", "4", "", strings.NewReader("late invoice"))
		if resp.StatusCode != http.StatusConflict || !strings.Contains(text, "stale") {
			t.Fatalf("token 4 after 5: %s %q, want 409 naming a stale token", resp.Status, text)
		}
		resp, _ = send(t, proxy.URL, "billing", "5", "", strings.NewReader("same term"))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("token 5 again: %s", resp.Status)
		}
		if got := up.seen(); fmt.Sprint(got) != "[5 5]" {
			t.Errorf("upstream saw tokens %v, want [5 5]", got)
		}
		if got := stored(t, db, "billing"); got != 5 {
			t.Errorf("fence at %d, want 5", got)
		}
	})
}

// With a key, a forged token (the largest there is, unsigned or signed
// with another key) gets 403 and the fence does not move; a signed one
// passes.
func TestForgedToken(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		db := b.open(t, 1)[0]
		up := newUpstream(t)
		key, _ := fence.NewKey([]byte("0123456789abcdef0123456789abcdef"))
		other, _ := fence.NewKey([]byte("fedcba9876543210fedcba9876543210"))
		proxy := newProxy(t, up, db, b.dialect, fenceproxy.WithKey(key))

		resp, text := send(t, proxy.URL, "billing", "3", key.Sign("billing", 3), nil)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("signed token 3: %s %s", resp.Status, text)
		}
		const forged = "18446744073709551615"
		for _, sig := range []string{"", "00", other.Sign("billing", 18446744073709551615), key.Sign("billing", 3), key.Sign("other", 18446744073709551615)} {
			resp, text := send(t, proxy.URL, "billing", forged, sig, strings.NewReader("forged"))
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("forged token with sig %q: %s %q, want 403", sig, resp.Status, text)
			}
		}
		// Unsigned current token: refused too.
		if resp, _ := send(t, proxy.URL, "billing", "3", "", nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("unsigned token 3: %s, want 403", resp.Status)
		}
		if got := stored(t, db, "billing"); got != 3 {
			t.Errorf("fence at %d after the forgeries, want 3", got)
		}
		if got := up.seen(); fmt.Sprint(got) != "[3]" {
			t.Errorf("upstream saw tokens %v, want [3]", got)
		}
		resp, _ = send(t, proxy.URL, "billing", "4", key.Sign("billing", 4), nil)
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("signed token 4: %s", resp.Status)
		}
	})
}

// Missing or malformed fences get 400, a fixed name refuses another name,
// a state database that is gone gets 503; the upstream sees none of them.
func TestRefused(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		dbs := b.open(t, 2)
		up := newUpstream(t)
		byHeader := newProxy(t, up, dbs[0], b.dialect)
		fixed := newProxy(t, up, dbs[0], b.dialect, fenceproxy.WithName("billing"))
		for _, c := range []struct {
			proxy             *httptest.Server
			name, token, want string
			code              int
		}{
			{byHeader, "", "5", "Baton-Name is missing", 400},
			{byHeader, "billing", "", "Baton-Token is missing", 400},
			{byHeader, "billing", "0", "is 0", 400},
			{byHeader, "billing", "-1", "not a decimal", 400},
			{byHeader, "billing", "18446744073709551616", "not a decimal", 400},
			{byHeader, "billing", "9223372036854775808", "above", 400},
			{fixed, "payroll", "5", `fences "billing" only`, 400},
		} {
			resp, text := send(t, c.proxy.URL, c.name, c.token, "", strings.NewReader("x"))
			if resp.StatusCode != c.code || !strings.Contains(text, c.want) {
				t.Errorf("name %q token %q: %s %q, want %d containing %q", c.name, c.token, resp.Status, text, c.code, c.want)
			}
		}
		if resp, text := send(t, fixed.URL, "", "7", "", nil); resp.StatusCode != http.StatusCreated {
			t.Errorf("fixed name, no Baton-Name: %s %s", resp.Status, text)
		}
		if got := stored(t, dbs[1], "billing"); got != 7 {
			t.Errorf("fence at %d, want 7", got)
		}
		dbs[0].Close()
		if resp, text := send(t, byHeader.URL, "billing", "8", "", nil); resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("state closed: %s %q, want 503", resp.Status, text)
		}
		if got := up.seen(); fmt.Sprint(got) != "[7]" {
			t.Errorf("upstream saw tokens %v, want [7]", got)
		}
		if got := stored(t, dbs[1], "billing"); got != 7 {
			t.Errorf("fence at %d, want 7", got)
		}
	})
}

// Many requests with random tokens at once, through two proxies on one
// state database (two processes): the requests that reach the upstream
// never go back in token, never overlap (none is overtaken while it is
// forwarded), and are exactly those answered by the upstream; the fence
// ends at the last one.
func TestConcurrentRandomTokens(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 0))
		dbs := b.open(t, 2)
		up := newUpstream(t)
		up.hold = time.Millisecond
		proxies := []*httptest.Server{newProxy(t, up, dbs[0], b.dialect), newProxy(t, up, dbs[1], b.dialect)}
		const n = 60
		tokens := make([]uint64, n)
		for i := range tokens {
			tokens[i] = 1 + rng.Uint64N(4)
		}
		codes := make([]int, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, proxies[i%2].URL+"/w", strings.NewReader("line"))
				fence.SetHeaders(req, "billing", tokens[i])
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs[i] = err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes[i] = resp.StatusCode
			})
		}
		wg.Wait()
		accepted := 0
		for i := range n {
			switch {
			case errs[i] != nil:
				t.Fatalf("request %d (token %d): %v", i, tokens[i], errs[i])
			case codes[i] == http.StatusCreated:
				accepted++
			case codes[i] == http.StatusConflict:
			default:
				t.Fatalf("request %d (token %d): status %d", i, tokens[i], codes[i])
			}
		}
		got := up.seen()
		if len(got) != accepted {
			t.Fatalf("%d requests accepted, the upstream saw %d", accepted, len(got))
		}
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				t.Fatalf("forwarded tokens went back: %v", got)
			}
		}
		if up.overlaps != 0 {
			t.Errorf("%d requests reached the upstream while another was in flight", up.overlaps)
		}
		if h := stored(t, dbs[0], "billing"); h != got[len(got)-1] {
			t.Errorf("fence at %d, last forwarded %d", h, got[len(got)-1])
		}
		t.Logf("%d of %d forwarded: %v", accepted, n, got)
	})
}

func TestNewRefusesBadUpstream(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for raw, want := range map[string]string{
		"ftp://host/":         `scheme "ftp"`,
		"http:///path":        "no host",
		"localhost:8080":      `scheme "localhost"`,
		"http://h/?q=1":       "query",
		"http://u:secret@/p/": "no host",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		_, err = fenceproxy.New(u, db, fence.SQLite)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("upstream %q: %v, want an error containing %q", raw, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("upstream %q: the error quotes the password: %v", raw, err)
		}
	}
	if _, err := fenceproxy.New(&url.URL{Scheme: "http", Host: "h"}, db, fence.Dialect{}); err == nil {
		t.Error("zero Dialect accepted")
	}
}
