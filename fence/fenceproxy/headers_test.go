package fenceproxy_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/fenceproxy"
)

// headerUpstream records the headers of every request that reaches it.
type headerUpstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func newHeaderUpstream(t *testing.T) *headerUpstream {
	u := &headerUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Header.Clone())
		u.mu.Unlock()
		io.Copy(io.Discard, r.Body)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *headerUpstream) take() []http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.seen
	u.seen = nil
	return s
}

// rawRequest writes a request with header lines exactly as given to addr
// over a plain connection, so that no HTTP client can normalise them,
// and returns the response's status and body.
func rawRequest(t *testing.T, addr string, lines ...string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	req := "POST /invoices HTTP/1.1\r\nHost: proxy\r\nContent-Length: 0\r\n" + strings.Join(lines, "\r\n")
	if len(lines) > 0 {
		req += "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// docs/SECURITY.md, "the proxy": a request whose fence headers could be
// read more than one way is refused with 400 and one line, never
// forwarded, and moves no fence (the reproductions of issue 42: two
// tokens 11 and 3, two names f and other, Connection naming the fence
// headers, 0013); a request that passes reaches the upstream with exactly
// the name and token the proxy checked.
func TestAmbiguousFenceHeadersRefused(t *testing.T) {
	b := backends[0] // the headers are read before any state is touched
	db := b.open(t, 1)[0]
	up := newHeaderUpstream(t)
	target := up.srv.URL
	proxy := newProxyTo(t, target, db, b.dialect)
	addr := strings.TrimPrefix(proxy.URL, "http://")

	for _, c := range []struct {
		name  string
		lines []string
	}{
		{"two token lines", []string{"Baton-Name: f", "Baton-Token: 11", "Baton-Token: 3"}},
		{"two name lines", []string{"Baton-Name: f", "Baton-Name: other", "Baton-Token: 11"}},
		{"two token lines in other cases", []string{"Baton-Name: f", "baton-token: 11", "BATON-TOKEN: 3"}},
		{"comma-joined tokens", []string{"Baton-Name: f", "Baton-Token: 11, 3"}},
		{"comma-joined names", []string{"Baton-Name: f, other", "Baton-Token: 11"}},
		{"two signatures", []string{"Baton-Name: f", "Baton-Token: 11", "Baton-Token-Sig: aa", "Baton-Token-Sig: bb"}},
		{"two periods", []string{"Baton-Name: f", "Baton-Token: 11", "Baton-Period: p1", "Baton-Period: p2"}},
		{"Connection names both", []string{"Baton-Name: f", "Baton-Token: 11", "Connection: Baton-Token, Baton-Name"}},
		{"Connection names the token in lower case", []string{"Baton-Name: f", "Baton-Token: 11", "Connection: keep-alive, baton-token"}},
		{"Connection names a look-alike", []string{"Baton-Name: f", "Baton-Token: 11", "Connection: Baton_Token"}},
		{"Trailer names the token", []string{"Baton-Name: f", "Baton-Token: 11", "Trailer: Baton-Token"}},
		{"leading zeros", []string{"Baton-Name: f", "Baton-Token: 0013"}},
		{"a plus sign", []string{"Baton-Name: f", "Baton-Token: +13"}},
		{"a space inside", []string{"Baton-Name: f", "Baton-Token: 1 3"}},
		{"negative", []string{"Baton-Name: f", "Baton-Token: -1"}},
		{"above uint64", []string{"Baton-Name: f", "Baton-Token: 18446744073709551616"}},
		{"zero", []string{"Baton-Name: f", "Baton-Token: 0"}},
		{"an underscore look-alike beside the token", []string{"Baton-Name: f", "Baton-Token: 13", "Baton_Token: 99"}},
		{"an underscore look-alike alone", []string{"Baton-Name: f", "Baton_Token: 13"}},
		{"a name look-alike", []string{"Baton-Name: f", "Baton_Name: other", "Baton-Token: 13"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body := rawRequest(t, addr, c.lines...)
			seen := up.take()
			if code != http.StatusBadRequest || strings.Count(body, "\n") != 1 || !strings.HasSuffix(body, "\n") {
				t.Fatalf("%q: %d %q; want 400 and one line", c.lines, code, body)
			}
			t.Logf("%d %s", code, strings.TrimSpace(body))
			if len(seen) != 0 {
				t.Fatalf("%q was forwarded: the upstream saw %v", c.lines, seen)
			}
			for _, n := range []string{"f", "other"} {
				if h := stored(t, db, n); h != 0 {
					t.Fatalf("%q moved the fence of %q to %d", c.lines, n, h)
				}
			}
		})
	}

	// What passes is what the upstream sees: one name, one token, in
	// canonical form, and the signature when there is one.
	for _, c := range []struct {
		lines     []string
		name, tok string
	}{
		{[]string{"Baton-Name: f", "Baton-Token: 13"}, "f", "13"},
		{[]string{"baton-name: f", "baton-token: 14"}, "f", "14"},
		{[]string{"Baton-Name: f", "Baton-Token:  15 ", "Connection: keep-alive"}, "f", "15"},
	} {
		code, body := rawRequest(t, addr, c.lines...)
		if code != http.StatusOK {
			t.Fatalf("%q: %d %q", c.lines, code, body)
		}
		seen := up.take()
		if len(seen) != 1 {
			t.Fatalf("%q: the upstream saw %d requests", c.lines, len(seen))
		}
		h := seen[0]
		if got := fmt.Sprint(h[fence.HeaderName], h[fence.HeaderToken], h[fence.HeaderSig]); got != fmt.Sprint([]string{c.name}, []string{c.tok}, []string(nil)) {
			t.Fatalf("%q: the upstream saw name, token, sig %s; want [%s] [%s] []", c.lines, got, c.name, c.tok)
		}
	}
}

// With a fixed name (WithName) and no Baton-Name, the upstream sees the
// name the proxy fenced; with a key, the signature it verified.
func TestUpstreamSeesTheCheckedFence(t *testing.T) {
	b := backends[0]
	db := b.open(t, 1)[0]
	up := newHeaderUpstream(t)
	k, err := fence.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newProxyTo(t, up.srv.URL, db, b.dialect, fenceproxy.WithName("billing"), fenceproxy.WithKey(k))
	addr := strings.TrimPrefix(proxy.URL, "http://")
	code, body := rawRequest(t, addr, "Baton-Token: 7", "Baton-Token-Sig: "+strings.ToUpper(k.Sign("billing", 7)))
	if code != http.StatusOK {
		t.Fatalf("%d %q", code, body)
	}
	seen := up.take()
	if len(seen) != 1 {
		t.Fatalf("the upstream saw %d requests", len(seen))
	}
	h := seen[0]
	if got, want := fmt.Sprint(h[fence.HeaderName], h[fence.HeaderToken], h[fence.HeaderSig]),
		fmt.Sprint([]string{"billing"}, []string{"7"}, []string{strings.ToUpper(k.Sign("billing", 7))}); got != want {
		t.Fatalf("the upstream saw %s, want %s", got, want)
	}
}

// newProxyTo starts a proxy in front of the upstream at target, with
// its state in db.
func newProxyTo(t *testing.T, target string, db *sql.DB, d fence.Dialect, opts ...fenceproxy.Option) *httptest.Server {
	t.Helper()
	if err := fence.CreateTable(context.Background(), db, d); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(target)
	p, err := fenceproxy.New(u, db, d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv
}
