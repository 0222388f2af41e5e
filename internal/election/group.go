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

	names  map[string]*entry
	count  [4]int // names per phase
	timers timerHeap

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
}

// entry is one name's machine and what the group keeps about it.
type entry struct {
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

// SessionName is the name of the session record of seq-th session of the
// process instance (node, incarnation).
func SessionName(node, incarnation string, seq int) string {
	return fmt.Sprintf("%s%s/%s/%d", store.SessionPrefix, node, incarnation, seq)
}

// Machine returns the machine of name, or nil before its first Start.
func (g *Group) Machine(name string) *Machine {
	if e := g.names[name]; e != nil {
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
		if top.e.due.Equal(top.at) {
			at = top.at
			break
		}
		g.timers.pop() // stale
	}
	if g.sm != nil {
		at = earliest(at, g.sm.Next())
	}
	for _, o := range g.obsList {
		at = earliest(at, o.next())
	}
	if g.sweeping() {
		at = earliest(at, g.checkAt)
	}
	if g.balancing() {
		at = earliest(at, g.balanceAt)
	}
	for _, l := range g.lists {
		at = earliest(at, l.at)
	}
	return earliest(earliest(at, g.laterAt), g.endingAt)
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
		switch {
		case g.sm != nil && ev.Name == g.sm.cfg.Name:
		case g.obs[ev.Name] != nil:
			acts = g.obs[ev.Name].changed(now, ev.Version)
			acts = g.afterObserver(now, ev.Name, acts)
		case g.names[ev.Name] != nil:
			acts = g.stepName(now, ev.Name, in) // the machine reads only the version
		}
	case ListReply:
		g.out--
		acts = g.listed(now, ev)
	case GetReply:
		return g.StepGet(now, ev)
	case SwapReply:
		return g.StepSwap(now, ev)
	default:
		panic(fmt.Sprintf("election: event %T is not for a Group", ev))
	}
	return g.stepped(now, acts)
}

// StepGet is Step(now, r) without boxing r into an Event: the path of the
// runtimes, which step every store answer. Step calls it.
func (g *Group) StepGet(now time.Time, r GetReply) []Action {
	g.out--
	return g.stepped(now, g.reply(now, r.Name, r, false))
}

// StepSwap is Step(now, r) without boxing r into an Event, as StepGet.
func (g *Group) StepSwap(now time.Time, r SwapReply) []Action {
	g.out--
	return g.stepped(now, g.reply(now, r.Name, GetReply(r), true))
}

// stepped ends every step of the group: the session given up when no name
// needs it, the store requests counted, Idle when nothing is left to do.
func (g *Group) stepped(now time.Time, acts []Action) []Action {
	g.maybeEndSession(now, &acts)
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
	if g.names[name] == nil {
		cfg := g.cfg
		cfg.Name = name
		m := New(cfg)
		m.swept = true
		if g.sessions {
			m.sess = &g.view
		}
		g.names[name] = &entry{m: m, phase: idle}
		g.count[idle]++
	}
	var acts []Action
	if g.sessions && g.sm == nil {
		acts = g.startSession(now)
	}
	return append(acts, g.stepName(now, name, Start{Hold: ev.Hold})...)
}

func (g *Group) startSession(now time.Time) []Action {
	g.seq++
	cfg := g.cfg
	cfg.Name = SessionName(g.cfg.Node, g.cfg.Incarnation, g.seq)
	g.sm = New(cfg)
	g.view = sessionView{name: cfg.Name, fed: g.view.fed} // the feed outlives a session
	return g.stepSession(now, Start{})
}

func (g *Group) resign(now time.Time, ev Resign) []Action {
	if ev.Name != "" {
		if g.names[ev.Name] == nil {
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
		e := g.names[name]
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
	for len(g.timers) > 0 && !now.Before(g.timers[0].at) {
		t := g.timers.pop()
		e := t.e
		if !e.due.Equal(t.at) {
			continue
		}
		e.due = time.Time{}
		polled = polled || e.phase == contending
		acts = concat(acts, g.stepEntry(now, t.name, e, Tick{}))
	}
	if polled {
		acts = concat(acts, g.pollSoon(now))
	}
	if g.sm != nil {
		acts = concat(acts, g.stepSession(now, Tick{}))
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
		for _, s := range sortedKeys(g.obs) {
			o := g.obs[s]
			if o == nil {
				continue // ended by an earlier one's names
			}
			if at := o.next(); !at.IsZero() && !soon.Before(at) {
				acts = concat(acts, g.afterObserver(now, s, o.tick(now, g.cfg, g.heir(now))))
			}
		}
	}
	if !g.endingAt.IsZero() && !now.Before(g.endingAt) {
		acts = concat(acts, g.endSome(now))
	}
	for _, s := range sortedKeys(g.lists) {
		if l := g.lists[s]; !l.at.IsZero() && !now.Before(l.at) {
			l.at = time.Time{}
			acts = append(acts, List{Session: s, After: l.after})
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
		case !e.due.Equal(t.at):
		case e.phase != contending:
			keep = append(keep, t)
		default:
			e.due = time.Time{}
			acts = concat(acts, g.stepEntry(now, t.name, e, poll{}))
		}
	}
	for _, t := range keep {
		if t.e.due.Equal(t.at) {
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

// concat appends b to a; when a is empty it returns b itself (every
// action slice here is fresh, its receiver's to keep), saving a copy. A
// tick of many names appends one action per name: the first growth makes
// room for several, not just the one.
func concat(a, b []Action) []Action {
	if len(a) == 0 {
		return b
	}
	if len(a)+len(b) > cap(a) {
		grown := make([]Action, len(a), max(8, 2*(len(a)+len(b))))
		copy(grown, a)
		a = grown
	}
	return append(a, b...)
}

// CheckRate is the most names a Group re-reads a second in its check
// sweep, however many it holds or awaits: the sweep then takes longer than
// Config.Check (100 s for 100,000 names). The re-reads only stand in for a
// change notification that was missed or that the store cannot send:
// whether a holder lives is told by its session record, which the
// observer reads every Poll whatever the number of names, and a change
// notification makes a contender read a record at once.
const CheckRate = 1000

// CheckLeases is how many leases a Group holding its names through a
// session (baton.NewGroup) waits between two re-reads of a held or
// awaited name (Config.Check): the store's change feed reports every
// change, so the re-reads that stand in for a missed one can be rare.
const CheckLeases = 4

// sweeping reports whether the check sweep has names to re-read.
func (g *Group) sweeping() bool {
	return (g.sessions && g.count[leading] > 0) || g.waiting > 0
}

// checkEvery is how often the sweep re-reads each name: Config.Check
// while the change feed is live (Feed), since the feed reports every
// change and the re-reads only stand in for a missed one; without a feed
// a lease in session mode (Config.Check if it is shorter), and
// Config.Check (0: Poll) otherwise.
func (g *Group) checkEvery() time.Duration {
	switch {
	case g.feed && g.cfg.Check > 0:
		return g.cfg.Check
	case g.sessions:
		return min(g.cfg.Lease, g.cfg.Check)
	case g.cfg.Check > 0:
		return g.cfg.Check
	}
	return g.cfg.Poll
}

// check re-reads the next share of the held and awaited names, so that
// each is read about once per Check, and at most CheckRate a second in
// all. The holder never writes the names it holds through its session, so
// this is how it sees an operator's change that no notification reported;
// a contender that awaits another process's session sees so a release
// (the session, not these re-reads, tells it whether the holder lives).
func (g *Group) check(now time.Time) []Action {
	every := g.checkEvery()
	total := g.waiting
	if g.sessions {
		total += g.count[leading]
	}
	// The sweep's interval: a renew interval, or longer when there are
	// fewer names than that would read one at a time.
	step := max(min(g.cfg.Renew, every), every/time.Duration(max(total, 1)))
	g.checkAt = now.Add(step)
	n := int((int64(total)*int64(step) + int64(every) - 1) / int64(every))
	n = min(n, max(1, int(CheckRate*int64(step)/int64(time.Second))))
	if len(g.order) > 2*total+64 {
		kept, seen := g.order[:0], map[string]bool{}
		for _, name := range g.order {
			if g.swept(g.names[name]) && !seen[name] {
				kept, seen[name] = append(kept, name), true
			}
		}
		clear(g.order[len(kept):])
		g.order, g.next = kept, 0
	}
	var acts []Action
	for i := 0; i < len(g.order) && n > 0; i++ {
		if g.next >= len(g.order) {
			g.next = 0
		}
		name := g.order[g.next]
		g.next++
		if g.swept(g.names[name]) {
			acts = append(acts, g.stepName(now, name, Check{})...)
			n--
		}
	}
	return acts
}

// swept reports whether the check sweep re-reads e's name: held through
// the session, or awaiting another process's session.
func (g *Group) swept(e *entry) bool {
	return (g.sessions && e.m.phase == leading) || (e.m.phase == contending && e.await != "")
}

// reply steps the answer r (a SwapReply when swap) to a store request of
// the session, an observer or a name.
func (g *Group) reply(now time.Time, name string, r GetReply, swap bool) []Action {
	if g.sm != nil && name == g.sm.cfg.Name {
		return g.sessionActs(now, g.sm.stepReply(now, r, swap))
	}
	if o := g.obs[name]; o != nil {
		var acts []Action
		if swap {
			acts = o.swapReply(now, g.cfg, SwapReply(r))
		} else {
			acts = o.getReply(now, g.cfg, r, g.heir(now))
		}
		return g.afterObserver(now, name, acts)
	}
	e := g.names[name]
	if swap && (e == nil || e.still()) {
		// A listing's release (listed): if it failed, the record changed
		// since the listing read it (an operator asked for a transfer,
		// say), and may still be held through the session: list again.
		if r.Err != nil && !store.Permanent(r.Err) && g.sm != nil && g.view.alive && !g.cfg.Mutate.ListNoRetry {
			g.listOwn(now, "")
		}
		return nil
	}
	if e != nil {
		return g.entryActs(now, name, e, e.m.stepReply(now, r, swap))
	}
	return nil // a late reply for a session or observer that is gone
}

// stepName steps the machine of name and handles what it asks of the
// group.
func (g *Group) stepName(now time.Time, name string, ev Event) []Action {
	return g.stepEntry(now, name, g.names[name], ev)
}

// stepEntry is stepName with the name's entry at hand.
func (g *Group) stepEntry(now time.Time, name string, e *entry, ev Event) []Action {
	return g.entryActs(now, name, e, e.m.Step(now, ev))
}

// entryActs handles the actions of a step of the name's machine.
func (g *Group) entryActs(now time.Time, name string, e *entry, acts []Action) []Action {
	acts = g.filter(now, name, acts)
	g.track(now, name, e)
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

// await registers name as waiting on session s, or, if s is known dead,
// tells the machine at once.
func (g *Group) await(now time.Time, name, s string) []Action {
	if e := g.names[name]; e.await != "" && e.await != s {
		// It waited on another session (the name moved): not any more.
		g.unwait(name, e)
	}
	if succ, ok := g.dead[s]; ok && succ != "" {
		// Passed on before this name's read came (it predates it): read
		// again, and take the term if it was passed on to this group.
		x := ended{session: s, successor: succ}
		return g.filter(now, name, g.names[name].m.Step(now, g.endEvent(&x)))
	}
	if _, ok := g.dead[s]; ok {
		if len(g.takeNow(now, s, []string{name})) == 0 {
			return nil // left to the others for now (balanced)
		}
		return g.filter(now, name, g.names[name].m.Step(now, SessionEnded{Session: s}))
	}
	if g.waiters[s] == nil {
		g.waiters[s] = &waitSet{at: map[string]int{}}
	}
	g.waiters[s].add(name)
	if e := g.names[name]; e.await == "" {
		if !g.sweeping() {
			g.checkAt = now.Add(min(g.cfg.Renew, g.checkEvery()))
		}
		e.await = s
		g.waiting++
		g.order = append(g.order, name) // the sweep re-reads it
	}
	if g.obs[s] == nil {
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
	o := g.obs[s]
	if o != nil && o.corrupt != nil {
		// The session's record cannot be judged: every name that waits
		// on it ends its campaign, and nobody takes them over.
		g.dropObserver(s)
		waiting := g.waiters[s]
		delete(g.waiters, s)
		for _, name := range waiting.list() {
			if e := g.names[name]; e.await == s {
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
			if g.names[name].await == s {
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
		if e := g.names[rec.Name]; e != nil && !e.still() {
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
			if e := g.names[name]; e != nil && e.await == x.session {
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

// track records name's phase, timer and awaited session after a step.
func (g *Group) track(now time.Time, name string, e *entry) {
	m := e.m
	if e.phase != m.phase {
		g.count[e.phase]--
		g.count[m.phase]++
		e.phase = m.phase
	}
	if at := m.Next(); !e.due.Equal(at) {
		e.due = at
		if !at.IsZero() {
			g.timers.push(timer{at: at, name: name, e: e})
		}
	}
	if m.waitOwn {
		g.waitOwn[name] = struct{}{}
	}
	if s := e.await; s != "" && (m.awaiting != s || m.phase != contending) {
		g.unwait(name, e)
	}
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

// stepSession steps the group's own session and turns its announcements
// into the names' terms.
func (g *Group) stepSession(now time.Time, ev Event) []Action {
	return g.sessionActs(now, g.sm.Step(now, ev))
}

// sessionActs handles the actions of a step of the group's own session.
func (g *Group) sessionActs(now time.Time, acts []Action) []Action {
	var out []Action
	for _, a := range acts {
		switch a := a.(type) {
		case Get, Swap:
			out = append(out, a)
		case Elected:
			g.view.alive, g.view.deadline = true, a.Deadline
			g.balanceAt = now.Add(g.cfg.Renew)
			for _, name := range sortedKeys(g.waitOwn) {
				delete(g.waitOwn, name)
				m := g.names[name].m
				if m.phase == contending && m.waitOwn {
					m.waitOwn = false
					out = append(out, g.stepName(now, name, Changed{})...)
				}
			}
			if g.count[contending]+g.count[leading]+g.count[releasing] == 0 {
				// Every name stopped while the session was being made.
				out = append(out, g.stepSession(now, Resign{})...)
			}
		case Extended:
			g.view.deadline = a.Deadline
			out = append(out, Extended{Deadline: a.Deadline})
		case Lost:
			g.view.alive = false
			for _, name := range sortedKeys(g.names) {
				e := g.names[name]
				if e.m.phase == leading || (e.m.phase == releasing && e.m.sess != nil) {
					out = append(out, e.m.sessionLost(a.Cause)...)
					g.track(now, name, e)
				}
			}
		case Failed:
			// The store failed for good while the session was being made:
			// every campaign ends.
			g.sm = nil
			for _, name := range sortedKeys(g.names) {
				e := g.names[name]
				if e.m.phase == contending {
					e.m.phase, e.m.waitOwn, e.m.hold = idle, false, false
					out = append(out, Failed{Name: name, Err: a.Err})
					g.track(now, name, e)
				}
			}
			clear(g.waitOwn)
		case Released:
			g.sm = nil
			g.view = sessionView{fed: g.view.fed}
			if g.count[contending]+g.count[leading]+g.count[releasing] > 0 {
				out = append(out, g.startSession(now)...)
			}
		}
	}
	return out
}

// maybeEndSession gives the session up when no name needs it any more.
func (g *Group) maybeEndSession(now time.Time, acts *[]Action) {
	if !g.sessions || g.sm == nil || !g.view.alive || g.count[contending]+g.count[leading]+g.count[releasing] > 0 {
		return
	}
	*acts = append(*acts, g.stepSession(now, Resign{})...)
}

// waitSet is the names that await one session: a set kept in an order of
// its own (the order the names began to wait, each removal filled by the
// last name), so that the group's actions come in the same order on every
// run without sorting the names (for the 100,000 names of a bulk
// takeover, a sort costs about 20 ms before the first swap can go out).
type waitSet struct {
	names []string
	at    map[string]int // index of each name in names
}

func (w *waitSet) add(name string) {
	if _, ok := w.at[name]; !ok {
		w.at[name] = len(w.names)
		w.names = append(w.names, name)
	}
}

func (w *waitSet) remove(name string) {
	i, ok := w.at[name]
	if !ok {
		return
	}
	last := len(w.names) - 1
	w.names[i] = w.names[last]
	w.at[w.names[i]] = i
	w.names[last] = ""
	w.names = w.names[:last]
	delete(w.at, name)
}

// len is the number of names; 0 for a nil set.
func (w *waitSet) len() int {
	if w == nil {
		return 0
	}
	return len(w.names)
}

// list returns the names in the set's order; nil for a nil set.
func (w *waitSet) list() []string {
	if w == nil {
		return nil
	}
	return w.names
}

// sortedKeys returns m's keys in order: the group's actions come in the
// same order on every run, so that a simulated run replays exactly.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// timer is a name's timer: its entry, g.names[name], which stays the
// name's for the group's life.
type timer struct {
	at   time.Time
	name string
	e    *entry
}

// timerHeap is a min-heap of timers by instant. Typed rather than
// container/heap, whose interface boxes every timer pushed or popped: the
// algorithm is container/heap's own, step for step, so that timers due at
// one instant come out in the same order as before.
type timerHeap []timer

func (h timerHeap) less(i, j int) bool { return h[i].at.Before(h[j].at) }

func (h *timerHeap) push(t timer) {
	*h = append(*h, t)
	q := *h
	for j := len(q) - 1; ; {
		i := (j - 1) / 2 // parent
		if i == j || !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

func (h *timerHeap) pop() timer {
	q := *h
	n := len(q) - 1
	q[0], q[n] = q[n], q[0]
	for i := 0; ; {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && q.less(j2, j1) {
			j = j2
		}
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	t := q[n]
	q[n] = timer{}
	*h = q[:n]
	return t
}
