package explore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// This file is what a Group configuration adds for successions beyond
// the Groups' own: a dead process's session planted in the store before
// the nodes start (Sessions.Ghost), so that a succession comes within a
// few events of the start instead of after a session lost to the
// store's delays, and the collector's settling of the names a
// succession passed on (Sessions.Collect, evSettle), which is memstore's
// own Settle (store.Succeeder), the call baton.Group's collector and the
// simulator's (vcluster's sessioncollector.go) make; the dead process's
// release in flight (Sessions.Release, evGhost); names a node does not
// campaign for (Sessions.Skip) and an operator's transfer request on
// them (Sessions.Transfer, evTransfer, baton.RequestResign); and the
// invariants that these make checkable: a name left to others is let go
// (checkLeft), a settle deposes nobody (checkLost).

// ghost is the planted dead process (Sessions.Ghost): its session
// record's holder.
const ghost = "ghost"

// ghostSession is the name of the session record of the planted dead
// process called holder.
func ghostSession(holder string) string { return election.SessionName(holder, holder+".1", 1) }

// validate checks what this file adds to a Group configuration.
func (s *Sessions) validate() error {
	if s.Ghost < 0 {
		return fmt.Errorf("explore: a planted dead session's lease %v: want positive, or 0 for none", s.Ghost)
	}
	if (s.Collect || s.Chain) && !s.Succession {
		return fmt.Errorf("explore: a collector's settling, or a planted succession, with no succession: want Succession")
	}
	if s.Stagger && !s.Release {
		return fmt.Errorf("explore: a staggered start without the dead process's release: want Release")
	}
	if s.Chain && s.Ghost == 0 {
		return fmt.Errorf("explore: a planted succession with no planted dead session: want Ghost")
	}
	return nil
}

// plantGhost writes, through the store's own Swap, the planted dead
// process's session record (Sessions.Ghost: held by ghost with that
// lease, at token 1) and every name held through it at token 1, as a
// process that died holding them leaves them: its session is never
// renewed, and a node that finds it dead ends it (with
// Sessions.Succession, naming its own session the successor). With
// Sessions.Chain, the names were ghost-0's, which died first, and
// ghost-1 ended ghost-0's session naming its own the successor (the
// write a Group makes), then died too before a collector settled them:
// they resolve through both sessions to ghost-1's, a token up. The
// names' tokens as the store shows them count as won before (w.tokens:
// ghost-1 took them). The store takes these writes on its empty start
// (Validate checked the lease), or the explorer is broken: it panics.
//
// It returns the dead process's releases in flight (Sessions.Release).
func (w *world) plantGhost(out *strings.Builder) []store.Swap {
	g := w.c.Group
	if g.Ghost <= 0 {
		return nil
	}
	ctx := context.Background()
	swap := func(r store.Record, expect int64) store.Record {
		r, err := w.st.Swap(ctx, store.Swap{Record: r, Expect: expect})
		if err != nil {
			panic(fmt.Sprintf("explore: planting %s: %v", r.Name, err))
		}
		return r
	}
	first := ghost
	if g.Chain {
		first = ghost + "-0"
	}
	session := func(holder string) store.Record {
		r := swap(store.Record{Name: ghostSession(holder), Holder: holder, Incarnation: holder + ".1", Token: 1, Lease: g.Ghost}, 0)
		w.say(out, "store: planted %s: %s lease=%v", r.Name, recText(r), r.Lease)
		return r
	}
	s := session(first)
	for _, nm := range g.Names {
		r := swap(store.Record{Name: nm, Holder: first, Incarnation: first + ".1", Token: 1, Lease: g.Ghost, Session: s.Name}, 0)
		w.say(out, "store: planted %s: %s session=%s", nm, recText(r), r.Session)
	}
	if g.Chain {
		next := session(ghost + "-1")
		r := swap(store.Record{Name: s.Name, Token: s.Token, Lease: s.Lease, Successor: next.Name}, s.Version)
		w.say(out, "store: planted %s: %s successor=%s", r.Name, recText(r), r.Successor)
	}
	for k, nm := range g.Names {
		r, err := w.st.Get(ctx, nm)
		if err != nil {
			panic(fmt.Sprintf("explore: reading %s planted: %v", nm, err))
		}
		w.tokens[k] = r.Token
	}
	if !g.Release {
		return nil
	}
	var sws []store.Swap
	for _, nm := range g.Names {
		r, err := w.st.Get(ctx, nm)
		if err != nil {
			panic(fmt.Sprintf("explore: reading %s planted: %v", nm, err))
		}
		sws = append(sws, store.Swap{Expect: r.Version, Record: store.Record{Name: nm, Token: r.Token, Lease: r.Lease}, Event: store.Released})
		w.say(out, "store: the dead process's release of %s expect=v%d is on its way", nm, r.Version)
	}
	return sws
}

// ghostRelease applies the planted dead process's release of every
// name (Sessions.Release): each name's record as the planting left it
// (plantGhost), made free at the version it shows, as a machine's
// release writes it. It was sent before the process died; the store
// applies it at any instant (evGhost). A release the store refuses
// changes nothing, so the event stays enabled: applying it again later
// is the path where it landed only then; once one lands, the record's
// version moved on and every later one is refused.
func (w *world) ghostRelease(out *strings.Builder) error {
	p := &world{c: w.c, st: w.c.newStore(), tokens: make([]uint64, len(w.c.Group.Names))}
	sws := p.plantGhost(nil)
	w.st = deepCopy(w.st)
	w.sthashd = false
	for _, sw := range sws {
		rec, err := w.st.Swap(context.Background(), sw)
		switch {
		case errors.Is(err, store.ErrInvalid):
			return fmt.Errorf("the store refused the dead process's release of %s as invalid: %v", sw.Record.Name, err)
		case err != nil:
			w.say(out, "store: the dead process's release of %s expect=v%d: %s", sw.Record.Name, sw.Expect, errText(err))
		default:
			w.say(out, "store: the dead process's release of %s expect=v%d: %s", sw.Record.Name, sw.Expect, recText(rec))
		}
	}
	return nil
}

// settleable lists the session records a collector may settle now
// (Sessions.Collect), sorted: free (dead) and naming a successor, while
// a name's record is passed on by a succession not settled yet (a read
// of it shows Via). A collector's pass settles every such session before
// it deletes it (sessioncollector.go); its reads before the call change
// nothing, so the call alone is an event, at any instant. A session
// whose names are settled already (or pass through a later one) is
// settled to no change: the state reached is the one it left, merged.
func (w *world) settleable() []string {
	if w.c.Group == nil || !w.c.Group.Collect {
		return nil
	}
	ctx := context.Background()
	passed := false
	for _, nm := range w.c.Group.Names {
		if r, err := w.st.Get(ctx, nm); err == nil && r.Via != "" {
			passed = true
		}
	}
	if !passed {
		return nil
	}
	// One page of the session records, as a collector's round reads:
	// a configuration has a few.
	names, err := w.st.NamesPage(ctx, store.NameQuery{Prefix: store.SessionPrefix, Limit: store.MaxPage})
	if err != nil {
		panic(fmt.Sprintf("explore: listing the session records: %v", err))
	}
	var dead []string
	for _, s := range names {
		if rec, err := w.st.Get(ctx, s); err == nil && rec.Free() && rec.Successor != "" {
			dead = append(dead, s)
		}
	}
	return dead
}

// settleEvents are the collector's settles enabled in w, one per
// session record settleable lists (Idx its index there).
func (w *world) settleEvents() []Event {
	var evs []Event
	for j := range w.settleable() {
		evs = append(evs, Event{Kind: evSettle, Idx: int8(j)})
	}
	return evs
}

// settleDead is the collector's Settle of the j-th settleable session
// record, on memstore (copied on write): every name passed on from it
// is rewritten to point at its successor. A Settle the store refuses as
// invalid breaks the invariant, as a swap refused so does.
func (w *world) settleDead(j int, out *strings.Builder) error {
	dead := w.settleable()
	if j >= len(dead) {
		return fmt.Errorf("explore: settle i=%d: no such dead session record", j)
	}
	w.st = deepCopy(w.st)
	w.sthashd = false
	n, err := w.st.Settle(context.Background(), dead[j], 0)
	if err != nil {
		w.say(out, "collector: settle %s: %s", dead[j], errText(err))
		if errors.Is(err, store.ErrInvalid) {
			return fmt.Errorf("the store refused to settle %s as invalid: %v", dead[j], err)
		}
		return nil
	}
	w.say(out, "collector: settled %d names passed on from %s", n, dead[j])
	for _, nm := range w.c.Group.Names {
		if r, err := w.st.Get(context.Background(), nm); err == nil {
			w.say(out, "store: %s: %s session=%s", nm, recText(r), r.Session)
		}
	}
	return nil
}

// settleStart is the settled start (Config.Settle): world.settle, or,
// with Sessions.Stagger, node-0's events of it first, then the dead
// process's release, then the rest, so that node-0 read the name held
// through the dead process's session and the others read it free: the
// one order of those that gives them different reads, explored from.
func (w *world) settleStart() ([]Event, error) {
	if g := w.c.Group; g == nil || !g.Stagger {
		return w.settle()
	}
	var p []Event
	for {
		var next *Event
		for _, ev := range w.enabled() {
			if ev.Node == 0 && (ev.Kind == evTick || ev.Kind == evApply || ev.Kind == evDeliver) {
				next = &ev
				break
			}
		}
		if next == nil {
			break
		}
		p = append(p, *next)
		if err := w.do(*next, nil); err != nil {
			return p, err
		}
	}
	ev := Event{Kind: evGhost}
	p = append(p, ev)
	if err := w.do(ev, nil); err != nil {
		return p, err
	}
	if !w.c.feeding() {
		rest, err := w.settle()
		return append(p, rest...), err
	}
	// With a feed, node-0's lags: the notifications of its own writes and
	// of the release stay queued, so that its view is still the one it
	// read (group-2x1-unsynced, group-2x1-gap).
	rest, err := w.settleExcept(func(ev Event) bool { return ev.Kind == evNote && ev.Node == 0 })
	return append(p, rest...), err
}

// skips reports whether node i does not campaign for the name nm
// (Sessions.Skip).
func (c *Config) skips(i int, nm string) bool {
	return c.Group != nil && i < len(c.Group.Skip) && slices.Contains(c.Group.Skip[i], nm)
}

// listing reports whether g has a listing of a session under way or due
// (its unexported lists, read by reflection as the hash reads every
// field): after a succession passed names on to it, it lists its session
// and releases those it does not campaign for.
func listing(g *election.Group) bool {
	return reflect.ValueOf(g).Elem().FieldByName("lists").Len() > 0
}

// checkLeft is the invariant of the names a node does not campaign for
// (Sessions.Skip): none is held through its live session unless it has
// a listing under way or a store call in flight (the succession that
// passed it on, the listing's read, its release). Otherwise nothing the
// node will do lets it go: it stays with it while the node lives, and
// its candidates never take it (the simulator's liveness check sees
// that at the end of a run; this sees it when the node's last call is
// answered).
func (w *world) checkLeft() error {
	if w.c.Group == nil || len(w.c.Group.Skip) == 0 {
		return nil
	}
	for i := range w.nodes {
		n := w.nodes[i]
		if !n.up || n.g == nil || listing(n.g) || slices.ContainsFunc(w.reqs, func(r request) bool { return r.node == i && r.inc == n.inc }) {
			continue
		}
		s, alive := n.g.Session()
		if !alive {
			continue
		}
		for _, nm := range w.c.Group.Names {
			if !w.c.skips(i, nm) {
				continue
			}
			if r, err := w.st.Get(context.Background(), nm); err == nil && r.Session == s {
				return fmt.Errorf("node-%d holds %s through its session %s, though it does not campaign for it, with no listing and no store call under way: nothing lets it go while it lives", i, nm, s)
			}
		}
	}
	return nil
}

// transferable lists the names an operator may ask to be handed over
// now (Sessions.Transfer): those a node does not campaign for, held, with
// no request on them yet (at most one a name while it is held).
func (w *world) transferable() []string {
	g := w.c.Group
	if g == nil || !g.Transfer {
		return nil
	}
	var names []string
	for _, nm := range g.Names {
		skipped := false
		for i := range w.nodes {
			skipped = skipped || w.c.skips(i, nm)
		}
		if !skipped {
			continue
		}
		if r, err := w.st.Get(context.Background(), nm); err == nil && !r.Free() && r.Transfer == "" {
			names = append(names, nm)
		}
	}
	return names
}

// transferEvents are the operator's requests enabled in w, one per name
// transferable lists (Idx its index there).
func (w *world) transferEvents() []Event {
	var evs []Event
	for j := range w.transferable() {
		evs = append(evs, Event{Kind: evTransfer, Idx: int8(j)})
	}
	return evs
}

// transfer is the operator's request that the holder of the j-th
// transferable name hand it over (baton.RequestResign, on memstore
// copied on write: it reads the record and writes it with Transfer set,
// at the token read), as one event.
func (w *world) transfer(j int, out *strings.Builder) error {
	names := w.transferable()
	if j >= len(names) {
		return fmt.Errorf("explore: transfer i=%d: no such name", j)
	}
	nm := names[j]
	rec, err := w.st.Get(context.Background(), nm)
	if err != nil {
		return fmt.Errorf("explore: transfer of %s: %w", nm, err)
	}
	w.st = deepCopy(w.st)
	w.sthashd = false
	if err := baton.RequestResign(context.Background(), w.st, nm, rec.Token); err != nil {
		w.say(out, "operator: request that the holder of %s hand it over (token %d): %s", nm, rec.Token, errText(err))
		if errors.Is(err, store.ErrInvalid) {
			return fmt.Errorf("the store refused the operator's request on %s as invalid: %v", nm, err)
		}
		return nil
	}
	r, _ := w.st.Get(context.Background(), nm)
	w.say(out, "operator: request that the holder of %s hand it over (token %d): %s", nm, rec.Token, recText(r))
	return nil
}

// overlaps are the Group mutations whose breach is two valid terms of
// a name at once, on two nodes: a configuration of one node (the
// planted dead process's terms are not checked) cannot show them.
var overlaps = map[string]bool{"session-no-margin": true, "session-name-expiry": true}

// checkLost is the invariant of a name a Group lost, in the
// configurations whose collector settles (Sessions.Collect): it did not
// lose it as deposed (changed by another writer) while the store still
// holds it for that very term (its holder, incarnation and token).
// Settling rewrites a record without changing what a reader sees; a
// term lost to it is taken again only a round trip later, which the
// simulator's liveness check sees at the end of a run, and this at
// once. before is the node's Group before the step (its term's token).
func (w *world) checkLost(i int, before *election.Group, a election.Lost) error {
	if !w.c.Group.Collect || before == nil || !errors.Is(a.Cause, election.ErrDeposed) {
		return nil
	}
	m := before.Machine(a.Name)
	if m == nil || m.Token() == 0 {
		return nil
	}
	rec, err := w.st.Get(context.Background(), a.Name)
	if err != nil {
		return nil
	}
	cfg := w.c.groupConfig(i, w.nodes[i].inc)
	if rec.Holder == cfg.Node && rec.Incarnation == cfg.Incarnation && rec.Token == m.Token() {
		return fmt.Errorf("node-%d lost %s as deposed (%v) while the store holds it for that very term: %s", i, a.Name, oneLine(a.Cause.Error()), recText(rec))
	}
	return nil
}
