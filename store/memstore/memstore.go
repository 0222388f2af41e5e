// Package memstore is an in-process Store: the reference backend for tests,
// the drill and the simulator. It is linearizable (one mutex) and keeps
// nothing on disk.
//
// Fault hooks make a named node's calls fail or wait: Client(node) returns
// a view of the store whose calls obey the faults set for that node with
// SetUnreachable and SetDelay. Faults never change stored data.
package memstore

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/batonhq/baton/store"
)

// Store is an in-memory store.Store. The zero value is not usable; call New.
type Store struct {
	now func() time.Time // store time for Updated and Event.Time

	mu      sync.Mutex
	version int64
	records map[string]store.Record
	logs    map[string][]store.Event
	jobs    map[string]store.Job
	runs    map[string]map[string]store.Run
	watches map[string][]chan struct{}
	faults  map[string]fault
	closed  bool
}

type fault struct {
	unreachable bool
	delay       time.Duration
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.Watcher      = (*Store)(nil)
	_ store.BatchSwapper = (*Store)(nil)
)

// Option configures a Store.
type Option func(*Store)

// WithTime sets the function the store reads its informational store time
// from (default time.Now). The drill passes its virtual clock.
func WithTime(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		now:     time.Now,
		records: map[string]store.Record{},
		logs:    map[string][]store.Event{},
		jobs:    map[string]store.Job{},
		runs:    map[string]map[string]store.Run{},
		watches: map[string][]chan struct{}{},
		faults:  map[string]fault{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// SetUnreachable makes every call through Client(node) fail with
// store.ErrUnavailable while on is true, as if the node were cut off.
func (s *Store) SetUnreachable(node string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults[node]
	f.unreachable = on
	s.faults[node] = f
}

// SetDelay makes every call through Client(node) wait d before it is
// served (and d again before its reply is returned), honouring the call's
// context.
func (s *Store) SetDelay(node string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults[node]
	f.delay = d
	s.faults[node] = f
}

// Client returns a view of the store for node: the same data, with the
// faults set for node applied to every call.
func (s *Store) Client(node string) store.Store { return &client{s: s, node: node} }

func (s *Store) enter(ctx context.Context, node string) error {
	s.mu.Lock()
	f, closed := s.faults[node], s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("%w: memstore is closed", store.ErrUnavailable)
	}
	if f.delay > 0 {
		t := time.NewTimer(f.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", store.ErrUnavailable, ctx.Err())
		}
	}
	if f.unreachable {
		return fmt.Errorf("%w: node %s cannot reach the store (fault injected)", store.ErrUnavailable, node)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return nil
}

// leave applies the reply half of a delay and the unreachable fault to a
// call that was served: a node cut off while its call was in flight never
// hears the answer, though the write may have been applied.
func (s *Store) leave(ctx context.Context, node string) error {
	return s.enter(ctx, node)
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, name string) (store.Record, error) {
	return s.Client("").Get(ctx, name)
}

// Swap implements store.Store.
func (s *Store) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	return s.Client("").Swap(ctx, sw)
}

// SwapMany implements store.BatchSwapper.
func (s *Store) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	return s.Client("").(store.BatchSwapper).SwapMany(ctx, swaps)
}

// History implements store.Store.
func (s *Store) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	return s.Client("").History(ctx, name, after, limit)
}

// EnsureJob implements store.Store.
func (s *Store) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	return s.Client("").EnsureJob(ctx, j)
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	return s.Client("").GetRun(ctx, job, period)
}

// SwapRun implements store.Store.
func (s *Store) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	return s.Client("").SwapRun(ctx, sw)
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	return s.Client("").Runs(ctx, job, after, limit)
}

// Watch implements store.Watcher.
func (s *Store) Watch(ctx context.Context, name string) <-chan struct{} {
	return s.Client("").(store.Watcher).Watch(ctx, name)
}

// Close marks the store closed: later calls fail with store.ErrUnavailable.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// swapLocked applies one swap; s.mu must be held.
func (s *Store) swapLocked(sw store.Swap) (store.Record, error) {
	cur := s.records[sw.Record.Name]
	if err := store.CheckSwap(cur, sw); err != nil {
		return store.Record{}, err
	}
	s.version++
	rec := sw.Record
	rec.Version = s.version
	rec.Updated = s.now()
	s.records[rec.Name] = rec
	if sw.Event != "" {
		log := s.logs[rec.Name]
		s.logs[rec.Name] = append(log, store.NextEvent(uint64(len(log))+1, rec, sw.Event))
	}
	for _, ch := range s.watches[rec.Name] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return rec, nil
}

// client is a node's view of a Store.
type client struct {
	s    *Store
	node string
}

func (c *client) Get(ctx context.Context, name string) (store.Record, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Record{}, err
	}
	c.s.mu.Lock()
	rec, ok := c.s.records[name]
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return store.Record{}, err
	}
	if !ok {
		return store.Record{}, fmt.Errorf("election %q: %w", name, store.ErrNotFound)
	}
	return rec, nil
}

func (c *client) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Record{}, err
	}
	c.s.mu.Lock()
	rec, err := c.s.swapLocked(sw)
	c.s.mu.Unlock()
	if lerr := c.s.leave(ctx, c.node); lerr != nil {
		return store.Record{}, lerr
	}
	return rec, err
}

func (c *client) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	res := make([]store.SwapResult, len(swaps))
	for i, sw := range swaps {
		res[i].Record, res[i].Err = c.s.swapLocked(sw)
	}
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return nil, err
	}
	return res, nil
}

func (c *client) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	var out []store.Event
	for _, ev := range c.s.logs[name] {
		if ev.Seq > after && (limit <= 0 || len(out) < limit) {
			out = append(out, ev)
		}
	}
	c.s.mu.Unlock()
	return out, c.s.leave(ctx, c.node)
}

func (c *client) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	if j.Name == "" {
		return store.Job{}, fmt.Errorf("%w: empty job name", store.ErrInvalid)
	}
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Job{}, err
	}
	c.s.mu.Lock()
	got, ok := c.s.jobs[j.Name]
	if !ok {
		j.Created = c.s.now()
		c.s.jobs[j.Name] = j
		got = j
	}
	c.s.mu.Unlock()
	return got, c.s.leave(ctx, c.node)
}

func (c *client) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Run{}, err
	}
	c.s.mu.Lock()
	r, ok := c.s.runs[job][period]
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return store.Run{}, err
	}
	if !ok {
		return store.Run{}, fmt.Errorf("run %s/%s: %w", job, period, store.ErrNotFound)
	}
	return r, nil
}

func (c *client) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Run{}, err
	}
	c.s.mu.Lock()
	r, err := c.s.swapRunLocked(sw)
	c.s.mu.Unlock()
	if lerr := c.s.leave(ctx, c.node); lerr != nil {
		return store.Run{}, lerr
	}
	return r, err
}

func (s *Store) swapRunLocked(sw store.RunSwap) (store.Run, error) {
	cur := s.runs[sw.Run.Job][sw.Run.Period]
	if err := store.CheckRunSwap(cur, sw, s.records[sw.Run.Job].Token); err != nil {
		return store.Run{}, err
	}
	s.version++
	r := sw.Run
	r.Version = s.version
	if s.runs[r.Job] == nil {
		s.runs[r.Job] = map[string]store.Run{}
	}
	s.runs[r.Job][r.Period] = r
	return r, nil
}

func (c *client) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	var out []store.Run
	for p, r := range c.s.runs[job] {
		if p > after {
			out = append(out, r)
		}
	}
	c.s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Period < out[j].Period })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, c.s.leave(ctx, c.node)
}

func (c *client) Watch(ctx context.Context, name string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	c.s.mu.Lock()
	c.s.watches[name] = append(c.s.watches[name], ch)
	c.s.mu.Unlock()
	go func() {
		<-ctx.Done()
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		w := c.s.watches[name]
		for i := range w {
			if w[i] == ch {
				c.s.watches[name] = append(w[:i:i], w[i+1:]...)
				break
			}
		}
		close(ch)
	}()
	return ch
}

// Close of a client does nothing: the Store owns the data.
func (c *client) Close() error { return nil }
