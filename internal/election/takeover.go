// Names held through another process's session: a contender awaits that
// session (await), an observer judges whether it lives, and when it ends
// its names are told, a batch a step (afterObserver, endSome), either
// passed on to a successor session (a succession) or taken one by one;
// the names a succession passed on to this group's session that it does
// not campaign for are listed and released (listOwn, listed).

package election

import (
	"slices"
	"time"

	"github.com/batonhq/baton/store"
)

// await registers name as waiting on session s, or, if s is known dead,
// tells the machine at once.
func (g *Group) await(now time.Time, name, s string) []Action {
	e := g.entry(name)
	if e.await != "" && e.await != s {
		// It waited on another session (the name moved): not any more.
		g.unwait(name, e)
	}
	if succ, ok := g.dead[s]; ok {
		if succ != "" {
			// Passed on before this name's read came (it predates it):
			// read again, and take the term if it was passed on to this
			// group.
			x := ended{session: s, successor: succ}
			return g.filter(now, name, e.m.Step(now, g.endEvent(&x)))
		}
		if len(g.takeNow(now, s, []string{name})) == 0 {
			return nil // left to the others for now (balanced)
		}
		return g.filter(now, name, e.m.Step(now, SessionEnded{Session: s}))
	}
	w := g.waiters[s]
	if w == nil {
		w = &waitSet{}
		g.waiters[s] = w
	}
	w.add(name)
	if e.await == "" {
		if !g.sweeping() {
			g.checkAt = now.Add(min(g.cfg.Renew, g.checkEvery()))
		}
		e.await = s
		g.waiting++
		g.order = append(g.order, name) // the sweep re-reads it
	}
	if g.observer(s) == nil {
		o := &observer{name: s, feed: &g.feed}
		g.obs[s] = o
		g.obsList = append(g.obsList, o)
		return o.read(now)
	}
	return nil
}

// heir is the successor an observer names when it ends a dead session
// now (Config.Succession): the group's own session while it is alive and
// at least a renew interval from its deadline, "" otherwise (the session
// then ends without one, and its names are taken one by one).
func (g *Group) heir(now time.Time) string {
	if !g.cfg.Succession || !g.sessions || g.balancing() || g.sm == nil || !g.view.alive ||
		g.view.deadline.Sub(now) < g.cfg.Renew {
		return ""
	}
	return g.view.name
}

// afterObserver handles an observer's step: when its session is dead, the
// names that wait on it are told, and the observer goes.
func (g *Group) afterObserver(now time.Time, s string, acts []Action) []Action {
	return g.afterObserverOf(now, s, g.obs[s], acts)
}

// afterObserverOf is afterObserver for o, the observer g.obs[s] (nil:
// none), which its caller has looked up already: an observer's step
// changes none of the Group's maps.
func (g *Group) afterObserverOf(now time.Time, s string, o *observer, acts []Action) []Action {
	if o != nil && o.corrupt != nil {
		// The session's record cannot be judged: every name that waits
		// on it ends its campaign, and nobody takes them over.
		g.dropObserver(s)
		waiting := g.waiters[s]
		delete(g.waiters, s)
		for _, name := range waiting.list() {
			if e := g.entry(name); e.await == s {
				e.await = ""
				g.waiting--
				acts = append(acts, g.stepName(now, name, sessionCorrupt{session: s, err: o.corrupt})...)
			}
		}
		return acts
	}
	if o != nil && !o.dead && o.inflight == opNone && g.waiters[s].len() == 0 {
		// Nobody waits any more (the names stopped or were taken while
		// a read was out): the observer goes, or it would poll forever
		// and the group would never be idle.
		g.dropObserver(s)
		return acts
	}
	if o == nil || !o.dead {
		return acts
	}
	if len(g.dead) > 4096 {
		clear(g.dead) // a cache: forgetting only costs a read
	}
	succ := o.final.Successor
	g.dead[s] = succ
	g.dropObserver(s)
	waiting := g.waiters[s].list()
	delete(g.waiters, s)
	if succ != "" {
		// Passed on: every name that awaits it is held through the
		// successor now. They read again, and if the successor is this
		// group's session, each takes the term its read shows; the names
		// the group does not campaign for are listed and released, a
		// poll later: the listing reads every name the session held, and
		// would take the store and the CPU from the reads of the names
		// the group campaigns for (at 100,000 names, half of the work
		// after the floor); their candidates elsewhere re-read at that
		// pace anyway.
		x := ended{session: s, names: waiting, successor: succ}
		if succ == g.view.name && g.sm != nil {
			g.listOwn(now, s)
			if f := o.final; g.view.fed != 0 && f.SuccessorHolder == g.cfg.Node && f.SuccessorIncarnation == g.cfg.Incarnation {
				// With a feed in order, the names that it shows
				// unchanged since their last read take their terms
				// from it, once the feed reported this very write
				// (see endSome).
				final := o.final
				x.dead, x.fed, x.until = &final, g.view.fed, now.Add(g.cfg.Poll)
			}
		}
		g.ending = append(g.ending, x)
		return concat(acts, g.endSome(now))
	}
	if g.cfg.Balance && g.sessions {
		var names []string
		for _, name := range waiting {
			if g.entry(name).await == s {
				names = append(names, name)
			}
		}
		waiting = g.takeNow(now, s, names)
	}
	g.ending = append(g.ending, ended{session: s, names: waiting})
	return concat(acts, g.endSome(now))
}

// listing is where the listing of the group's session stands: the last
// name listed, when the next page is due (zero: a List is out), and
// whether another succession passed names on to it since the listing
// began (it lists again from the start when it ends: those names may
// sort before the last one listed).
type listing struct {
	after string
	at    time.Time
	again bool
}

// listOwn lists, a poll from now, the records held through the group's
// session, after a succession passed names on to it. Its own session,
// not the one that ended: a collector elsewhere may settle the names of
// the session that ended onto this one (store.Succeeder.Settle) and
// delete it before the listing reads it, and a listing of that session
// would then find nothing, and the names the group does not campaign for
// would stay held through its session while it lives (the simulator's
// seeds whose nodes campaign for different names found it). It costs a
// read of every record the group holds through its session, once per
// succession (on SQLite and PostgreSQL the session index's rows; on
// etcd, which keeps no such index, a listing of either session reads
// every record anyway).
func (g *Group) listOwn(now time.Time, ended string) {
	s := g.view.name
	if g.cfg.Mutate.ListEnded && ended != "" {
		s = ended // mutation: the listing as it was
	}
	if l := g.lists[s]; l != nil {
		l.again = true
		return
	}
	if g.lists == nil {
		g.lists = map[string]*listing{}
	}
	g.lists[s] = &listing{at: now.Add(g.cfg.Poll)}
}

// listed takes a page of the records held through the group's session,
// those that successions passed on to it included (ListReply): each one
// that the group does not campaign for (no machine, or one that stopped) is
// released at once, with its token, so that its candidates take it as a
// free record; the others are its machines' (they read and adopt their
// own). A failed read is tried again a poll later; a full page asks for
// the next.
func (g *Group) listed(now time.Time, r ListReply) []Action {
	l := g.lists[r.Session]
	if l == nil {
		return nil
	}
	if r.Err != nil {
		if store.Permanent(r.Err) {
			delete(g.lists, r.Session) // nothing to gain from asking again
			return nil
		}
		l.at = now.Add(g.cfg.Poll)
		return nil
	}
	var acts []Action
	for _, rec := range r.Records {
		if e := g.entry(rec.Name); e != nil && !e.still() {
			continue // the machine's (its reply would be mistaken for this one's)
		}
		if rec.Session != g.view.name || rec.Holder != g.cfg.Node || rec.Incarnation != g.cfg.Incarnation {
			continue // not held through this group's session any more
		}
		free, kind := freed(rec)
		acts = append(acts, Swap{Swap: store.Swap{Expect: rec.Version, Record: free, Event: kind}})
	}
	if len(r.Records) < ListPage {
		if l.again {
			l.after, l.at, l.again = "", now.Add(g.cfg.Poll), false
			return acts
		}
		delete(g.lists, r.Session)
		return acts
	}
	l.after = r.Records[len(r.Records)-1].Name
	return append(acts, List{Session: r.Session, After: l.after})
}

// DefaultTakeStep is the most names a Group tells in one step that the
// session they await is dead, unless Config.TakeStep says otherwise. A
// takeover of many names is emitted that many swaps a step, the rest due
// at once (Next), so that the runtime sends the first batches while the
// machine plans the next, instead of after it planned them all (100,000
// names in one step took about 170 ms on this project's 2-core benchmark
// machine). It is the size of the library's batched writes
// (Store.SwapMany), so each step fills one batch.
const DefaultTakeStep = 1000

// ended is the names of a dead session that are still to be told so, in
// order: those that still await it then.
type ended struct {
	session   string
	names     []string
	successor string // the session it was passed on to ("" none: taken per name)
	// dead is the session's record as this group's succession left it,
	// when the names may take their terms from their last reads: the
	// feed in order was live under generation fed when the succession
	// was found. The names are told once that feed reported the write
	// (synced reaches dead.Version); if the feed closes first, or has not
	// reported it by until, dead is dropped and the names read.
	dead  *store.Record
	fed   uint64
	until time.Time
}

// endEvent is what a name that awaits x.session is told.
func (g *Group) endEvent(x *ended) Event {
	if x.successor != "" {
		return passed{session: x.session, adopt: x.successor == g.view.name && g.sm != nil, dead: x.dead}
	}
	return SessionEnded{Session: x.session}
}

// reported says whether the feed has reported the write that ended x's
// session, under the generation live when it was found: a name whose
// last read that feed shows unchanged is then known as the succession
// left it.
func (g *Group) reported(x *ended) bool {
	if g.view.fed != x.fed {
		return false
	}
	return g.synced >= x.dead.Version || g.cfg.Mutate.AdoptUnsynced
}

// endSome tells the next Config.TakeStep names of ending that await a dead
// session that it ended (SessionEnded), and leaves the rest due now. A
// name told late may have moved on meanwhile (read again, stopped, taken
// through another path): it is told only if it still awaits that session,
// and the machine takes it only if it has nothing in flight, as when told
// at once. The names are looked at here, a step at a time, not when the
// session was found dead: for 100,000 names that look took 30 ms.
func (g *Group) endSome(now time.Time) []Action {
	var acts []Action
	budget := g.cfg.TakeStep
	if budget <= 0 {
		budget = DefaultTakeStep
	}
	for budget > 0 && len(g.ending) > 0 {
		x := &g.ending[0]
		if x.dead != nil && !g.reported(x) {
			if g.view.fed == x.fed && now.Before(x.until) {
				g.endingAt = x.until // or at the Synced that reports it
				return acts
			}
			x.dead = nil // the feed closed, or lags: the names read
		}
		n := min(len(x.names), budget)
		for _, name := range x.names[:n] {
			if e := g.entry(name); e != nil && e.await == x.session {
				acts = concat(acts, g.stepEntry(now, name, e, g.endEvent(x)))
			}
		}
		x.names = x.names[n:]
		budget -= n
		if len(x.names) == 0 {
			g.ending[0] = ended{}
			g.ending = g.ending[1:]
		}
	}
	g.endingAt = time.Time{}
	if len(g.ending) > 0 {
		g.endingAt = now
	} else {
		g.ending = nil
	}
	return acts
}

// observer returns the observer of session s, nil if none: g.obs[s],
// found by a scan of obsList while the group watches few sessions (most
// often none, one or two), which is cheaper than hashing s. Every store
// answer and change notification asks, whichever record it is about.
func (g *Group) observer(s string) *observer {
	if len(g.obsList) > 8 {
		return g.obs[s]
	}
	for _, o := range g.obsList {
		if o.name == s {
			return o
		}
	}
	return nil
}

// dropObserver ends the observer of session s.
func (g *Group) dropObserver(s string) {
	if o := g.obs[s]; o != nil {
		delete(g.obs, s)
		i := slices.Index(g.obsList, o)
		g.obsList[i] = g.obsList[len(g.obsList)-1]
		g.obsList[len(g.obsList)-1] = nil
		g.obsList = g.obsList[:len(g.obsList)-1]
	}
}

// unwait takes name off the waiters of the session it awaits; the session's
// observer goes when nobody waits on it any more.
func (g *Group) unwait(name string, e *entry) {
	s := e.await
	e.await = ""
	g.waiting--
	if w := g.waiters[s]; w != nil {
		w.remove(name)
		if w.len() == 0 {
			delete(g.waiters, s)
			if o := g.obs[s]; o != nil && o.inflight == opNone {
				g.dropObserver(s) // nobody waits; a late reply is dropped
			}
		}
	}
}
