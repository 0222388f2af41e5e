package sqlite

import (
	"context"
	"sync"
)

// turn is a Store's write turn: one write of the Store at a time, the
// others queued in order, except that a single swap (Store.Swap: a
// name's or a session's renewal, at most one per name and renew
// interval) goes ahead of every queued write that is not one. Without
// that, a renewal decided while batched writes (SwapMany, up to a lease
// long each) are queued waits behind all of them, and the lease it
// renews may lapse in the queue.
type turn struct {
	mu     sync.Mutex
	held   bool
	urgent []chan struct{} // queued single swaps, oldest first
	normal []chan struct{} // queued other writes, oldest first
}

// acquire waits for the turn; urgent puts the caller ahead of every
// queued write that is not urgent. It fails only with ctx's error, and
// then does not hold the turn.
func (t *turn) acquire(ctx context.Context, urgent bool) error {
	t.mu.Lock()
	if !t.held {
		t.held = true
		t.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	if urgent {
		t.urgent = append(t.urgent, ch)
	} else {
		t.normal = append(t.normal, ch)
	}
	t.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	if dropWaiter(&t.urgent, ch) || dropWaiter(&t.normal, ch) {
		t.mu.Unlock()
		return ctx.Err()
	}
	t.mu.Unlock()
	// Granted as ctx ended: pass the turn on.
	t.release()
	return ctx.Err()
}

// release ends the holder's turn and hands it to the oldest urgent
// waiter, else to the oldest other one.
func (t *turn) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := &t.urgent
	if len(*q) == 0 {
		q = &t.normal
	}
	if len(*q) == 0 {
		t.held = false
		return
	}
	ch := (*q)[0]
	(*q)[0] = nil
	*q = (*q)[1:]
	close(ch) // the turn stays held: it passes to ch's waiter
}

// waiting reports how many writes are queued for the turn.
func (t *turn) waiting() (urgent, normal int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.urgent), len(t.normal)
}

func dropWaiter(q *[]chan struct{}, ch chan struct{}) bool {
	for i, c := range *q {
		if c == ch {
			*q = append((*q)[:i], (*q)[i+1:]...)
			return true
		}
	}
	return false
}
