package election

import (
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton/store"
)

// Group is the election protocol for many names on one node, as one
// deterministic machine: one Machine per name, the observers of other
// processes' sessions that its contenders await, and, in session mode, the
// node's own session.
//
// In session mode (NewGroup with sessions true) the names are held through
// one session record that the Group renews once per Renew, whatever the
// number of names: a renewal is one store write, not one per name. The
// session is itself a Machine on the record SessionName(node, incarnation,
// seq), so its renewals, deadline and stepping down are the protocol's own.
// A name's term is valid exactly as long as the session: taken through a
// session that is alive, it shares the session's deadline, and it ends when
// the session ends. Tokens stay per name and rise on every acquisition.
//
// A contender that finds a name held through another process's session
// awaits that session (one observer per session, however many names wait
// on it): when the session record stayed unchanged for its lease plus
// twice the margin on this node's clock, the observer writes it free, and
// every waiting name is taken with a swap on the version it read. A dead
// session is never held again, so the holder's deadline has passed before
// any of its names is taken: the same argument as a single name's takeover,
// made once per session instead of once per name.
//
// What a contender reads. It waits on the session, not on each name: the
// session's observer reads the session record every Poll or, while the
// store's change feed is live (Feed), only when the feed reports a change
// of it and once the wait (lease + 2e) has run out, so that watching a
// session costs one read per renewal, whatever the number of names held
// through it. The awaited names themselves are read at once when the feed
// reports a change of one, and otherwise only by the check sweep: about
// once per Config.Check each, and at most CheckRate names a second in all
// (the held names' re-reads share the sweep). Safety rests on none of
// these reads: a name held through a live session is taken only after the
// session was written dead, and every take is a swap on the version read.
// What they bound is how soon a contender sees a name freed while its
// holder's session lives (one name resigned, handed over or transferred):
// with the feed, at once (one notification, one read); without a feed, or
// if it closed, within a sweep of the names (max(Check, N/CheckRate) for
// N names held and awaited, plus a sweep interval). A crash takeover waits
// for none of it: the holder's session stops changing, the observer finds
// it unchanged when the wait runs out, writes it dead, and every waiting
// name is taken at once, lease + 2e after the last renewal it saw, as
// before (with the feed the read comes when the wait ends; polling, within
// a Poll of it). A contender asked to come here (a pull) still reads every
// Poll.
//
// Without sessions, a Group holds each name by renewing its own record: the
// protocol of a single Elector, which is a Group of one name.
type Group struct {
	cfg      Config
	sessions bool

	names   map[string]*entry
	entries []*entry // names's values, in the order the names started
	count   [4]int   // names per phase
	timers  timerHeap

	// Session mode.
	view    sessionView
	seq     int
	sm      *Machine            // own session, nil when none
	waitOwn map[string]struct{} // names waiting for the session to acquire

	// Contenders waiting on other processes' sessions.
	obs     map[string]*observer
	obsList []*observer         // obs's values, in no order: iterated for every Next
	waiters map[string]*waitSet // session -> names
	dead    map[string]string   // sessions known to be dead -> their successor ("" none)
	feed    bool                // the change feed is live (Feed)
	fed     bool                // a feed was live before
	// With Config.OrderedFeed: the number of feeds that went live (the
	// current one's generation is view.fed while it is live), and the
	// version up to which the live feed reported every write (Synced).
	feeds  uint64
	synced int64

	// The check sweep: re-reads of held names (session mode) and of
	// awaited ones (see check).
	order   []string // names in the order they were won or began to await
	next    int      // index into order of the next name to check
	checkAt time.Time
	waiting int // names that await another process's session (entry.await set)

	out int // store requests sent and not answered

	balanceAt time.Time        // the next balance round (Config.Balance)
	later     map[string]later // names of dead sessions left to the others for now
	laterAt   time.Time        // the earliest of later (zero: none)

	// Sessions passed on to this group's session whose names it lists
	// (List), for those it does not campaign for (listed).
	lists map[string]*listing

	// Names to tell that their session ended, Config.TakeStep a step (endSome).
	ending   []ended
	endingAt time.Time // when the rest of ending is due (zero: none left)
	split    *split    // takeNow's view, reused for a poll interval

	// The scratch of a balance count (loads), empty between steps.
	loadBuf  []load
	loadAt   map[string]int // index in loadBuf by node, past 8 nodes (loadIndex)
	loadsOut bool           // loadBuf is in use
}

// entry is one name's machine and what the group keeps about it.
type entry struct {
	name  string // its key in names
	m     *Machine
	phase phase     // the machine's phase after its last step
	due   time.Time // the timer it has in timers (zero: none)
	await string    // the session it awaits ("" none)
}

// still reports whether the name's machine is idle with nothing in
// flight: a swap of its record that the group sends (a listing's release)
// cannot be mistaken for one of the machine's.
func (e *entry) still() bool { return e.phase == idle && e.m.inflight == opNone }

// NewGroup returns an idle Group. cfg.Name is ignored; cfg.Check is how
// often each held name is re-read in session mode (0: Lease), and each
// name that awaits another process's session (0: Poll), but never more
// than CheckRate names a second in all.
func NewGroup(cfg Config, sessions bool) *Group {
	if sessions && cfg.Check <= 0 {
		cfg.Check = cfg.Lease
	}
	g := &Group{
		cfg: cfg, sessions: sessions,
		names: map[string]*entry{}, waitOwn: map[string]struct{}{}, obs: map[string]*observer{},
		waiters: map[string]*waitSet{}, dead: map[string]string{}, later: map[string]later{},
	}
	return g
}

// Machine returns the machine of name, or nil before its first Start.
func (g *Group) Machine(name string) *Machine {
	if e := g.entry(name); e != nil {
		return e.m
	}
	return nil
}

// Session returns the name of the group's session record and whether that
// session is alive ("" without one).
func (g *Group) Session() (name string, alive bool) {
	if g.sm == nil {
		return "", false
	}
	return g.view.name, g.view.alive
}

// Next returns when the group wants the next Tick; zero means no timer.
func (g *Group) Next() time.Time {
	var at time.Time
	for len(g.timers) > 0 {
		top := g.timers[0]
		if sameInstant(top.e.due, top.at) {
			at = top.at
			break
		}
		g.timers.pop() // stale
	}
	// at = earliest(at, b), written out at the busiest sites below (the
	// session, every observer, the sweep): the call would cost more than
	// the comparison.
	if g.sm != nil {
		if b := g.sm.Next(); at.IsZero() || (!b.IsZero() && b.Before(at)) {
			at = b
		}
	}
	for _, o := range g.obsList {
		if b := o.next(); at.IsZero() || (!b.IsZero() && b.Before(at)) {
			at = b
		}
	}
	if g.sweeping() {
		if b := g.checkAt; at.IsZero() || (!b.IsZero() && b.Before(at)) {
			at = b
		}
	}
	if g.balancing() {
		at = earliest(at, g.balanceAt)
	}
	if len(g.lists) > 0 { // ranging over a map costs even when it is empty
		for _, l := range g.lists {
			at = earliest(at, l.at)
		}
	}
	if g.laterAt != (time.Time{}) || at.IsZero() {
		at = earliest(at, g.laterAt)
	}
	if g.endingAt != (time.Time{}) || at.IsZero() {
		at = earliest(at, g.endingAt)
	}
	return at
}

// balancing reports whether a balance round is due some time: balanced,
// the session alive, and names to ask for.
func (g *Group) balancing() bool {
	return g.cfg.Balance && g.sessions && g.view.alive && g.count[contending] > 0 && !g.balanceAt.IsZero()
}

// Step feeds one event at local monotonic time now and returns the actions
// to execute, in order. Events and actions carry the name they are about;
// a GetReply or SwapReply must carry the name of the Get or Swap it
// answers.
func (g *Group) Step(now time.Time, ev Event) []Action {
	var acts []Action
	in := ev // passed on as it came: boxing it again costs an allocation
	switch ev := ev.(type) {
	case Start:
		acts = g.start(now, ev)
	case Resign:
		acts = g.resign(now, ev)
	case Tick:
		acts = g.tick(now)
	case Feed:
		g.feed = ev.Live
		if g.fed || !ev.Live {
			// A feed lost, or a new one after a gap: a write may have
			// gone unreported; the observers read again now (and poll
			// while there is no feed).
			for _, o := range g.obsList {
				if o.inflight == opNone && !o.readAt.IsZero() {
					o.readAt = now
				}
			}
		}
		g.fed = g.fed || ev.Live
		// A new generation of reads for every feed that goes live: the
		// reads made under the last one are not covered by this one.
		g.view.fed, g.synced = 0, 0
		if ev.Live && g.cfg.OrderedFeed {
			g.feeds++
			g.view.fed = g.feeds
		}
		if len(g.ending) > 0 && g.ending[0].dead != nil {
			g.endingAt = now // a succession waiting for the feed: its names read
		}
	case Synced:
		if g.view.fed != 0 && ev.Version > g.synced {
			g.synced = ev.Version
			if len(g.ending) > 0 && g.ending[0].dead != nil && g.synced >= g.ending[0].dead.Version {
				acts = g.endSome(now)
			}
		}
	case Changed:
		if g.sm != nil && ev.Name == g.sm.cfg.Name {
			break
		}
		if o := g.observer(ev.Name); o != nil {
			acts = g.afterObserverOf(now, ev.Name, o, o.changed(now, ev.Version))
		} else if e := g.entry(ev.Name); e != nil {
			acts = g.stepEntry(now, ev.Name, e, in) // the machine reads only the version
		}
	case Candidates:
		acts = g.stepPrefer(now, ev.Name, in)
	case SafePoint:
		acts = g.stepPrefer(now, ev.Name, in)
	case SetPolicy:
		acts = g.stepPrefer(now, ev.Name, in)
	case ListReply:
		g.out--
		acts = g.listed(now, ev)
	case GetReply:
		return g.StepGet(now, &ev)
	case SwapReply:
		return g.StepSwap(now, &ev)
	default:
		panic(fmt.Sprintf("election: event %T is not for a Group", ev))
	}
	return g.stepped(now, acts)
}

// StepGet is Step(now, r) without boxing r into an Event and without
// copying it: the path of the runtimes, which step every store answer
// (a record is large). The Group reads *r during the call only. Step
// calls it.
func (g *Group) StepGet(now time.Time, r *GetReply) []Action {
	return g.reply(now, r, false)
}

// StepSwap is Step(now, r) without boxing r into an Event, as StepGet.
func (g *Group) StepSwap(now time.Time, r *SwapReply) []Action {
	return g.reply(now, (*GetReply)(r), true)
}

// stepped ends every step of the group: the session given up when no name
// needs it, the store requests counted, Idle when nothing is left to do.
func (g *Group) stepped(now time.Time, acts []Action) []Action {
	if g.sessionUnneeded() {
		acts = append(acts, g.stepSession(now, Resign{})...)
	}
	for _, a := range acts {
		switch a.(type) {
		case Get, Swap, List:
			g.out++
		}
	}
	if g.out == 0 && g.sm == nil && len(g.obs) == 0 && len(g.lists) == 0 && g.count[contending]+g.count[leading]+g.count[releasing] == 0 {
		acts = append(acts, Idle{})
	}
	return acts
}

func (g *Group) start(now time.Time, ev Start) []Action {
	name := ev.Name
	if g.entry(name) == nil {
		cfg := g.cfg
		cfg.Name = name
		m := New(cfg)
		m.swept = true
		if g.sessions {
			m.sess = &g.view
		}
		e := &entry{name: name, m: m, phase: idle}
		g.names[name] = e
		g.entries = append(g.entries, e)
		g.count[idle]++
	}
	var acts []Action
	if g.sessions && g.sm == nil {
		acts = g.startSession(now)
	}
	return concat(acts, g.stepName(now, name, Start{Hold: ev.Hold}))
}

func (g *Group) resign(now time.Time, ev Resign) []Action {
	if ev.Name != "" {
		if g.entry(ev.Name) == nil {
			return nil
		}
		var acts []Action
		if ev.Token != 0 && g.sm != nil {
			// A term's owner saw its deadline pass (Term.Valid): if the
			// session's deadline has passed, the session ends every term
			// held through it at once, and this resign finds nothing to
			// do; if a renewal moved it meanwhile, only this term ends.
			acts = g.stepSession(now, Tick{})
		}
		return append(acts, g.stepName(now, ev.Name, Resign{Token: ev.Token})...)
	}
	// Every name. Through a session, the terms end together and the
	// session record is given up: one write frees every name.
	var acts []Action
	for _, name := range sortedKeys(g.names) {
		e := g.entry(name)
		if g.sessions && e.m.phase == leading {
			e.m.hold = false // resigned: campaign no more
			acts = append(acts, e.m.sessionLost(ErrResigned)...)
			g.track(now, name, e)
			continue
		}
		acts = append(acts, g.stepName(now, name, Resign{})...)
	}
	return acts
}

func (g *Group) tick(now time.Time) []Action {
	var acts []Action
	polled := false
	for len(g.timers) > 0 && reached(now, g.timers[0].at) {
		t := g.timers.pop()
		e := t.e
		if !sameInstant(e.due, t.at) {
			continue
		}
		e.due = time.Time{}
		polled = polled || e.phase == contending
		// e.m.Step(now, Tick{}) without its switch over the events.
		acts = concat(acts, g.entryActs(now, e.name, e, e.m.stepped(e.m.tick(now))))
	}
	if polled {
		acts = concat(acts, g.pollSoon(now))
	}
	if g.sm != nil {
		// Only when its timer is due: a Tick before the instant a
		// machine's Next gives finds nothing to do, and most of the
		// group's ticks are its names'.
		if at := g.sm.Next(); !at.IsZero() && reached(now, at) {
			acts = concat(acts, g.stepSession(now, Tick{}))
		}
	}
	if g.observerDue(now) {
		// Polling (no live feed), the observers due within half a poll
		// read now too, in the same batched read: from then on they poll
		// together, one tick and one read for all. A read earlier than
		// due is always safe: the wait counts from when a version was
		// first seen, which a read can only make later than its write.
		soon := now
		if !g.feed {
			soon = now.Add(g.cfg.Poll / 2)
		}
		var buf [8]string
		for _, s := range g.observed(buf[:0]) {
			o := g.observer(s)
			if o == nil {
				continue // ended by an earlier one's names
			}
			if at := o.next(); !at.IsZero() && !soon.Before(at) {
				acts = concat(acts, g.afterObserverOf(now, s, o, o.tick(now, &g.cfg, g.heir(now))))
			}
		}
	}
	if !g.endingAt.IsZero() && !now.Before(g.endingAt) {
		acts = concat(acts, g.endSome(now))
	}
	if g.listDue(now) {
		for _, s := range sortedKeys(g.lists) {
			if l := g.lists[s]; !l.at.IsZero() && !now.Before(l.at) {
				l.at = time.Time{}
				acts = append(acts, List{Session: s, After: l.after})
			}
		}
	}
	if g.sweeping() && !g.checkAt.IsZero() && !now.Before(g.checkAt) {
		acts = concat(acts, g.check(now))
	}
	if g.balancing() && !now.Before(g.balanceAt) {
		acts = concat(acts, g.balance(now))
	}
	return concat(acts, g.takeLater(now))
}

// pollSoon steps, with the contenders' reads due now, the contenders
// whose timers are due within half a poll (poll): their reads go in the
// same batched read, and from then on they poll together, one tick and
// one read for them all rather than one each. The other timers due so
// soon stay as they are.
func (g *Group) pollSoon(now time.Time) []Action {
	soon := now.Add(g.cfg.Poll / 2)
	var acts []Action
	var keep []timer
	for len(g.timers) > 0 && !soon.Before(g.timers[0].at) {
		t := g.timers.pop()
		e := t.e
		switch {
		case !sameInstant(e.due, t.at):
		case e.phase != contending:
			keep = append(keep, t)
		default:
			e.due = time.Time{}
			acts = concat(acts, g.stepEntry(now, e.name, e, poll{}))
		}
	}
	for _, t := range keep {
		if sameInstant(t.e.due, t.at) {
			g.timers.push(t)
		}
	}
	return acts
}

// observerDue reports whether an observer's read is due at now. Only a due
// observer's tick changes anything (an observer that is not due becomes
// due only by time), so a tick with none due skips sorting them.
func (g *Group) observerDue(now time.Time) bool {
	for _, o := range g.obsList {
		if at := o.next(); !at.IsZero() && !now.Before(at) {
			return true
		}
	}
	return false
}

// observed appends to sessions the sessions the group observes, in
// order: obs's keys, taken from obsList (ranging over a map costs more).
func (g *Group) observed(sessions []string) []string {
	for _, o := range g.obsList {
		sessions = append(sessions, o.name)
	}
	if len(sessions) > 1 {
		slices.Sort(sessions)
	}
	return sessions
}

// listDue reports whether a listing is due at now: only then does tick
// sort the listings' sessions to send their Lists in order.
func (g *Group) listDue(now time.Time) bool {
	if len(g.lists) == 0 {
		return false // without starting a range over the map
	}
	for _, l := range g.lists {
		if !l.at.IsZero() && !now.Before(l.at) {
			return true
		}
	}
	return false
}

// concat appends b to a; when a is empty it returns b itself (every
// action slice here is fresh, its receiver's to keep), saving a copy, and
// when b is empty, a (most parts of a tick have nothing to add: an append
// of nothing still costs a call). A tick of many names appends one action
// per name: the first growth makes room for several, not just the one.
func concat(a, b []Action) []Action {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	if len(a)+len(b) > cap(a) {
		grown := make([]Action, len(a), max(8, 2*(len(a)+len(b))))
		copy(grown, a)
		a = grown
	}
	if len(b) == 1 {
		return append(a, b[0]) // most often a name's one read: no copy call
	}
	return append(a, b...)
}

// reply steps the answer r (a SwapReply when swap) to a store request of
// the session, an observer or a name: the step of StepGet and StepSwap.
func (g *Group) reply(now time.Time, r *GetReply, swap bool) []Action {
	g.out--
	name := r.Name
	var acts []Action
	if g.sm != nil && name == g.sm.cfg.Name {
		acts = g.sessionActs(now, g.sm.stepReply(now, r, swap))
	} else if o := g.observer(name); o != nil {
		if swap {
			acts = o.swapReply(now, &g.cfg, (*SwapReply)(r))
		} else {
			acts = o.getReply(now, &g.cfg, r, g.heir(now))
		}
		acts = g.afterObserverOf(now, name, o, acts)
	} else if e := g.entry(name); swap && (e == nil || e.still()) {
		// A listing's release (listed): if it failed, the record changed
		// since the listing read it (an operator asked for a transfer,
		// say), and may still be held through the session: list again.
		if r.Err != nil && !store.Permanent(r.Err) && g.sm != nil && g.view.alive && !g.cfg.Mutate.ListNoRetry {
			g.listOwn(now, "")
		}
	} else if e != nil {
		acts = g.entryActs(now, name, e, e.m.stepReply(now, r, swap))
	}
	// else a late reply for a session or observer that is gone
	return g.stepped(now, acts)
}

// stepPrefer hands a preference event to the machine of name, if the
// group has one (never to the session's: its record is never handed over).
func (g *Group) stepPrefer(now time.Time, name string, ev Event) []Action {
	e := g.entry(name)
	if e == nil {
		return nil
	}
	return g.stepEntry(now, name, e, ev)
}

// stepName steps the machine of name and handles what it asks of the
// group.
func (g *Group) stepName(now time.Time, name string, ev Event) []Action {
	return g.stepEntry(now, name, g.entry(name), ev)
}

// entry returns the entry of name, nil if none: g.names[name], found by a
// scan of entries while the group has few names (a single Elector's one,
// the simulator's five), which costs less than hashing the name. Every
// store answer and change notification of a name asks.
func (g *Group) entry(name string) *entry {
	if len(g.entries) > 8 {
		return g.names[name]
	}
	n := len(name)
	for _, e := range g.entries {
		if len(e.name) == n && (n == 0 || e.name[n-1] == name[n-1]) && e.name == name {
			return e
		}
	}
	return nil
}

// stepEntry is stepName with the name's entry at hand.
func (g *Group) stepEntry(now time.Time, name string, e *entry, ev Event) []Action {
	return g.entryActs(now, name, e, e.m.Step(now, ev))
}

// entryActs handles the actions of a step of the name's machine: filtered
// (filter), then the name's phase, timer and awaited session recorded
// (track). Every step of a name comes here: both are its own code, the
// calls saved.
func (g *Group) entryActs(now time.Time, name string, e *entry, acts []Action) []Action {
scan:
	for i, a := range acts {
		switch a.(type) {
		case Idle, Await:
			acts = g.filterFrom(now, name, acts, i)
			break scan
		case Elected:
			g.elected(now, name)
		}
	}
	m := e.m
	if e.phase != m.phase {
		g.count[e.phase]--
		g.count[m.phase]++
		e.phase = m.phase
	}
	if at := m.Next(); !sameInstant(e.due, at) {
		e.due = at
		if !at.IsZero() {
			g.timers.push(timer{at: at, e: e})
		}
	}
	if m.waitOwn {
		g.waitOwn[name] = struct{}{}
	}
	if s := e.await; s != "" && (m.awaiting != s || m.phase != contending) {
		g.unwait(name, e)
	}
	return acts
}

// filter keeps a name machine's actions for the runtime, handling Await
// and dropping the machine's own Idle. The machine's slice is its caller's
// to keep: most steps have neither, and it is returned as it is.
func (g *Group) filter(now time.Time, name string, in []Action) []Action {
	for i, a := range in {
		switch a.(type) {
		case Idle, Await:
			return g.filterFrom(now, name, in, i)
		case Elected:
			g.elected(now, name)
		}
	}
	return in
}

// filterFrom is filter from in[i] on, the actions before it kept (a
// slice of its own: appending never overwrites in).
func (g *Group) filterFrom(now time.Time, name string, in []Action, i int) []Action {
	out := in[:i:i]
	for _, a := range in[i:] {
		switch a := a.(type) {
		case Idle:
		case Await:
			out = append(out, g.await(now, name, a.Session)...)
		case Elected:
			g.elected(now, name)
			out = append(out, a)
		default:
			out = append(out, a)
		}
	}
	return out
}

// elected notes that name was won (its re-reads, in session mode).
func (g *Group) elected(now time.Time, name string) {
	if g.sessions {
		g.order = append(g.order, name)
		if g.checkAt.IsZero() {
			g.checkAt = now.Add(g.cfg.Renew)
		}
	}
}

// track records name's phase, timer and awaited session after a step
// whose actions the caller handled: entryActs with none.
func (g *Group) track(now time.Time, name string, e *entry) {
	g.entryActs(now, name, e, nil)
}
