package fenceproxy_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/batonhq/baton/fence"
)

// BenchmarkProxy measures one 1 KiB POST with a current token, sent to the
// upstream directly (direct) and through the proxy (proxied), its fence
// state on each backend: what fencing a request costs, as the ratio of the
// two. One client sends one request at a time over a kept-alive
// connection, so the figure is the latency the proxy adds (its fence
// commit and its hold transaction), not a throughput.
func BenchmarkProxy(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 1024)
	for _, be := range backends {
		b.Run("backend="+be.name, func(b *testing.B) {
			up := newUpstream(b)
			proxy := newProxy(b, up, be.open(b, 1)[0], be.dialect)
			client := &http.Client{}
			post := func(b *testing.B, base string) {
				req, err := http.NewRequest(http.MethodPost, base+"/invoices", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set(fence.HeaderName, "billing")
				req.Header.Set(fence.HeaderToken, "7")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			for _, c := range []struct{ name, base string }{{"direct", up.srv.URL + "/api"}, {"proxied", proxy.URL}} {
				b.Run(c.name, func(b *testing.B) {
					post(b, c.base) // the connection, and the fence's row
					for b.Loop() {
						post(b, c.base)
					}
					b.SetBytes(int64(len(body)))
				})
			}
		})
	}
}
