package fence_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/fence"
)

// newLedgerServer serves POST requests by appending the request's token to
// a ledger guarded only by the middleware's Guard.
func newLedgerServer(t *testing.T, g *fence.Guard) (*httptest.Server, *[]string) {
	t.Helper()
	var ledger []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ledger = append(ledger, r.Header.Get(fence.HeaderToken))
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(fence.Middleware(g, h))
	t.Cleanup(srv.Close)
	return srv, &ledger
}

func TestMiddleware(t *testing.T) {
	tests := []struct {
		name       string
		headers    map[string]string
		wantStatus int
		wantBody   string // a substring; "" when next answers
		wantServed bool
	}{
		{"current token", map[string]string{fence.HeaderName: "billing", fence.HeaderToken: "5"}, http.StatusNoContent, "", true},
		{"newer token", map[string]string{fence.HeaderName: "billing", fence.HeaderToken: "6"}, http.StatusNoContent, "", true},
		{"stale token", map[string]string{fence.HeaderName: "billing", fence.HeaderToken: "4"}, http.StatusConflict, `name "billing", token 4, highest 5`, false},
		{"other name", map[string]string{fence.HeaderName: "reports", fence.HeaderToken: "1"}, http.StatusNoContent, "", true},
		{"no headers", nil, http.StatusBadRequest, "Baton-Name", false},
		{"no token", map[string]string{fence.HeaderName: "billing"}, http.StatusBadRequest, "Baton-Token", false},
		{"no name", map[string]string{fence.HeaderToken: "9"}, http.StatusBadRequest, "Baton-Name", false},
		{"malformed token", map[string]string{fence.HeaderName: "billing", fence.HeaderToken: "five"}, http.StatusBadRequest, "Baton-Token", false},
		{"negative token", map[string]string{fence.HeaderName: "billing", fence.HeaderToken: "-1"}, http.StatusBadRequest, "Baton-Token", false},
		{"token zero", map[string]string{fence.HeaderName: "billing", fence.HeaderToken: "0"}, http.StatusBadRequest, "Baton-Token", false},
		{"token overflow", map[string]string{fence.HeaderName: "billing", fence.HeaderToken: "18446744073709551616"}, http.StatusBadRequest, "Baton-Token", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := fence.NewGuard()
			if err := g.Check("billing", 5); err != nil {
				t.Fatal(err)
			}
			srv, ledger := newLedgerServer(t, g)
			req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d (body %q)", resp.StatusCode, tt.wantStatus, body)
			}
			if !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("body %q does not mention %q", body, tt.wantBody)
			}
			if tt.wantStatus >= 400 && strings.Count(string(body), "\n") != 1 {
				t.Errorf("body %q is not one line", body)
			}
			if served := len(*ledger) > 0; served != tt.wantServed {
				t.Errorf("next served = %v, want %v", served, tt.wantServed)
			}
		})
	}
}

func TestSetHeaders(t *testing.T) {
	g := fence.NewGuard()
	srv, ledger := newLedgerServer(t, g)
	post := func(token uint64) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(fence.HeaderToken, "999") // replaced by SetHeaders
		fence.SetHeaders(req, "billing", token)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, step := range []struct {
		token uint64
		want  int
	}{{1, 204}, {2, 204}, {2, 204}, {1, 409}, {3, 204}, {2, 409}} {
		if got := post(step.token); got != step.want {
			t.Errorf("token %d: status %d, want %d", step.token, got, step.want)
		}
	}
	if got := strings.Join(*ledger, ","); got != "1,2,2,3" {
		t.Errorf("ledger %s, want 1,2,2,3", got)
	}
	if h := g.Highest("billing"); h != 3 {
		t.Errorf("Highest = %d, want 3", h)
	}
}

// TestMiddlewareConcurrent sends requests with random tokens from many
// goroutines: the tokens the handler served never decrease, and the ledger
// needs no lock of its own (checked by the race detector).
func TestMiddlewareConcurrent(t *testing.T) {
	g := fence.NewGuard()
	var served []uint64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, tok, err := tokenOf(r)
		if err != nil {
			t.Error(err)
		}
		served = append(served, tok)
	})
	handler := fence.Middleware(g, h)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				req := httptest.NewRequest(http.MethodPost, "/", nil)
				fence.SetHeaders(req, "billing", 1+uint64(i/4)+uint64((w+i)%3))
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK && rec.Code != http.StatusConflict {
					t.Errorf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
	wg.Wait()
	if len(served) == 0 {
		t.Fatal("nothing served")
	}
	for i := 1; i < len(served); i++ {
		if served[i] < served[i-1] {
			t.Fatalf("served token %d after %d", served[i], served[i-1])
		}
	}
}

func TestMiddlewarePanicRaisesNothing(t *testing.T) {
	g := fence.NewGuard()
	handler := fence.Middleware(g, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	fence.SetHeaders(req, "billing", 7)
	func() {
		defer func() {
			if p := recover(); p == nil || !errors.Is(p.(error), http.ErrAbortHandler) {
				t.Errorf("recovered %v, want http.ErrAbortHandler", p)
			}
		}()
		handler.ServeHTTP(httptest.NewRecorder(), req)
	}()
	if h := g.Highest("billing"); h != 0 {
		t.Errorf("Highest after panic = %d, want 0", h)
	}
}

// tokenOf reads the fence of a request the way a handler behind the
// middleware could, through the exported header names.
func tokenOf(r *http.Request) (string, uint64, error) {
	tok, err := strconv.ParseUint(r.Header.Get(fence.HeaderToken), 10, 64)
	return r.Header.Get(fence.HeaderName), tok, err
}

// Middleware refuses, with 400, fence headers that could be read more
// than one way (fence.ReadHeaders), written raw so that no client
// normalises them, and serves the one canonical form.
func TestMiddlewareRefusesAmbiguousHeaders(t *testing.T) {
	g := fence.NewGuard()
	var served int
	srv := httptest.NewServer(fence.Middleware(g, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ })))
	defer srv.Close()
	raw := func(lines ...string) int {
		t.Helper()
		c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: s\r\n"+strings.Join(lines, "\r\n")+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, lines := range [][]string{
		{"Baton-Name: f", "Baton-Token: 11", "Baton-Token: 3"},
		{"Baton-Name: f", "Baton-Name: other", "Baton-Token: 11"},
		{"Baton-Name: f", "Baton-Token: 11, 3"},
		{"Baton-Name: f", "Baton-Token: 11", "Connection: Baton-Token, Baton-Name"},
		{"Baton-Name: f", "Baton-Token: 0013"},
		{"Baton-Name: f", "Baton-Token: +13"},
		{"Baton-Name: f", "Baton-Token: 13", "Baton_Token: 99"},
	} {
		if code := raw(lines...); code != http.StatusBadRequest {
			t.Errorf("%q: %d, want 400", lines, code)
		}
	}
	if served != 0 || g.Highest("f") != 0 || g.Highest("other") != 0 {
		t.Fatalf("served %d, highest %d/%d: an ambiguous request got through", served, g.Highest("f"), g.Highest("other"))
	}
	if code := raw("Baton-Name: f", "Baton-Token: 13"); code != http.StatusOK || g.Highest("f") != 13 {
		t.Fatalf("the canonical request: %d, highest %d", code, g.Highest("f"))
	}
}
