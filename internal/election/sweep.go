// The check sweep: the held and awaited names re-read at a bounded rate,
// standing in for a change notification that was missed.

package election

import (
	"time"
)

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
			if g.swept(g.entry(name)) && !seen[name] {
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
		if g.swept(g.entry(name)) {
			acts = concat(acts, g.stepName(now, name, Check{}))
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
