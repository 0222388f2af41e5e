package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// TestChangeFeedReadsByIndex: the poller's query reads a range of the
// changed index, so its cost grows with the records written since the
// last poll, not with the records stored.
func TestChangeFeedReadsByIndex(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "baton.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plan := strings.Split(queryPlan(t, s, s.writtenSince(), 0), "; ")
	if len(plan) != 1 || !strings.Contains(plan[0], "USING COVERING INDEX baton_election_changed (changed>?)") &&
		!strings.Contains(plan[0], "USING INDEX baton_election_changed (changed>?)") {
		t.Fatalf("query plan of the change feed = %q, want a search of the changed index", plan)
	}
}

// TestPoolBound: the pool has the documented bound, or the one asked for.
func TestPoolBound(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "baton.db")
	for _, c := range []struct {
		opts []Option
		want int
	}{{nil, DefaultMaxConns}, {[]Option{WithMaxConns(2)}, 2}, {[]Option{WithMaxConns(16)}, 16}} {
		s, err := Open(ctx, path, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.db.Stats().MaxOpenConnections; got != c.want {
			t.Errorf("MaxOpenConnections = %d, want %d", got, c.want)
		}
		s.Close()
	}
}

// TestOnePollerForAll: a thousand change feeds on one Store share one
// poller; a write reaches every feed, which names only the records
// written, and the poller stops when the last feed ends.
func TestOnePollerForAll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "baton.db")
	s, err := Open(ctx, path, WithWatchInterval(5*time.Millisecond), WithMaxConns(2))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 1000
	feeds := make([]<-chan []store.Change, n)
	for i := range feeds {
		feeds[i] = s.WatchChanges(ctx)
	}
	s.hub.mu.Lock()
	nfeeds, running := len(s.hub.feeds), s.hub.running
	s.hub.mu.Unlock()
	if nfeeds != n || !running {
		t.Fatalf("hub holds %d feeds (running %v), want %d and a poller", nfeeds, running, n)
	}
	// With two connections, one is the poller's: were there a poller per
	// feed holding a connection, the write below could not get one.
	written := []string{"w0007", "w0500", "w0999"}
	var swaps []store.Swap
	for _, name := range written {
		swaps = append(swaps, store.Swap{Record: store.Record{Name: name, Holder: "n1", Incarnation: "i1", Token: 1}, Event: store.Acquired})
	}
	if _, err := s.SwapMany(ctx, swaps); err != nil {
		t.Fatal(err)
	}
	for i, f := range feeds {
		want := map[string]bool{"w0007": true, "w0500": true, "w0999": true}
		for len(want) > 0 {
			batch, ok := <-f
			if !ok {
				t.Fatalf("feed %d closed", i)
			}
			for _, c := range batch {
				if !want[c.Name] {
					t.Fatalf("feed %d named %s, not written or named twice", i, c.Name)
				}
				delete(want, c.Name)
			}
		}
	}
	// When every feed has ended, the poller stops.
	cancel()
	for _, f := range feeds {
		for range f {
		}
	}
	s.pollers.Wait()
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if s.hub.running || !s.hub.empty() {
		t.Fatalf("after every feed ended: running %v, %d feeds", s.hub.running, len(s.hub.feeds))
	}
}

// BenchmarkChangeFeedPerCommit is the poller's work for one commit that
// changed one record (its transfer request, set and cleared: a renewal is
// not on the feed), with 10,000 records stored: one poll (data_version
// and the records written since the last one) handing the name to a
// change feed. The commit itself is not timed. (Its watched=10000 case,
// 10,000 per-name watches, went with the per-name watch.)
func BenchmarkChangeFeedPerCommit(b *testing.B) {
	const stored = 10000
	b.Run(fmt.Sprintf("stored=%d/watched=0", stored), func(b *testing.B) {
		ctx := context.Background()
		s, err := Open(ctx, filepath.Join(b.TempDir(), "baton.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		swaps := make([]store.Swap, stored)
		for i := range swaps {
			swaps[i] = store.Swap{Record: store.Record{Name: fmt.Sprintf("name-%05d", i), Holder: "n1", Incarnation: "i1", Token: 1}}
		}
		res, err := s.SwapMany(ctx, swaps)
		if err != nil {
			b.Fatal(err)
		}
		// The hub as WatchChanges leaves it, without the poller
		// goroutine: the benchmark polls.
		h := &s.hub
		f := &feed{seen: map[string]int{}, signal: make(chan struct{}, 1)}
		h.mu.Lock()
		h.feeds[f] = struct{}{}
		h.cursor = res[stored-1].Record.Version
		h.mu.Unlock()
		conn, err := s.db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		p, err := s.newPoller(ctx, conn)
		if err != nil {
			b.Fatal(err)
		}
		defer p.close()
		if _, err := s.pollOnce(ctx, p); err != nil {
			b.Fatal(err)
		}
		rec := res[0].Record
		for b.Loop() {
			b.StopTimer()
			next := rec
			next.Transfer = map[string]string{"": "n2"}[rec.Transfer]
			if rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: next}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := s.pollOnce(ctx, p); err != nil {
				b.Fatal(err)
			}
			h.mu.Lock()
			if len(f.pending) != 1 {
				b.Fatalf("feed got %v after one commit", f.pending)
			}
			f.pending = f.pending[:0]
			clear(f.seen)
			h.mu.Unlock()
		}
	})
}

// TestIdleFeedPollsRarely: on Linux, an idle store's change feed, woken
// by the -wal file's writes, polls the file about once a
// DefaultNotifiedInterval, not every DefaultWatchInterval (twenty times
// as often). Real time, because the notifier is off under synctest's
// clock; load can only make the polls fewer.
func TestIdleFeedPollsRarely(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the change feed is woken by inotify on Linux only; elsewhere it polls every DefaultWatchInterval")
	}
	t.Parallel() // 3.5 s of waiting on its own file
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "baton.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Second}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	feed := s.WatchChanges(ctx)
	go func() {
		for range feed {
		}
	}()
	polls := func() int64 {
		s.hub.mu.Lock()
		defer s.hub.mu.Unlock()
		return s.hub.polls
	}
	// The first poll and the retries of the wake that setting the watch
	// gives, over 1023ms.
	time.Sleep(1500 * time.Millisecond)
	const idle = 2 * time.Second
	p0 := polls()
	time.Sleep(idle)
	n := polls() - p0
	t.Logf("%d polls in %v of idleness", n, idle)
	if limit := int64(idle/DefaultNotifiedInterval) + 2; n > limit {
		t.Fatalf("%d polls in %v of idleness, want at most %d: the feed polls every DefaultWatchInterval (%v) although notified of writes", n, idle, limit, DefaultWatchInterval)
	}
}
