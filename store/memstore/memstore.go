package memstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// Store is an in-memory store.Store. The zero value is not usable; call Open
// or New.
type Store struct {
	now              func() time.Time // store time for Updated and Event.Time
	ignoreSuspension bool             // WithoutSuspensionCheck
	succession       SuccessionMutation

	mu      sync.Mutex
	version int64
	// records holds each record under its own name, never "" (CheckSwap
	// refuses it), written in place (storeLocked): by pointer, the map's
	// values are small enough for the runtime's fast lookup by string,
	// which a read or write of a record makes a few times.
	records map[string]*store.Record
	logs    map[string][]store.Event
	jobs    map[string]store.Job
	runs    map[string][]store.Run // per job, its ledger rows in period order (findRun)
	feeds   map[*feed]struct{}
	cands   map[candKey]store.Candidate
	faults  map[string]fault
	closed  bool
	// touched is set with the first fault or Close, never cleared: until
	// then a call's enter and leave have nothing to look up (no lock).
	touched atomic.Bool
}

type fault struct {
	err         error
	unreachable bool
	delay       time.Duration
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.Store      = (*client)(nil)
	_ store.TimeSource = (*Store)(nil)
	_ store.TimeSource = (*client)(nil)
)

// Option configures Open. Like every backend's options, an invalid value
// makes Open fail with an error that wraps store.ErrInvalid and names the
// option.
type Option func(*config) error

type config struct {
	now              func() time.Time
	ignoreSuspension bool
	succession       SuccessionMutation
}

// SuccessionMutation breaks one rule of successions (store.Resolve) where
// it lives, in the store: the simulator's mutations, whose checker must
// notice. The zero value breaks none.
type SuccessionMutation struct {
	// StoredVersion compares a swap with the stored version, not the
	// resolved one: a write prepared before a succession lands.
	StoredVersion bool
	// NoRaise resolves a record passed on with its stored token: the
	// successor's term has the dead holder's token.
	NoRaise bool
	// SettleStoredToken makes Settle write a name's resolved record with
	// its stored token: the next term's token is not above the one the
	// succession handed out.
	SettleStoredToken bool
	// SettleNewVersion makes Settle give each record it rewrites a new
	// version, as a write would: a write prepared before it conflicts.
	SettleNewVersion bool
}

// WithSuccessionMutation sets m (never use it outside the simulator).
func WithSuccessionMutation(m SuccessionMutation) Option {
	return func(c *config) error {
		c.succession = m
		return nil
	}
}

// WithoutSuspensionCheck makes SwapRun write a claim or skip of a
// suspended job instead of refusing it with store.ErrSuspended: the
// simulator's ignore-suspension mutation, which breaks the rule where it
// lives (in the store, atomic with the write) so that its checker must
// notice. Never use it otherwise.
func WithoutSuspensionCheck() Option {
	return func(c *config) error {
		c.ignoreSuspension = true
		return nil
	}
}

// WithTime sets the function the store reads its informational store time
// (Record.Updated, Event.Time, Job.Created) from. The default is time.Now;
// the drill and the simulator pass their virtual clock. now must not be nil.
func WithTime(now func() time.Time) Option {
	return func(c *config) error {
		if err := storedriver.CheckClock("memstore", now); err != nil {
			return err
		}
		c.now = now
		return nil
	}
}

// Open returns a new, empty store. ctx is not used (an in-process store
// cannot block) and is there for the shape every backend's Open has.
func Open(ctx context.Context, opts ...Option) (*Store, error) {
	cfg := config{now: time.Now}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	return &Store{
		now:              cfg.now,
		ignoreSuspension: cfg.ignoreSuspension,
		succession:       cfg.succession,
		records:          map[string]*store.Record{},
		logs:             map[string][]store.Event{},
		jobs:             map[string]store.Job{},
		runs:             map[string][]store.Run{},
		feeds:            map[*feed]struct{}{},
		cands:            map[candKey]store.Candidate{},
		faults:           map[string]fault{},
	}, nil
}

// New is Open for tests and simulations, which have no error to handle:
// it returns a new, empty store, and panics if an option is invalid (a
// programming error, as with regexp.MustCompile: every memstore option is a
// value the caller wrote in code).
func New(opts ...Option) *Store {
	s, err := Open(context.Background(), opts...)
	if err != nil {
		panic(err)
	}
	return s
}

// Client returns a view of the store for node: the same data, with the
// faults set for node applied to every call.
func (s *Store) Client(node string) store.Store { return &client{s: s, node: node} }

// own is the Store's own view, without a node's faults, for its methods:
// a value the compiler keeps off the heap where the call does not retain
// it (Client's, returned as an interface, always escapes).
func (s *Store) own() *client { return &client{s: s} }

// Capabilities implements store.Store: the store's own clock (its store
// time, virtual in the simulator), an ordered feed and successions; no
// identity (the store lives and dies with the process).
func (s *Store) Capabilities() store.Capabilities { return capabilities }

// Capabilities implements store.Store, as the Store's.
func (c *client) Capabilities() store.Capabilities { return capabilities }

// capabilities is what a memstore handle declares.
const capabilities = store.CapStoreTime | store.CapOrderedFeed | store.CapSuccession

// Close marks the store closed: later calls fail with store.ErrUnavailable.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.touched.Store(true)
	return nil
}

// stored returns the stored record of name and whether there is one; s.mu
// must be held.
func (s *Store) stored(name string) (store.Record, bool) {
	if p := s.records[name]; p != nil {
		return *p, true
	}
	return store.Record{}, false
}

// storeLocked writes rec as the stored record of name, over the one
// stored in place; s.mu must be held.
func (s *Store) storeLocked(name string, rec *store.Record) {
	if p := s.records[name]; p != nil {
		*p = *rec
		return
	}
	p := new(store.Record)
	*p = *rec
	s.records[name] = p
}

// client is a node's view of a Store.
type client struct {
	s    *Store
	node string
}

// Close of a client does nothing: the Store owns the data.
func (c *client) Close() error { return nil }

// StoreTime implements store.TimeSource: the store's time (WithTime), the
// virtual clock in the drill and the simulator.
func (s *Store) StoreTime(ctx context.Context) (time.Time, error) {
	return s.own().StoreTime(ctx)
}

// StoreTime implements store.TimeSource for a node, with its faults.
func (c *client) StoreTime(ctx context.Context) (time.Time, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return time.Time{}, err
	}
	t := c.s.now()
	return t, c.s.leave(ctx, c.node)
}
