package sqlite

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// waitQueued waits until t has urgent and normal writes queued.
func waitQueued(tb testing.TB, t *turn, urgent, normal int) {
	tb.Helper()
	for {
		u, n := t.waiting()
		if u == urgent && n == normal {
			return
		}
		if u > urgent || n > normal {
			tb.Fatalf("queued %d urgent, %d other; want %d, %d", u, n, urgent, normal)
		}
		runtime.Gosched()
	}
}

// TestTurnUrgentFirst: the turn passes to the queued urgent writes, oldest
// first, before any other queued write, whatever the order they queued in;
// the others then go oldest first.
func TestTurnUrgentFirst(t *testing.T) {
	var tr turn
	ctx := context.Background()
	if err := tr.acquire(ctx, false); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 4)
	queue := func(name string, urgent bool, u, n int) {
		go func() {
			if err := tr.acquire(ctx, urgent); err != nil {
				t.Error(err)
				return
			}
			order <- name
			tr.release()
		}()
		waitQueued(t, &tr, u, n)
	}
	queue("batch1", false, 0, 1)
	queue("batch2", false, 0, 2)
	queue("renew1", true, 1, 2)
	queue("renew2", true, 2, 2)
	tr.release()
	want := []string{"renew1", "renew2", "batch1", "batch2"}
	for i, w := range want {
		if got := <-order; got != w {
			t.Fatalf("write %d to get the turn: %s, want %s (order %v)", i, got, w, want)
		}
	}
	if err := tr.acquire(ctx, false); err != nil { // free again
		t.Fatal(err)
	}
	tr.release()
}

// TestTurnCancel: a waiter whose ctx ends leaves the queue without the
// turn, and the turn still passes to the others.
func TestTurnCancel(t *testing.T) {
	var tr turn
	if err := tr.acquire(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	failed := make(chan error, 1)
	go func() { failed <- tr.acquire(ctx, true) }()
	waitQueued(t, &tr, 1, 0)
	got := make(chan struct{})
	go func() {
		if err := tr.acquire(context.Background(), false); err != nil {
			t.Error(err)
		}
		close(got)
	}()
	waitQueued(t, &tr, 1, 1)
	cancel()
	if err := <-failed; err == nil {
		t.Fatal("a cancelled waiter got the turn")
	}
	waitQueued(t, &tr, 0, 1)
	tr.release()
	<-got
	tr.release()
}

// TestSwapAheadOfSwapMany: while a write holds the Store's turn, a batched
// write (SwapMany) queued first and a renewal (Swap) queued after it: the
// renewal queues as urgent, so it is applied first; a session's renewal
// (the general way) too.
func TestSwapAheadOfSwapMany(t *testing.T) {
	ctx := context.Background()
	// Each reading of the store's clock is a nanosecond after the one
	// before: the Updated times give the order the writes ran in.
	var mu sync.Mutex
	tick := time.Unix(1_800_000_000, 0)
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		tick = tick.Add(time.Microsecond)
		return tick
	}
	s, err := Open(ctx, filepath.Join(t.TempDir(), "baton.db"), WithTime(now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	renewal := store.Swap{Expect: held.Version, Record: held}
	var batch []store.Swap
	for i := range 200 {
		batch = append(batch, store.Swap{Record: store.Record{Name: "bulk-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Holder: "n2", Incarnation: "i2", Token: 1, Lease: time.Minute}})
	}
	if err := s.writing.acquire(ctx, false); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 2)
	go func() {
		if _, err := s.SwapMany(ctx, batch); err != nil {
			t.Error(err)
		}
		done <- "swap many"
	}()
	waitQueued(t, &s.writing, 0, 1)
	var renewed store.Record
	go func() {
		var err error
		if renewed, err = s.Swap(ctx, renewal); err != nil {
			t.Error(err)
		}
		done <- "swap"
	}()
	waitQueued(t, &s.writing, 1, 1)
	s.writing.release()
	<-done
	<-done
	bulk, err := s.Get(ctx, batch[0].Record.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !renewed.Updated.Before(bulk.Updated) {
		t.Fatalf("renewal written at %v, the batch at %v: the renewal waited behind the batch", renewed.Updated, bulk.Updated)
	}
}
