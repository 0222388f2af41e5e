package explore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// This file is the store's change feed as package baton's driver
// delivers it to a Group (Sessions.Feed), and as the simulator's
// (vcluster's Notify, FeedBreak and FeedHeal, Forge) does: the
// explorer's counterpart, events of its own that drive the same Group.
//
// A node's process opens its feed when it starts: its Group is stepped
// Feed{Live: true} before its first Start, as the driver's loop does
// when it begins. Every write the store applies (memstore's, whoever
// sent it, a crashed process too) is queued, in the order of the
// writes, for every node whose feed is live, as memstore's WatchChanges
// reports it (Change{Name, Version}). The first notification queued
// reaches its node at any later event (evNote, delayed without a bound,
// as the answers are), alone in its batch: a Changed event and then
// Synced with its version (the Through of memstore's ordered feed, the
// driver's Synced; the Group runs with Config.OrderedFeed, as the
// simulator's session nodes do).
// A feed may close (evGap, Feed.Gaps a path): the notifications queued
// are lost and the Group is stepped Feed{}, as the driver does when the
// channel closes; it opens again at any later event (evHeal: Feed{Live:
// true}, the driver's rewatch, here without its wait of a lease) and
// reports only the writes applied after. A crash closes it, a restart
// opens a new one. A forging client (Feed.Forges a path) may send a
// node whose feed is live a notification of any held session record
// but its own session's (the simulator's forging client forges only
// for those nobody wrote for half a lease), at a version the store never wrote
// (math.MaxInt64), in a batch of its own without Synced (Through 0, as
// the simulator's forged notifications and PostgreSQL's feed, which
// counts no version a notification names).
//
// What is not modelled: a notification lost while its feed stays live
// (an ordered feed reports every write: store.OrderedFeed), a batch of
// several changes (the driver steps them all before one Synced), the
// rewatch's wait, and the simulator's restriction of forging to session
// records nobody wrote for half a lease. Renewals are reported like any
// write (memstore reports them; a feed may leave them out).
//
// With a feed, one more invariant holds: a dead session is ended in
// time. A Group answered a read of another process's session record at
// a version it was first answered at least the record's lease plus 2e
// before, on its own clock (the wait after which an observer ends a
// session), while nobody wrote the record since, does not read it again
// in that step: it ends it. The ends of those waits are instants time
// moves to (feedInstants). Notifications during every read, forged,
// would otherwise hold the end off for ever (the simulator's liveness
// check at the end of a run catches that; the explorer checks its
// cause, since its delays are unbounded and its liveness is not
// checked).

// Feed gives every node of a Group configuration the store's change
// feed (feed.go).
type Feed struct {
	// Gaps bounds the times a path closes a node's feed (each may open
	// again); Forges the forged notifications of a path.
	Gaps, Forges int
}

// feedWorld is the feeds' part of a state: each node's feed, the
// session records the store holds (for the forging client, in name
// order) and the budget spent.
type feedWorld struct {
	nodes        []nodeFeed
	sessions     []string
	gaps, forges int
}

// nodeFeed is one node's feed: whether it is live, the writes it
// reported that have not reached the node yet (in order), and, for the
// dead-session invariant, the version of every other process's session
// record the node was answered and the local instant it first was.
type nodeFeed struct {
	live  bool
	notes []store.Change
	seen  []seenRecord
}

type seenRecord struct {
	name    string
	version int64
	at      time.Time
	wait    time.Duration // the record's lease plus 2e
}

// feedInstants calls consider with node i's instants of the feed: just
// before and at the end of the wait of every session record it was
// answered (an answer on its way to it may arrive on either side).
func (w *world) feedInstants(i int, consider func(time.Duration)) {
	if !w.c.feeding() {
		return
	}
	for _, s := range w.feed.nodes[i].seen {
		t := w.trueAt(i, s.at.Add(s.wait))
		consider(t - 1)
		consider(t)
	}
}

// feeding reports whether c gives its nodes a change feed.
func (c *Config) feeding() bool { return c.Group != nil && c.Group.Feed != nil }

// feedOpen opens node i's feed for its new process (its queue and what
// it saw are gone with the last) and tells its Group.
func (w *world) feedOpen(i int, out *strings.Builder) error {
	if !w.c.feeding() {
		return nil
	}
	w.setFeed(i, nodeFeed{live: true})
	w.say(out, "node-%d: its change feed opens", i)
	return w.stepGroup(i, election.Feed{Live: true}, out)
}

// feedGone closes node i's feed with its process.
func (w *world) feedGone(i int) {
	if w.c.feeding() {
		w.setFeed(i, nodeFeed{})
	}
}

// setFeed replaces node i's feed (copy on write: the parent state shares
// the slice).
func (w *world) setFeed(i int, f nodeFeed) {
	if w.feed.nodes == nil {
		w.feed.nodes = make([]nodeFeed, len(w.nodes))
	} else {
		w.feed.nodes = slices.Clone(w.feed.nodes)
	}
	w.feed.nodes[i] = f
}

// notified queues the write of rec (applied by the store) for every
// node whose feed is live.
func (w *world) notified(rec store.Record) {
	if !w.c.feeding() {
		return
	}
	if store.IsSession(rec.Name) {
		// The session records written, for the forging client.
		if k, found := slices.BinarySearch(w.feed.sessions, rec.Name); !found {
			w.feed.sessions = slices.Insert(slices.Clip(w.feed.sessions), k, rec.Name)
		}
	}
	for i := range w.nodes {
		f := w.feed.nodes[i]
		if !w.nodes[i].up || !f.live {
			continue
		}
		f.notes = append(slices.Clip(f.notes), store.Change{Name: rec.Name, Version: rec.Version})
		w.setFeed(i, f)
	}
}

// forgeable lists the session records a forged notification to node i
// may name: every one held but its own session's.
func (w *world) forgeable(i int) []string {
	own := ""
	if g := w.nodes[i].g; g != nil {
		own, _ = g.Session()
	}
	var names []string
	for _, s := range w.feed.sessions {
		if s == own {
			continue
		}
		if r, err := w.st.Get(context.Background(), s); err == nil && !r.Free() {
			names = append(names, s)
		}
	}
	return names
}

// feedEvents appends the feeds' events enabled in w.
func (w *world) feedEvents(evs []Event) []Event {
	if !w.c.feeding() {
		return evs
	}
	fc := w.c.Group.Feed
	for i := range w.nodes {
		if !w.live(i) {
			continue
		}
		f := w.feed.nodes[i]
		if len(f.notes) > 0 {
			evs = append(evs, Event{Kind: evNote, Node: int8(i)}) // the first: see feed.go's comment
		}
		switch {
		case f.live && w.feed.gaps < fc.Gaps:
			evs = append(evs, Event{Kind: evGap, Node: int8(i)})
		case !f.live:
			evs = append(evs, Event{Kind: evHeal, Node: int8(i)})
		}
		if f.live && w.feed.forges < fc.Forges {
			for k := range w.forgeable(i) {
				evs = append(evs, Event{Kind: evForge, Node: int8(i), Idx: int8(k)})
			}
		}
	}
	return evs
}

// doFeed executes a feed's event.
func (w *world) doFeed(ev Event, out *strings.Builder) error {
	i := int(ev.Node)
	if !w.c.feeding() || i >= len(w.nodes) || !w.live(i) {
		return fmt.Errorf("explore: %s: no feed of a running process", ev.line())
	}
	f := w.feed.nodes[i]
	switch ev.Kind {
	case evNote:
		k := int(ev.Idx)
		if k >= len(f.notes) {
			return fmt.Errorf("explore: %s: no such notification", ev.line())
		}
		batch := f.notes[:k+1]
		f.notes = slices.Clone(f.notes[k+1:])
		w.setFeed(i, f)
		var through int64
		for _, ch := range batch {
			w.say(out, "node-%d: notified %s v%d", i, ch.Name, ch.Version)
			if err := w.stepGroup(i, election.Changed{Name: ch.Name, Version: ch.Version}, out); err != nil {
				return err
			}
			through = max(through, ch.Version)
		}
		w.say(out, "node-%d: its feed has reported every write through v%d", i, through)
		return w.stepGroup(i, election.Synced{Version: through}, out)
	case evGap:
		w.feed.gaps++
		w.setFeed(i, nodeFeed{seen: f.seen})
		w.say(out, "node-%d: its change feed closes (%d notifications lost)", i, len(f.notes))
		return w.stepGroup(i, election.Feed{}, out)
	case evHeal:
		w.setFeed(i, nodeFeed{live: true, seen: f.seen})
		w.say(out, "node-%d: its change feed opens again", i)
		return w.stepGroup(i, election.Feed{Live: true}, out)
	case evForge:
		names := w.forgeable(i)
		k := int(ev.Idx)
		if !f.live || k >= len(names) {
			return fmt.Errorf("explore: %s: no such session record to forge a notification of", ev.line())
		}
		w.feed.forges++
		w.say(out, "node-%d: notified %s v%d (forged)", i, names[k], int64(math.MaxInt64))
		return w.stepGroup(i, election.Changed{Name: names[k], Version: math.MaxInt64}, out)
	}
	return fmt.Errorf("explore: %s: not a feed event", ev.line())
}

// feedAnswer steps node i's Group with the answer to rq (step) and
// checks that a dead session is ended in time: see this file's comment.
func (w *world) feedAnswer(i int, rq request, err error, step func() error) error {
	if !w.c.feeding() || rq.swap || rq.list.Session != "" || err != nil || !store.IsSession(rq.name) || rq.rec.Free() {
		return step()
	}
	if own, _ := w.nodes[i].g.Session(); own == rq.name {
		return step()
	}
	now := w.local(i, w.now)
	f := w.feed.nodes[i]
	k := slices.IndexFunc(f.seen, func(s seenRecord) bool { return s.name == rq.name })
	late := k >= 0 && f.seen[k].version == rq.rec.Version && !now.Before(f.seen[k].at.Add(f.seen[k].wait))
	if k < 0 || f.seen[k].version != rq.rec.Version {
		s := seenRecord{name: rq.name, version: rq.rec.Version, at: now, wait: rq.rec.Lease + 2*w.c.Margin}
		if k < 0 {
			f.seen = append(slices.Clip(f.seen), s)
		} else {
			f.seen = slices.Clone(f.seen)
			f.seen[k] = s
		}
		w.setFeed(i, f)
	}
	if late {
		// Only a session nobody wrote since: a renewal notified while
		// the read was out is a reason to read again.
		cur, err := w.st.Get(context.Background(), rq.name)
		late = err == nil && cur.Version == rq.rec.Version
	}
	before := w.reads(i, rq.name)
	if verr := step(); verr != nil || !late {
		return verr
	}
	if w.reads(i, rq.name) > before {
		return fmt.Errorf("node-%d reads session %s again at v%d, unchanged since %v on its clock, more than its lease %v + 2e ago: a dead session's end is held off",
			i, rq.name, rq.rec.Version, f.seen[k].at.Sub(t0), rq.rec.Lease)
	}
	return nil
}

// reads counts node i's reads of record n in flight.
func (w *world) reads(i int, n string) int {
	c := 0
	for _, r := range w.reqs {
		if r.node == i && r.inc == w.nodes[i].inc && !r.swap && r.list.Session == "" && r.name == n {
			c++
		}
	}
	return c
}
