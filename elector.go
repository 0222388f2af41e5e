package baton

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// Elector campaigns for one named responsibility on one Store. The protocol
// itself lives in a deterministic state machine; the Elector is the thin
// runtime that drives it with its Clock and its Store: one goroutine while
// it campaigns or leads, one store request in flight at a time.
//
// An Elector holds at most one Term at a time. It is safe for concurrent
// use.
type Elector struct {
	st   store.Store
	name string
	cfg  config
	d    *driver // runs the election machine

	mu       sync.Mutex
	campaign chan campaignResult // the waiting Campaign call, if any
	hold     *holding            // Run's hold on the name, if any
	term     *Term               // the current or last term

	cands tally // candidate-row goroutines (candidate.go, prefer.go)

	// pref is the name's preference policy (WithPreference,
	// SetPreference); nil: none. safeHeard are the Term.SafePoint(false)
	// calls waiting for the machine to hear theirs (e.mu).
	pref      atomic.Pointer[preference]
	safeHeard []chan struct{}
}

// New returns an Elector for name on st. Options are validated; an invalid
// one is an error naming the field (an *OptionError, as for a nil st or
// an empty name), never silently replaced by a default.
func New(st store.Store, name string, opts ...Option) (*Elector, error) {
	if st == nil {
		return nil, optErr("store", "nil", "a store.Store (e.g. memstore.New())")
	}
	if name == "" {
		return nil, optErr("name", `""`, "an election name")
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.balance {
		return nil, optErr("balance", "on an Elector", "WithBalance on NewGroup only: an Elector holds one name, there is nothing to share")
	}
	if cfg.shareSet {
		return nil, optErr("share", "on an Elector", "WithShare on NewGroup with WithBalance only: an Elector holds one name, there is nothing to share")
	}
	if cfg.asked != 0 {
		return nil, optErr("succession", "on an Elector", "WithSuccession and WithoutSuccession on NewGroup only: an Elector holds one name on its own record, through no session")
	}
	cfg.logger = cfg.logger.With("election", name, "node", cfg.node)
	e := &Elector{st: st, name: name, cfg: cfg}
	e.pref.Store(preferOf(cfg))
	e.d = newDriver(st, cfg, election.NewGroup(cfg.machine(), false))
	e.d.announce = e.announce
	e.d.watch = e.watch
	return e, nil
}

// checkName refuses a name that cannot be an election's.
func checkName(name string) error {
	if err := store.CheckName(name); err != nil {
		return fmt.Errorf("baton: election name: %w", err)
	}
	if store.IsSession(name) {
		return fmt.Errorf("baton: election name %q: names beginning with %q are session records; choose another name", name, store.SessionPrefix)
	}
	return nil
}

// Name returns the election name.
func (e *Elector) Name() string { return e.name }

// Node returns this node's id.
func (e *Elector) Node() string { return e.cfg.node }

// campaignResult is what a waiting Campaign receives.
type campaignResult struct {
	term *Term
	err  error
}

// holding is Run's hold on the name: the election machine campaigns again
// by itself after every term (election.Start.Hold), and each term it wins,
// or the error that ends the hold, is left here for Run; e.mu guards it.
type holding struct {
	next chan struct{} // capacity 1: term or err changed
	term *Term         // the newest term won and not yet taken by Run
	err  error         // why the hold ended (a permanent store error, Close)
}

func (h *holding) signal() {
	select {
	case h.next <- struct{}{}:
	default:
	}
}

// nextTerm waits for the hold's next term, writing this node's candidate
// row while it waits, as Campaign does.
func (e *Elector) nextTerm(ctx context.Context, h *holding) (*Term, error) {
	stop := e.candidate()
	for {
		e.mu.Lock()
		t, err := h.term, h.err
		h.term = nil
		e.mu.Unlock()
		switch {
		case t != nil:
			stop(true)
			return t, nil
		case err != nil:
			stop(false)
			return nil, err
		}
		select {
		case <-h.next:
		case <-ctx.Done():
			stop(false)
			return nil, ctx.Err()
		}
	}
}

// unhold ends Run's hold h: the machine stops campaigning, and resigns
// the term it holds, if any.
func (e *Elector) unhold(h *holding) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hold == h {
		e.hold = nil
		e.post(election.Resign{Name: e.name})
	}
}

// Campaign blocks until this node is elected and returns its Term, or until
// ctx ends, in which case it stops campaigning (releasing the record if an
// acquisition was under way) and returns ctx's error. ctx bounds only the
// wait: the Term lives until it is lost or resigned.
//
// It returns ErrCampaigning if this Elector is already campaigning or holds
// a Term that has not ended, and an error wrapping ErrStoreLost and the
// store's error when the store answered with one that never heals
// (store.Permanent: the store was replaced, is corrupt, or is not baton's).
func (e *Elector) Campaign(ctx context.Context) (*Term, error) {
	e.mu.Lock()
	if e.campaign != nil || e.hold != nil || (e.term != nil && e.term.Err() == nil) {
		e.mu.Unlock()
		return nil, ErrCampaigning
	}
	won := make(chan campaignResult, 1)
	e.campaign = won
	e.post(election.Start{Name: e.name})
	e.mu.Unlock()
	stop := e.candidate()
	t, err := awaitCampaign(ctx, won, func() {
		e.mu.Lock()
		if e.campaign == won {
			e.campaign = nil
		}
		e.post(election.Resign{Name: e.name})
		e.mu.Unlock()
	})
	stop(err == nil)
	return t, err
}

// awaitCampaign waits for the result of a campaign on won (ErrClosed if
// won is closed), or for ctx to end: it then withdraws the campaign and
// returns ctx's error. Elector.Campaign and Group.Campaign wait so.
func awaitCampaign(ctx context.Context, won <-chan campaignResult, withdraw func()) (*Term, error) {
	select {
	case r, ok := <-won:
		if !ok {
			return nil, ErrClosed
		}
		return r.term, r.err
	case <-ctx.Done():
		withdraw()
		return nil, ctx.Err()
	}
}

// Leader returns the election record as the store holds it now: the holder
// (empty when free) and its token. The holder may have died without the
// record showing it yet; only its lease running out tells.
func (e *Elector) Leader(ctx context.Context) (store.Record, error) {
	return e.st.Get(ctx, e.name)
}

// Run campaigns, calls fn with the term's context while this node leads,
// and campaigns again whenever leadership is lost, until ctx ends. fn's
// context is cancelled the moment leadership is lost or may be lost, and
// when ctx ends. When fn returns while still leading, Run resigns and
// returns fn's result; when ctx ends, Run resigns and returns ctx's error.
// When the store fails with an error that never heals (the term's cause or
// Campaign's error wraps ErrStoreLost), Run returns that error at once
// instead of campaigning again.
func (e *Elector) Run(ctx context.Context, fn func(ctx context.Context, t *Term) error) error {
	defer e.cands.wait() // a withdrawn candidate row is deleted before Run returns
	h := &holding{next: make(chan struct{}, 1)}
	e.mu.Lock()
	if e.campaign != nil || e.hold != nil || (e.term != nil && e.term.Err() == nil) {
		e.mu.Unlock()
		return ErrCampaigning
	}
	e.hold = h
	// The machine holds the name: it campaigns again after every term
	// by itself (the rule lives there, once), until unhold.
	e.post(election.Start{Name: e.name, Hold: true})
	e.mu.Unlock()
	defer e.unhold(h)
	for {
		t, err := e.nextTerm(ctx, h)
		if err != nil {
			return err
		}
		work, cancel := context.WithCancelCause(t.Context())
		stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
		ferr := fn(work, t)
		stop()
		cancel(nil)
		lost := t.Err() != nil
		if !lost || ctx.Err() != nil || errors.Is(t.Err(), ErrStoreLost) {
			e.unhold(h) // done: campaign no more
		}
		rctx, rcancel := context.WithTimeout(context.Background(), e.cfg.lease)
		rerr := t.Resign(rctx)
		rcancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(t.Err(), ErrStoreLost):
			return t.Err()
		case lost:
			e.cfg.logger.Info("leadership lost; campaigning again", "cause", context.Cause(t.Context()))
			continue
		case ferr != nil:
			return ferr
		default:
			return rerr
		}
	}
}

// Close stops campaigning, resigns a term this Elector holds, and waits
// until its goroutine has finished the release or ctx ends. The Elector may
// campaign again afterwards.
func (e *Elector) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.campaign != nil {
		close(e.campaign) // the waiting Campaign returns an error
		e.campaign = nil
	}
	if h := e.hold; h != nil {
		e.hold = nil
		h.err = ErrClosed // the waiting Run returns it
		h.signal()
	}
	e.mu.Unlock()
	stopped := e.d.done()
	select {
	case <-stopped:
		return nil
	default:
	}
	e.post(election.Resign{Name: e.name})
	stopped = e.d.done()
	cands := make(chan struct{})
	go func() { e.cands.wait(); close(cands) }()
	for _, c := range []<-chan struct{}{stopped, cands} {
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// post queues an event for the election loop.
func (e *Elector) post(ev election.Event) { e.d.post(ev) }

// watch follows the store's change feed for this Elector's name: the
// feed's entries of other names are left out.
func (e *Elector) watch(ctx context.Context) <-chan []store.Change {
	in := e.st.WatchChanges(ctx)
	out := make(chan []store.Change)
	go func() {
		defer close(out)
		for batch := range in {
			var mine []store.Change
			for _, c := range batch {
				if c.Name == e.name {
					mine = append(mine, c)
				}
			}
			if mine == nil {
				continue
			}
			select {
			case out <- mine:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// announce executes the machine's announcements about this Elector's term.
func (e *Elector) announce(now time.Time, ev election.Event, acts []election.Action) {
	e.cfg.obs.elector(e.name, e.cfg.lease, e.d.g.Machine(e.name), now, ev, acts)
	if _, ok := ev.(election.SafePoint); ok {
		defer e.heardSafePoint() // after the Lost of a handover it caused, if any
	}
	for _, a := range acts {
		switch a := a.(type) {
		case election.Elected:
			e.elected(a)
		case election.Extended:
			e.mu.Lock()
			t := e.term
			e.mu.Unlock()
			t.extend(a.Deadline)
		case election.Lost:
			e.mu.Lock()
			t := e.term
			e.mu.Unlock()
			if t != nil {
				t.end(a.Cause)
				if errors.Is(a.Cause, ErrStoreLost) {
					e.cfg.logger.Error("leadership ended at once: the store failed for good; not campaigning again", "token", t.token, "cause", a.Cause)
				} else {
					e.cfg.logger.Info("leadership ended", "token", t.token, "cause", a.Cause)
				}
			}
		case election.Failed:
			e.cfg.logger.Error("campaign stopped: the store failed for good", "err", a.Err)
			e.mu.Lock()
			if e.campaign != nil {
				e.campaign <- campaignResult{err: a.Err}
				e.campaign = nil
			}
			if h := e.hold; h != nil {
				h.err = a.Err
				h.signal()
			}
			e.mu.Unlock()
		case election.Released:
			e.mu.Lock()
			t := e.term
			e.mu.Unlock()
			if t != nil {
				t.markReleased(a.Err)
			}
		}
	}
}

// callTimeout bounds one store call, so a hung call never holds the one
// request slot for longer than a renew interval.
func (e *Elector) callTimeout() time.Duration { return e.cfg.renew }

func (e *Elector) elected(a election.Elected) {
	ctx, cancel := context.WithCancelCause(context.Background())
	t := &Term{
		d:        e.d,
		name:     e.name,
		node:     e.cfg.node,
		token:    a.Token,
		ctx:      ctx,
		cancel:   cancel,
		deadline: a.Deadline,
		released: make(chan struct{}),
		safe:     e.safePoint,
	}
	e.cands.add()
	go e.lead(t)
	e.mu.Lock()
	e.term = t
	won := e.campaign
	e.campaign = nil
	if h := e.hold; h != nil && won == nil {
		h.term = t
		h.signal()
	}
	e.mu.Unlock()
	e.cfg.logger.Info("elected", "token", a.Token, "deadline_in", a.Deadline.Sub(e.cfg.clock.Now()))
	if won != nil {
		won <- campaignResult{term: t}
	}
}

// String names the election and the node, for logs.
func (e *Elector) String() string {
	return fmt.Sprintf("baton.Elector(%s on %s)", e.name, e.cfg.node)
}

// tally counts running goroutines and waits for none to run, like a
// sync.WaitGroup, except that add may come at any time, also while wait
// waits: the driver's goroutine starts a term's candidate-row goroutine
// (elected) when an acquisition answers, which may be as Run, returning,
// waits for the others (a WaitGroup's Add from zero must happen before its
// Wait; the race detector caught that one in CI). A goroutine added after
// wait returned is waited for by the next wait.
type tally struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n is back to 0; nil while nobody waits
}

// add counts one more goroutine.
func (t *tally) add() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
}

// done counts one goroutine fewer.
func (t *tally) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n--; t.n == 0 && t.zero != nil {
		close(t.zero)
		t.zero = nil
	}
}

// wait returns when no counted goroutine runs.
func (t *tally) wait() {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return
	}
	if t.zero == nil {
		t.zero = make(chan struct{})
	}
	z := t.zero
	t.mu.Unlock()
	<-z
}
