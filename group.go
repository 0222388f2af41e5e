package baton

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// Group holds many names from one process: sharded singular work, such as
// one billing job per seller partition or one controller per tenant. Its
// names share one renewal: the Group renews a single session record per
// renew interval, whatever the number of names it holds, and every name it
// holds points at that session. Tokens stay per name: each name's Term has
// its own token, raised on every acquisition, for its own fenced work.
//
// A name's term is valid as long as the session is: all of a Group's terms
// share one deadline, are extended together and, when the session is lost
// (renewals failed until the deadline, or the store was replaced), end
// together. Another process takes a name only after it saw the holder's
// session record unchanged for the lease plus twice the clock margin on its
// own clock, as for a single name; when a process holding many names dies,
// the others end its session once and take its names in batches.
//
// With WithBalance, Groups of several processes that hold the same names
// share them (about N/P each) and share again when one joins or leaves;
// see WithBalance.
//
// A Group writes no candidate rows (store.Heartbeat): with thousands of
// names they would cost a write per name. A Group is safe for concurrent
// use.
type Group struct {
	st  store.Store
	cfg config
	d   *driver

	stopCollect context.CancelFunc // stops the session collector
	collected   chan struct{}      // closed when the collector stopped

	mu     sync.Mutex
	closed bool
	terms  map[string]*Term // the current or last term of each name
	wants  map[string]*want // names campaigned for
	stats  GroupStats
}

// want is why the Group campaigns for a name.
type want struct {
	hold    bool        // Hold: campaign again whenever a term ends
	onTerm  func(*Term) // Hold's handler
	waiters []chan campaignResult
}

// GroupStats counts what a Group holds and has held.
type GroupStats struct {
	// Held is the number of names held now; Campaigning the number
	// campaigned for and not held.
	Held, Campaigning int
	// Elected counts the terms won since NewGroup; Lost the terms that
	// ended other than by a resign (lease expired, deposed, store lost).
	// A name handed over on request (an operator's transfer, or another
	// balanced Group's: WithBalance) ends deposed, so it counts in Lost.
	Elected, Lost uint64
	// Session is the name of the session record the names are held
	// through ("" while there is none), and Deadline the local time until
	// which it, and so every term held through it, is valid unless renewed
	// (zero while there is none). The session's last successful renewal
	// was sent at Deadline minus the lease.
	Session  string
	Deadline time.Time
	// SessionsCollected counts the dead session records (of any process)
	// this Group deleted: see NewGroup.
	SessionsCollected uint64
}

// NewGroup returns a Group on st. It takes the options of New; the lease,
// renew interval and margin apply to the session and so to every name.
// WithBalance, which New refuses, makes it a balanced Group. A Group that
// does not balance takes a dead process's names over by succession on a
// store that keeps successions, unless WithoutSuccession (see
// WithSuccession); Succession says which.
//
// The Group also collects the dead session records that processes leave
// behind at each restart or lost session: every four leases it reads a batch of 100 session records and deletes those it has
// seen dead (free), unchanged, for more than five leases plus twice the
// clock margin on its own clock. A held session is never deleted, and a
// deleted one loses nothing: the names that point at it keep their tokens
// and may be taken at once, with token + 1, and the election log keeps its
// events. GroupStats.SessionsCollected counts them.
func NewGroup(st store.Store, opts ...Option) (*Group, error) {
	if st == nil {
		return nil, optErr("store", "nil", "a store.Store (e.g. memstore.New())")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.preferSet || cfg.self.String() != "" {
		return nil, optErr("prefer", "on a Group", "WithPreference and WithCandidate on New only: a balanced Group's weight is WithShare (docs/prefer.md)")
	}
	if cfg.shareSet && !cfg.balance {
		return nil, optErr("share", cfg.share, "WithShare with WithBalance only: a Group that does not balance keeps what it takes")
	}
	usable := store.Usable(st)
	keeps := usable.Has(store.CapSuccession)
	switch {
	case cfg.asked > 0 && cfg.balance:
		return nil, errors.New("baton: WithSuccession and WithBalance do not go together: a balanced Group takes its share of a dead process's names, not all of them")
	case cfg.asked > 0 && !keeps:
		return nil, fmt.Errorf("baton: WithSuccession needs a store that keeps successions (store.Succeeder); %T does not", st)
	}
	cfg.succession = cfg.asked >= 0 && keeps && !cfg.balance
	if s := election.SharedSessionName(cfg.node, cfg.incarnation, 1<<30, max(cfg.share, 1)); len(s) > store.MaxNameLen {
		return nil, fmt.Errorf("baton: node id and incarnation make a session record name of %d bytes, over %d; use shorter ones (WithNode, WithIncarnation)", len(s), store.MaxNameLen)
	}
	cfg.logger = cfg.logger.With("node", cfg.node)
	if line := lacking(st, usable, cfg.asked >= 0 && !cfg.balance); line != "" {
		cfg.logger.Warn(line, "store", fmt.Sprintf("%T", st))
	}
	g := &Group{st: st, cfg: cfg, terms: map[string]*Term{}, wants: map[string]*want{}}
	mc := cfg.machine()
	// The feed reports every change; the re-reads that stand in for a
	// missed one can be rare.
	mc.Check = election.CheckLeases * cfg.lease
	if usable.Has(store.CapOrderedFeed) {
		// Its batches tell what has not changed: a succession's names
		// take their terms from the reads made while they waited
		// (election.Synced follows each batch).
		mc.OrderedFeed = true
	}
	g.d = newDriver(st, cfg, election.NewGroup(mc, true))
	g.d.announce = g.announce
	g.d.watch = st.WatchChanges
	g.d.feed = true
	g.d.ordered = mc.OrderedFeed
	g.collected = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	g.stopCollect = cancel
	c := newSessionCollector(st, cfg, func(n int) {
		g.mu.Lock()
		g.stats.SessionsCollected += uint64(n)
		g.mu.Unlock()
	})
	go func() {
		defer close(g.collected)
		c.run(ctx)
	}()
	return g, nil
}

// Node returns this node's id.
func (g *Group) Node() string { return g.cfg.node }

// Succession reports whether the Group takes a dead process's names over
// by succession (see WithSuccession), rather than with a write a name.
func (g *Group) Succession() bool { return g.cfg.succession }

// Campaign blocks until this node holds name and returns its Term, or until
// ctx ends, in which case it stops campaigning for name and returns ctx's
// error. The Term lives until it is lost or resigned; Campaign does not
// campaign again after that (Hold does). It returns ErrCampaigning if the
// Group already campaigns for name or holds it, and ErrClosed after Close.
func (g *Group) Campaign(ctx context.Context, name string) (*Term, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	won := make(chan campaignResult, 1)
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, ErrClosed
	}
	if g.wants[name] != nil || g.holding(name) {
		g.mu.Unlock()
		return nil, ErrCampaigning
	}
	g.wants[name] = &want{waiters: []chan campaignResult{won}}
	g.d.post(election.Start{Name: name})
	g.mu.Unlock()
	return awaitCampaign(ctx, won, func() {
		g.mu.Lock()
		if w := g.wants[name]; w != nil && !w.hold {
			delete(g.wants, name)
			g.d.post(election.Resign{Name: name})
		}
		g.mu.Unlock()
	})
}

// Hold campaigns for every name in names, and again for a name whenever its
// term ends, until ctx ends or Close; then it resigns the terms it holds.
// It returns at once. onTerm, if not nil, is called with each Term won, on
// the Group's own goroutine: it must not block (start the term's work on a
// goroutine of its own, and stop it when the Term's Context ends). Hold
// returns an error for an invalid name (and campaigns for none of them),
// ErrCampaigning for a name the Group already campaigns for, and ErrClosed
// after Close.
func (g *Group) Hold(ctx context.Context, names []string, onTerm func(*Term)) error {
	for _, name := range names {
		if err := checkName(name); err != nil {
			return err
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrClosed
	}
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if g.wants[name] != nil || g.holding(name) || seen[name] {
			return fmt.Errorf("baton: %w: %q", ErrCampaigning, name)
		}
		seen[name] = true
	}
	mine := make([]*want, len(names))
	for i, name := range names {
		mine[i] = &want{hold: true, onTerm: onTerm}
		g.wants[name] = mine[i]
		g.d.post(election.Start{Name: name, Hold: true}) // the machine campaigns again after each term
	}
	context.AfterFunc(ctx, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		for i, name := range names {
			if g.wants[name] == mine[i] {
				delete(g.wants, name)
				g.d.post(election.Resign{Name: name})
			}
		}
	})
	return nil
}

// holding reports whether name has a term that has not ended; g.mu held.
func (g *Group) holding(name string) bool {
	t := g.terms[name]
	return t != nil && t.Err() == nil
}

// Term returns the term of name if this node holds it now, else nil.
func (g *Group) Term(name string) *Term {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.holding(name) {
		return g.terms[name]
	}
	return nil
}

// Stats returns what the Group holds now and has held.
func (g *Group) Stats() GroupStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.stats
	s.Campaigning = max(len(g.wants)-s.Held, 0)
	if s.Held == 0 {
		s.Deadline = time.Time{}
	}
	return s
}

// Close stops campaigning for every name, ends every term and gives the
// session up, which frees every name at once for the other nodes (one
// write, not one per name). It waits until that write is done or ctx ends.
// A closed Group cannot campaign again.
func (g *Group) Close(ctx context.Context) error {
	g.stopCollect()
	defer func() { <-g.collected }()
	g.mu.Lock()
	g.closed = true
	for name, w := range g.wants {
		for _, c := range w.waiters {
			close(c)
		}
		delete(g.wants, name)
	}
	g.mu.Unlock()
	select {
	case <-g.d.done():
		return nil
	default:
	}
	g.d.post(election.Resign{})
	select {
	case <-g.d.done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// announce executes the machine's announcements on the loop goroutine.
func (g *Group) announce(now time.Time, ev election.Event, acts []election.Action) {
	g.cfg.obs.group(now, ev, acts)
	var lost int
	var cause error
	for _, a := range acts {
		switch a := a.(type) {
		case election.Elected:
			g.elected(a)
		case election.Extended:
			g.mu.Lock()
			for _, t := range g.terms {
				t.extend(a.Deadline)
			}
			g.stats.Deadline = a.Deadline
			g.mu.Unlock()
		case election.Lost:
			g.mu.Lock()
			t := g.terms[a.Name]
			if t != nil {
				t.end(a.Cause)
				g.stats.Held--
				if !errors.Is(a.Cause, ErrResigned) {
					g.stats.Lost++
				}
			}
			g.mu.Unlock()
			lost, cause = lost+1, a.Cause
			g.cfg.logger.Debug("term ended", "election", a.Name, "cause", a.Cause)
		case election.Released:
			g.released(a)
		case election.Failed:
			g.cfg.logger.Error("campaign stopped: the store failed for good", "election", a.Name, "err", a.Err)
			g.mu.Lock()
			if w := g.wants[a.Name]; w != nil {
				for _, c := range w.waiters {
					c <- campaignResult{err: a.Err}
				}
				delete(g.wants, a.Name)
			}
			g.mu.Unlock()
		}
	}
	if sess, alive := g.d.g.Session(); alive != (g.stats.Session != "") || (alive && sess != g.stats.Session) {
		g.mu.Lock()
		g.stats.Session = ""
		if alive {
			g.stats.Session = sess
		}
		g.mu.Unlock()
	}
	if lost > 0 && !errors.Is(cause, ErrResigned) {
		g.cfg.logger.Info("terms ended", "count", lost, "cause", cause)
	}
}

func (g *Group) elected(a election.Elected) {
	ctx, cancel := context.WithCancelCause(context.Background())
	t := &Term{
		d:        g.d,
		name:     a.Name,
		node:     g.cfg.node,
		token:    a.Token,
		ctx:      ctx,
		cancel:   cancel,
		deadline: a.Deadline,
		released: make(chan struct{}),
	}
	g.mu.Lock()
	g.terms[a.Name] = t
	g.stats.Elected++
	g.stats.Held++
	g.stats.Deadline = a.Deadline
	w := g.wants[a.Name]
	var onTerm func(*Term)
	if w != nil {
		for _, c := range w.waiters {
			c <- campaignResult{term: t}
		}
		w.waiters = nil
		if w.hold {
			onTerm = w.onTerm
		} else {
			delete(g.wants, a.Name) // a Campaign is answered once
		}
	}
	g.mu.Unlock()
	if w == nil {
		// Won after the campaign was stopped: the machine releases it.
		g.d.post(election.Resign{Name: a.Name, Token: a.Token})
	}
	if onTerm != nil {
		onTerm(t)
	}
}

func (g *Group) released(a election.Released) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t := g.terms[a.Name]; t != nil && t.Err() != nil {
		t.markReleased(a.Err)
		delete(g.terms, a.Name)
	}
}

// String names the node, for logs.
func (g *Group) String() string { return fmt.Sprintf("baton.Group(on %s)", g.cfg.node) }

// lacking returns the one line that says which capabilities a Group would
// use and st does not offer (usable: store.Usable), each with what it
// costs, or "" when it lacks none: successions, when the Group would take
// names over by succession (succession: not balanced, not
// WithoutSuccession), and then an ordered feed. A capability declared
// and not implemented, or implemented and not declared, is lacking too
// (the library reaches none but through the declaration), and the line
// says so.
func lacking(st store.Store, usable store.Capabilities, succession bool) string {
	declared := st.Capabilities()
	var parts []string
	for _, c := range []struct {
		cap  store.Capabilities
		want bool
		cost string
	}{
		{store.CapSuccession, succession, "a Group takes a dead process's names over one at a time, each after its lease, instead of all at once by succession"},
		{store.CapOrderedFeed, succession && usable.Has(store.CapSuccession), "a succession's names are read again, one read each, instead of adopted from the feed"},
	} {
		if !c.want || usable.Has(c.cap) {
			continue
		}
		what := "store lacks " + c.cap.String()
		if declared.Has(c.cap) {
			what = "store declares " + c.cap.String() + " but does not implement it"
		}
		parts = append(parts, what+": "+c.cost)
	}
	return strings.Join(parts, "; ")
}
