package kubetest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/kube"
)

// goneTransport is the transport of a client whose next watches come
// after a compaction of etcd: before it sends such a watch request, it
// writes to etcd and compacts its history up to that write, so that the
// resourceVersion the watch starts from (that of the list made just
// before it) is gone, and the real API server answers 410 Gone, as it
// does when its own compaction (every 5 minutes by default) passes a
// watch's resourceVersion. It records what each watch was answered.
type goneTransport struct {
	rt      http.RoundTripper
	compact func() error

	mu      sync.Mutex
	expire  int   // the next watches to send after a compaction
	err     error // a compaction's
	watches int   // watch requests made
	gone    int   // watches answered 410 Gone
	ok      int   // watches answered with a stream, not after a compaction
}

func (g *goneTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if q.Get("watch") != "true" && q.Get("watch") != "1" {
		return g.rt.RoundTrip(req)
	}
	g.mu.Lock()
	g.watches++
	expired := g.expire > 0
	if expired {
		g.expire--
		if err := g.compact(); err != nil && g.err == nil {
			g.err = err
		}
	}
	g.mu.Unlock()
	resp, err := g.rt.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case resp.StatusCode == http.StatusGone:
		g.gone++
	case expired:
		// The server opens the stream and sends the 410 as its one
		// event: count it when it is read.
		resp.Body = &goneBody{ReadCloser: resp.Body, g: g}
	default:
		g.ok++
	}
	return resp, nil
}

// goneBody counts a watch stream that carries a 410 status event.
type goneBody struct {
	io.ReadCloser
	g       *goneTransport
	buf     []byte
	counted bool
}

func (b *goneBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.counted && len(b.buf) < 1<<16 {
		b.buf = append(b.buf, p[:n]...)
		if bytes.Contains(b.buf, []byte(`"code":410`)) {
			b.counted = true
			b.g.mu.Lock()
			b.g.gone++
			b.g.mu.Unlock()
		}
	}
	return n, err
}

func (g *goneTransport) counts() (watches, gone, ok int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.watches, g.gone, g.ok
}

func (g *goneTransport) expireNext() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expire = 1
}

// testWatchGone forces a 410 Gone on store/kube's change feed, on a
// real API server (by a compaction of its etcd between the store's list
// and its watch: goneTransport), and shows that the store's reader is told (the feed
// closes: it can no longer say what it missed), reads again and watches
// again, and then sees every change: (1) the feed of a store whose watch
// is answered 410 closes with nothing reported; a new feed then reports
// another store's write. (2) An Elector whose first watch is answered
// 410 watches again (its driver, after a lease), and when the leader
// resigns it leads: its token above the leader's, its term begun after
// the leader's ended, within 1 s plus the scheduling delay measured: its
// lease is 20 s and its poll 10 s, so without a feed it would learn of
// the resignation 5 s later on average (its poll comes within 1 s of the
// resignation one time in ten).
func (e *env) testWatchGone(t *testing.T) {
	// A server of its own, whose Leases are not in its watch cache: with
	// the cache, the server serves a watch from the events it cached
	// since it started, whatever etcd compacted (a cluster's server
	// answers 410 once its cache's window, minutes, has passed the
	// resourceVersion).
	srv := StartServer(t, "--watch-cache-sizes=leases.coordination.k8s.io#0")
	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := (&env{srv: srv, cs: cs}).namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ec, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.EtcdURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	compact := func() error {
		var rev int64
		for range 2 { // two revisions past the list the watch follows
			r, err := ec.Put(ctx, "/kubetest/compaction", time.Now().String())
			if err != nil {
				return err
			}
			rev = r.Header.Revision
		}
		_, err := ec.Compact(ctx, rev, clientv3.WithCompactPhysical())
		return err
	}
	g := &goneTransport{compact: compact}
	cfg := rest.CopyConfig(srv.Config)
	// JSON, so that goneBody can read the status event.
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { g.rt = rt; return g }
	stB, err := kube.Open(ctx, cfg, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer stB.Close()
	stA, err := kube.Open(ctx, srv.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer stA.Close()

	// (1) The store's feed.
	g.expireNext()
	feedCtx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	feed := stB.WatchChanges(feedCtx)
	if _, err := stA.Swap(ctx, store.Swap{Record: store.Record{Name: "before", Holder: "a", Incarnation: "a-1", Token: 1, Lease: time.Minute}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	select {
	case batch, ok := <-feed:
		if ok {
			t.Fatalf("the feed whose watch was answered 410 Gone reported %v and stayed open", batch)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the feed whose watch was answered 410 Gone is still open after 30 s: changes lost")
	}
	if w, gone, _ := g.counts(); gone != 1 || g.err != nil {
		t.Fatalf("%d watches, %d answered 410 Gone (compaction: %v); want the one after the compaction answered 410", w, gone, g.err)
	}
	if _, err := stB.Get(ctx, "before"); err != nil { // the reader reads again
		t.Fatal(err)
	}
	feed = stB.WatchChanges(feedCtx)
	rec, err := stA.Swap(ctx, store.Swap{Record: store.Record{Name: "after", Holder: "a", Incarnation: "a-1", Token: 1, Lease: time.Minute}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	for seen := false; !seen; {
		select {
		case batch, ok := <-feed:
			if !ok {
				t.Fatal("the feed watched again after the 410 closed before reporting a write")
			}
			for _, c := range batch {
				seen = seen || (c.Name == "after" && c.Version >= rec.Version)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the feed watched again after the 410 did not report a write in 30 s")
		}
	}

	stopFeed()

	// (2) An Elector whose first watch is answered 410.
	const lease, margin = 20 * time.Second, 100 * time.Millisecond
	opts := func(node string) []baton.Option {
		return []baton.Option{baton.WithNode(node), baton.WithLease(lease), baton.WithClockMargin(margin), baton.WithPoll(lease / 2)}
	}
	elA, err := baton.New(stA, "gone", opts("a")...)
	if err != nil {
		t.Fatal(err)
	}
	termA, err := elA.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w0, gone0, ok0 := g.counts()
	g.expireNext()
	elB, err := baton.New(stB, "gone", opts("b")...)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		term *baton.Term
		at   time.Time
		err  error
	}
	won := make(chan result, 1)
	go func() {
		term, err := elB.Campaign(ctx)
		won <- result{term, time.Now(), err}
	}()
	// The 410, then the driver's watch again, a lease later.
	if !testenv.WaitFor(3*lease, func() bool { _, gone, ok := g.counts(); return gone > gone0 && ok > ok0 }) {
		w, gone, ok := g.counts()
		t.Fatalf("B's watches: %d (%d before), %d answered 410 (%d before), %d opened (%d before); want one 410 and a watch again", w, w0, gone, gone0, ok, ok0)
	}
	select {
	case r := <-won:
		t.Fatalf("B led (token %d, %v) while A held the name", r.term.Token(), r.err)
	default:
	}
	time.Sleep(200 * time.Millisecond) // the new watch under way
	delay := testenv.MeasureDelay(t)
	if err := termA.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	resigned := time.Now()
	select {
	case <-termA.Done():
	default:
		t.Fatal("A's term has not ended after Resign returned")
	}
	var r result
	select {
	case r = <-won:
	case <-time.After(2 * lease):
		t.Fatalf("B does not lead %s after A resigned", 2*lease)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	took := r.at.Sub(resigned)
	t.Logf("B led %s after A resigned (token %d after %d)", took, r.term.Token(), termA.Token())
	if r.term.Token() <= termA.Token() {
		t.Errorf("B's token %d is not above A's %d", r.term.Token(), termA.Token())
	}
	if bound := delay.Slack(time.Second, resigned, r.at); took > bound {
		t.Errorf("B led %s after A resigned, over %s: its feed watched again after the 410 did not report the resignation", took, bound)
	}
	r.term.Resign(ctx)
	elA.Close(ctx)
	elB.Close(ctx)
}
