package election

import (
	"cmp"
	"errors"
	"hash/fnv"
	"math/bits"
	"slices"
	"time"

	"github.com/batonhq/baton/store"
)

// Balanced holding (Config.Balance): P processes that campaign for the
// same N names end up holding about N/P each, and share again when one
// joins or leaves.
//
// The policy only ever asks; it never takes. Once per Renew a balanced
// Group counts, from the records its contenders last read (every name it
// does not hold is one it watches), how many of the names each node holds.
// A name already asked towards a node counts as that node's. When some
// node holds at least two more than this one (mine), the Group asks it to
// hand over (theirs-mine)/2 of them, but no more than takes this node to
// the share hi = ceil(N/P) or that node under lo = floor(N/P), P being the
// nodes seen holding names and this one: the swap an operator's transfer
// makes (store.TransferRequested, Transfer = this node) on the version it
// read.
// The holder's machine sees the request at its next read of the name (a
// change notification, or its periodic Check), stops the term and frees
// the record towards this node, whose contender takes it at once: the
// handover is the transfer's, a release and then an acquisition with a
// new token, so a name never has two holders. A request that finds the
// record changed conflicts and asks nothing.
//
// It converges: a pull happens only between two nodes whose counts differ
// by two or more, and moves at most half the difference, so once every two
// nodes differ by at most one (each holds N/P rounded down or up) nobody
// asks any more. And until then somebody asks: the node with the fewest
// names sees every node that holds some, so its P is right unless it holds
// none (then its share is higher than the true one, which only makes it
// ask more); the node with the most is above floor(N/P) and it is below
// ceil(N/P). The caps by the share make a join move about N/P names, not
// more; several new nodes that do not yet see each other (they hold
// nothing) may each take a holder down to the share they believe in, and
// then names flow back, by smaller amounts each round.
// Which names are asked for is decided by a rendezvous hash of (name, this
// node): deterministic, and two joiners mostly ask for different names.
//
// When a session dies (its process closed its Group, or went silent for
// the lease plus twice the margin), the names that waited on it are split
// before they are taken (takeNow): each balanced Group takes at once those
// that the rendezvous hash gives to it rather than to the other live nodes
// it sees, up to its share. A renew interval later (takeLater) it takes,
// up to its share, those that nobody took yet; at its share, while it sees
// another node under its own, it leaves them to that node for up to
// shareWaits renew intervals more, and then takes what is left whatever
// its share. So the names fall where the hash and the shares put them even
// when the nodes see the session end a renew interval or more apart (a
// loaded machine), and few names move twice.
//
// Shares (Config.Share): Groups may weigh differently. Each Group's
// weight travels in its session record's name (SharedSessionName), so
// every record it holds through the session tells the readers its weight
// (SessionShare): a Group learns the others' weights where it learns
// their loads, from the records it reads. When every node it sees holding
// names weighs as much as it does, the rule is the one above, unchanged.
// Otherwise a Group of weight w holding m names asks a node of weight v
// holding l for as many names as each bring the two closer to holding in
// proportion to their weights: a name moves while 2(l*w - m*v) > w + v
// (PairPulls), which is the rule above when w = v. Each move lowers
// the sum over the nodes of load²/weight, so the moves end whatever each
// node sees; where they end, no move between two nodes lowers it, which
// is Sainte-Laguë's apportionment of the N names by the weights: each
// node about N*w/W (W the weights' sum), rounded to the nearest at the
// divisors 1, 3, 5, ..., every Group applying the same rule to the same
// counts. As with equal weights a Group takes no more than its share as
// it sees it, N*w/W over the nodes it sees, rounded up (QuotaCeil): a
// node that holds nothing is not seen, so that share is high, never low,
// and a join moves about a share. The dead session's names are split up
// to the same shares (takeNow, takeLater). So at the end, for every two
// live nodes, either no name moved from one to the other would bring
// them closer to proportion, or the one that would take it holds its
// share N*w/W rounded up already (the simulator checks this, baton sim
// --shares).
//
// What it does not do: names that are free (never held, or released) go
// to whoever comes first, as without balance; the balance follows, by
// pulls. A process that stops campaigning for a name it asked for leaves
// the record freed towards it; the others take it after the lease plus
// twice the margin, as after an operator's transfer to a node that went.

// pullBatch bounds how many names a balanced Group asks for in one Renew.
const pullBatch = 1000

// pull is the Group's request to a contender: ask the holder of the
// record, as last read, to hand it to this node.
type pull struct{}

func (pull) event() {}

// pull asks the holder of the record as last read to hand it over to this
// node: the swap an operator's Transfer makes, on the version read.
func (m *Machine) pull(now time.Time) []Action {
	if !m.pullable() {
		return nil
	}
	req := m.seen
	req.Transfer = m.cfg.Node
	return m.send(now, opRequest, store.Swap{Expect: m.seen.Version, Record: req, Event: store.TransferRequested})
}

// pullable reports whether the contender may ask for the record it last
// read: held by another node, not asked for already, nothing in flight.
func (m *Machine) pullable() bool {
	return m.phase == contending && m.inflight == opNone && !m.waitOwn && m.hasSeen &&
		!m.seen.Free() && m.seen.Holder != m.cfg.Node && m.seen.Transfer == ""
}

func (m *Machine) pullReply(now time.Time, r *SwapReply) []Action {
	if m.phase != contending {
		return nil
	}
	switch {
	case r.Err == nil:
		// The record is at a version this node wrote: whatever the holder
		// does next is a change, seen by a notification or the next read.
		m.seen, m.takeAt, m.seenFed = r.Record, now.Add(m.cfg.wait(r.Record.Lease)), 0
		m.readAt = now.Add(m.cfg.Poll)
		return nil
	case store.Permanent(r.Err):
		return m.fail(r.Err)
	case errors.Is(r.Err, store.ErrConflict):
		return m.read(now) // changed since read: see how
	}
	m.readAt = now.Add(m.cfg.Poll)
	return nil
}

// balance is a balanced Group's round: count the names per node and ask
// the nodes that hold more than their share to hand some over.
func (g *Group) balance(now time.Time) []Action {
	g.balanceAt = now.Add(g.cfg.Renew)
	if !g.view.alive || g.cfg.Mutate.NoPull {
		return nil
	}
	mine, loads := g.loads(true)
	defer g.doneLoads()
	lo, hi := g.share(loads)
	self, sum, uniform := g.weighed(loads)
	if uniform {
		slices.SortFunc(loads, func(a, b load) int { return cmp.Or(cmp.Compare(b.names, a.names), cmp.Compare(a.node, b.node)) })
	} else {
		// The most over their weight first; this node takes no more than
		// its share as it sees it, rounded up.
		slices.SortFunc(loads, func(a, b load) int {
			return cmp.Or(cmp.Compare(int64(b.names)*int64(a.weight), int64(a.names)*int64(b.weight)), cmp.Compare(a.node, b.node))
		})
		hi = QuotaCeil(g.count[contending]+g.count[leading], self, sum)
	}
	var acts []Action
	budget := pullBatch
	for _, l := range loads {
		want := min((l.names-mine)/2, l.names-lo, hi-mine, budget)
		if !uniform {
			want = min(PairPulls(mine, self, l.names, l.weight), hi-mine, budget)
		}
		if want < 1 || len(l.pullable) == 0 {
			continue
		}
		type weighted struct {
			w    uint64
			name string
		}
		names := make([]weighted, len(l.pullable))
		for i, name := range l.pullable {
			names[i] = weighted{g.rendezvous(name), name}
		}
		slices.SortFunc(names, func(a, b weighted) int { return cmp.Or(cmp.Compare(b.w, a.w), cmp.Compare(a.name, b.name)) })
		for _, n := range names[:min(want, len(names))] {
			if sent := g.stepName(now, n.name, pull{}); len(sent) > 0 {
				acts = append(acts, sent...)
				mine++
				budget--
			}
		}
	}
	return acts
}

// load is what loads counts of another node: the names it holds or was
// asked for, its weight as the session names of the records it holds say
// (SessionShare; the largest if they differ; 0 when seen only as a
// transfer's target), and the names that may be asked from it now.
type load struct {
	node     string
	names    int
	weight   int
	pullable []string
}

// loads counts, from the records the Group's machines last read, the names
// this node holds or has asked for (mine) and those of every other node,
// one load each, in no order; with listPullable, each load lists the names
// that may be asked from it now. Records of this node's earlier
// incarnations and of sessions known to be dead count for nobody: they are
// about to be free. The loads are the Group's scratch, valid until
// doneLoads, which the caller defers: a round runs every renew interval,
// and made anew they were most of its cost.
func (g *Group) loads(listPullable bool) (mine int, loads []load) {
	if g.loadsOut {
		panic("election: a balance count within another") // doneLoads not deferred
	}
	g.loadsOut = true
	for _, e := range g.entries { // counting: the order does not matter
		name, m := e.name, e.m
		if m.phase == leading {
			mine++
			continue
		}
		if m.phase != contending || !m.hasSeen {
			continue
		}
		rec := &m.seen
		switch _, dead := g.dead[rec.Session]; {
		case rec.Transfer == m.cfg.Node:
			mine++
		case rec.Transfer != "" && rec.Transfer != store.AnyNode:
			g.loadOf(rec.Transfer).names++
		case rec.Free(), rec.Holder == m.cfg.Node, rec.Session != "" && dead:
		default:
			l := g.loadOf(rec.Holder)
			l.names++
			l.weight = max(l.weight, SessionShare(rec.Session))
			if listPullable && m.pullable() {
				l.pullable = append(l.pullable, name)
			}
		}
	}
	return mine, g.loadBuf
}

// loadOf returns node's load in the count under way (loads), a new one
// the first time.
func (g *Group) loadOf(node string) *load {
	i, ok := g.loadIndex(node)
	if !ok {
		i = len(g.loadBuf)
		if len(g.loadAt) > 0 {
			g.loadAt[node] = i
		}
		if i < cap(g.loadBuf) {
			g.loadBuf = g.loadBuf[:i+1]
			l := &g.loadBuf[i]
			l.node, l.names, l.weight, l.pullable = node, 0, 0, l.pullable[:0]
		} else {
			g.loadBuf = append(g.loadBuf, load{node: node})
		}
	}
	return &g.loadBuf[i]
}

// loadIndex returns the index in loadBuf of node's load, if it has one:
// found by a scan while there are few (a node sees a few others, most
// often), in loadAt once there are more.
func (g *Group) loadIndex(node string) (int, bool) {
	if len(g.loadBuf) <= 8 {
		for i := range g.loadBuf {
			if g.loadBuf[i].node == node {
				return i, true
			}
		}
		return 0, false
	}
	if len(g.loadAt) == 0 {
		if g.loadAt == nil {
			g.loadAt = map[string]int{}
		}
		for i := range g.loadBuf {
			g.loadAt[g.loadBuf[i].node] = i
		}
	}
	i, ok := g.loadAt[node]
	return i, ok
}

// doneLoads empties the scratch of loads (the names it listed, for the
// collector): between rounds the Group holds none, as if it had none.
func (g *Group) doneLoads() {
	for i := range g.loadBuf {
		clear(g.loadBuf[i].pullable)
		g.loadBuf[i].pullable = g.loadBuf[i].pullable[:0]
		g.loadBuf[i].node = ""
	}
	g.loadBuf = g.loadBuf[:0]
	if len(g.loadAt) > 0 {
		clear(g.loadAt)
	}
	g.loadsOut = false
}

// share returns N/P rounded down and up: N the names this node campaigns
// for, P the nodes seen holding some (loads) and this one. Nodes that hold
// none are not seen, so the share may come out high, never low: the pulls
// never take a node under it.
func (g *Group) share(loads []load) (lo, hi int) {
	total := g.count[contending] + g.count[leading]
	p := len(loads) + 1
	return total / p, (total + p - 1) / p
}

// weight is this Group's own weight among the balanced Groups
// (Config.Share, 0 meaning 1).
func (g *Group) weight() int {
	if !g.cfg.Balance || g.cfg.Share < 1 {
		return 1
	}
	return g.cfg.Share
}

// weighed sets the weight of every node seen holding names (loads) to the
// one the rule uses (1 to MaxWeight: a node seen only as a transfer's
// target, holding nothing, weighs 1), and returns this node's weight and
// the sum of all of them. uniform: every one weighs as much as this node
// does (then the rule is the one for equal weights), or Mutate.NoShares.
func (g *Group) weighed(loads []load) (self int, sum uint64, uniform bool) {
	if g.cfg.Mutate.NoShares {
		return 1, 0, true
	}
	self = g.weight()
	sum = uint64(self)
	uniform = true
	for i := range loads {
		w := min(max(loads[i].weight, 1), MaxWeight)
		loads[i].weight = w
		sum += uint64(w)
		uniform = uniform && w == self
	}
	return self, sum, uniform
}

// PairPulls is how many names a node holding mine names, of weight wMe,
// asks of a node holding theirs, of weight wThem: the most k such that
// each of the k moves brings the two closer to holding in proportion to
// their weights, in that it lowers mine²/wMe + theirs²/wThem. One more
// name moves while 2*(theirs*wMe - mine*wThem) > wMe + wThem. With equal
// weights that is (theirs-mine-1)/2 rounded up: a move while theirs holds
// two or more than mine, the rule for equal weights. Weights below 1
// count as 1; the arithmetic is in 64 bits, saturated.
func PairPulls(mine, wMe, theirs, wThem int) int {
	if theirs <= 0 {
		return 0
	}
	wi, wj := int64(max(wMe, 1)), int64(max(wThem, 1))
	// Names and weights are at most an int's: with weights at most
	// MaxWeight (2^20) and counts below 2^40 the products stay below 2^62.
	l, m := min(int64(theirs), 1<<40), min(int64(max(mine, 0)), 1<<40)
	wi, wj = min(wi, MaxWeight), min(wj, MaxWeight)
	d := 2*l*wi - 2*m*wj - wi - wj
	if d <= 0 {
		return 0
	}
	step := 2 * (wi + wj)
	return int(min((d+step-1)/step, l))
}

// QuotaCeil is n*w/sum rounded up: the most names a node of weight w
// holds of n among nodes whose weights add up to sum, when each holds
// its share rounded. Computed in 128 bits; sum 0 gives n.
func QuotaCeil(n, w int, sum uint64) int {
	if n <= 0 {
		return 0
	}
	if sum == 0 {
		return n
	}
	hi, lo := bits.Mul64(uint64(n), uint64(max(w, 1)))
	if hi >= sum {
		return n // w > sum: not a share; all of them
	}
	q, r := bits.Div64(hi, lo, sum)
	if r > 0 {
		q++
	}
	return int(min(q, uint64(n)))
}

// takeNow splits the names that wait on a session found dead: a balanced
// Group takes at once those that the rendezvous hash gives to it rather
// than to the other live nodes it sees, as many as bring it to its share,
// and the others later (takeLater), so that the nodes the names fall to
// take them first and few names move twice. The wait delays a name, it
// never leaves it unheld. It returns the names to take now, in order.
func (g *Group) takeNow(now time.Time, s string, names []string) []string {
	if !g.cfg.Balance || !g.sessions || g.cfg.Mutate.NoSplit {
		return names
	}
	sp := g.splitAt(now)
	var mineNow []string
	weights := make(map[string]uint64, len(names))
	for _, name := range names {
		if l, ok := g.later[name]; ok && l.session == s {
			continue // left to the others already; takeLater takes it
		}
		w := g.rendezvous(name)
		weights[name] = w
		if !slices.ContainsFunc(sp.others, func(node string) bool { return rendezvous(name, node) > w }) {
			mineNow = append(mineNow, name)
		}
	}
	slices.SortFunc(mineNow, func(a, b string) int { return cmp.Or(cmp.Compare(weights[b], weights[a]), cmp.Compare(a, b)) })
	mineNow = mineNow[:min(sp.room, len(mineNow))]
	sp.room -= len(mineNow)
	slices.Sort(mineNow)
	at := now.Add(g.cfg.Renew)
	for name := range weights {
		if _, ok := slices.BinarySearch(mineNow, name); !ok {
			g.later[name] = later{at: at, session: s}
			g.laterAt = earliest(g.laterAt, at)
		}
	}
	return mineNow
}

// split is what takeNow needs of the group's view: the room left under
// its share and the other live nodes it sees. Counting them reads every
// name, so it is reused for a poll interval, its room reduced by each
// name taken meanwhile.
type split struct {
	at         time.Time
	room       int
	others     []string
	othersRoom bool // some other node is seen under the share
}

func (g *Group) splitAt(now time.Time) *split {
	if g.split != nil && now.Sub(g.split.at) < g.cfg.Poll && !now.Before(g.split.at) {
		return g.split
	}
	mine, loads := g.loads(false)
	defer g.doneLoads()
	_, hi := g.share(loads)
	self, sum, uniform := g.weighed(loads)
	total := g.count[contending] + g.count[leading]
	if !uniform {
		hi = QuotaCeil(total, self, sum)
	}
	sp := &split{at: now, room: max(hi-mine, 0)}
	for _, l := range loads {
		if !uniform {
			hi = QuotaCeil(total, l.weight, sum)
		}
		sp.othersRoom = sp.othersRoom || l.names < hi
		sp.others = append(sp.others, l.node)
	}
	slices.Sort(sp.others)
	g.split = sp
	return sp
}

// later is a name whose dead session a balanced Group left to the others
// for a while (takeNow).
type later struct {
	at      time.Time
	session string
	waits   int // renew intervals it was left once due, the Group being at its share
}

// shareWaits is how many renew intervals more a balanced Group at its
// share leaves a dead session's name to the nodes it sees under theirs,
// once the name is due, before it takes the name whatever its share. More
// than one, because a node's count of its room may be a round old: it
// spends some of it on names another node took already (those swaps
// conflict), and takes the rest a renew interval later. A name waits at
// most 1+shareWaits renew intervals after its session was found dead, and
// only while a node that seems to have room does not take it.
const shareWaits = 3

// takeLater tells the names left to the others whose time is up that their
// session is dead, if they still wait on it: as many as bring the Group to
// its share. At its share it leaves the rest to the nodes under theirs,
// for a renew interval at a time, shareWaits times at most: a node that
// saw the session end later than this one, or spent its room on names
// already taken, takes them first.
func (g *Group) takeLater(now time.Time) []Action {
	if g.laterAt.IsZero() || now.Before(g.laterAt) {
		return nil
	}
	g.laterAt = time.Time{}
	var acts []Action
	var sp *split
	for _, name := range sortedKeys(g.later) {
		l := g.later[name]
		if now.Before(l.at) {
			g.laterAt = earliest(g.laterAt, l.at)
			continue
		}
		m := g.entry(name).m
		if m.phase != contending || m.awaiting != l.session {
			delete(g.later, name) // taken, or moved on
			continue
		}
		if m.inflight != opNone {
			// A read is out: the machine would not take it now. Look
			// again a poll interval on, the room kept for it.
			l.at = now.Add(g.cfg.Poll)
			g.later[name] = l
			g.laterAt = earliest(g.laterAt, l.at)
			continue
		}
		if sp == nil {
			sp = g.splitAt(now)
		}
		if sp.room <= 0 && sp.othersRoom && l.waits < shareWaits {
			l.at = now.Add(g.cfg.Renew)
			l.waits++
			g.later[name] = l
			g.laterAt = earliest(g.laterAt, l.at)
			continue
		}
		sp.room = max(sp.room-1, 0)
		delete(g.later, name)
		acts = append(acts, g.stepName(now, name, SessionEnded{Session: l.session})...)
	}
	return acts
}

// rendezvous is the name's weight for this node: the names a node asks for
// first are those of highest weight, so that a joiner asks for a stable
// set, and two joiners mostly for different names.
func (g *Group) rendezvous(name string) uint64 { return rendezvous(name, g.cfg.Node) }

// rendezvous is the weight of name for node: highest random weight
// hashing, so that every node can tell which of several nodes a name
// falls to.
func rendezvous(name, node string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(node))
	// FNV's last step only multiplies: node ids that differ in their last
	// byte would give every name weights a constant apart, and so the same
	// order. SplitMix64's finalizer spreads them.
	x := h.Sum64()
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
