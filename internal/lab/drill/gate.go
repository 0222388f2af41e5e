package drill

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/batonhq/baton/store"
)

// gate lets a node stop itself (SIGSTOP) at a point where none of its
// goroutines is inside a store or resource call, and cuts it off from the
// store (the unreachable fault).
//
// Why not SIGSTOP at any instant: a process stopped inside an SQLite write
// transaction keeps the file's write lock, and every other node's writes
// wait for it for the whole pause. That is a property of one shared SQLite
// file, not of the protocol the drill measures, so a pause waits for the
// calls in flight (a few milliseconds) before the node stops.
type gate struct {
	mu  sync.RWMutex
	cut atomic.Bool
}

func (g *gate) enter() error {
	g.mu.RLock()
	if g.cut.Load() {
		g.mu.RUnlock()
		return fmt.Errorf("%w: cut off from the store (injected fault)", store.ErrUnavailable)
	}
	return nil
}

func (g *gate) leave() { g.mu.RUnlock() }

// stop reports line and stops the process until it gets SIGCONT. The gate
// stays shut until then: a signal a process sends itself is not delivered
// at once to every thread, and a store call let in before it lands would
// stop holding the file's lock.
func (g *gate) stop(out *lineWriter, line string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	stopSelf(func() { out.say("%s", line) })
}

// gatedStore passes every call through the gate.
type gatedStore struct {
	store.Store
	g *gate
}

// Capabilities declares none of the optional capabilities: the gate
// forwards none of their methods (a drill node's Group takes names one at
// a time, as it did before capabilities were declared).
func (s *gatedStore) Capabilities() store.Capabilities { return 0 }

func (s *gatedStore) Get(ctx context.Context, name string) (store.Record, error) {
	if err := s.g.enter(); err != nil {
		return store.Record{}, err
	}
	defer s.g.leave()
	return s.Store.Get(ctx, name)
}

func (s *gatedStore) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	if err := s.g.enter(); err != nil {
		return store.Record{}, err
	}
	defer s.g.leave()
	return s.Store.Swap(ctx, sw)
}

func (s *gatedStore) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	if err := s.g.enter(); err != nil {
		return nil, err
	}
	defer s.g.leave()
	return s.Store.History(ctx, name, after, limit)
}

func (s *gatedStore) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	if err := s.g.enter(); err != nil {
		return store.Job{}, err
	}
	defer s.g.leave()
	return s.Store.EnsureJob(ctx, j)
}

func (s *gatedStore) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	if err := s.g.enter(); err != nil {
		return store.Run{}, err
	}
	defer s.g.leave()
	return s.Store.GetRun(ctx, job, period)
}

func (s *gatedStore) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	if err := s.g.enter(); err != nil {
		return store.Run{}, err
	}
	defer s.g.leave()
	return s.Store.SwapRun(ctx, sw)
}

func (s *gatedStore) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	if err := s.g.enter(); err != nil {
		return nil, err
	}
	defer s.g.leave()
	return s.Store.Runs(ctx, job, after, limit)
}

// WatchChanges passes the store's change feed through the gate: a node
// cut off from the store loses its feed (it is closed, as over a broken
// network) and gets none until the cut heals.
func (s *gatedStore) WatchChanges(ctx context.Context) <-chan []store.Change {
	out := make(chan []store.Change)
	if err := s.g.enter(); err != nil {
		close(out)
		return out
	}
	s.g.leave()
	ctx, cancel := context.WithCancel(ctx)
	in := s.Store.WatchChanges(ctx)
	go func() {
		defer close(out)
		defer cancel()
		for batch := range in {
			if s.g.cut.Load() {
				return
			}
			select {
			case out <- batch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
