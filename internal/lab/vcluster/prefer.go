package vcluster

import (
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// Preferred leaders (Config.Prefer, docs/prefer.md): the leader of Job
// reads the candidacies every renew interval and its machine is told, at
// the instant the answer arrives, whether its scheduler machine is between
// runs (election.SafePoint, scheduler.Machine.AtSafePoint) and then the
// candidates (election.Candidates). A node renews its candidacy while it
// is up, reaches the store, is not frozen and campaigns for Job (not held
// off by its clock guard): the candidacy's age is how long ago a read
// last saw it so, which never makes a candidate look younger than it is.

// prefer reports whether the run has a preference policy.
func (e *engine) prefer() bool { return e.c.Prefer.Kind != election.PreferNone }

// attrs is node n's candidacy in its current incarnation: Config.Attrs,
// or Config.Upgraded after its first restart.
func (e *engine) attrs(n *node) election.Attrs {
	if n.inc > 1 && n.idx < len(e.c.Upgraded) {
		return e.c.Upgraded[n.idx]
	}
	if n.idx < len(e.c.Attrs) {
		return e.c.Attrs[n.idx]
	}
	return election.Attrs{}
}

// preferStart begins the candidacy reads of n's new term of Job.
func (e *engine) preferStart(n *node) {
	n.prefGen++
	n.prefSince, n.prefTermAt = n.local(e.now), e.now
	e.push(event{at: e.now + n.latency, kind: evPrefer, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.prefGen)})
}

// renewCandidacies notes that every node renewing its candidacy now did.
func (e *engine) renewCandidacies() {
	for _, m := range e.nodes {
		if m.up && !m.cut && !m.frozen && !m.awaiting {
			m.candAt = e.now
		}
	}
}

// safePoint tells n's machine, after a step of its scheduler machine,
// that it came to a safe point, at once: a runtime between runs starts
// nothing before its election machine has answered. It is told, at the
// same instant (before any other event), when it leaves one, as the
// library's runtime tells it before it steps its scheduler machine
// (Term.SafePoint): the machine may judge a handover at any event
// (a renewal's reply too), and must never judge it on a safe point that
// is over.
func (e *engine) safePoint(n *node) {
	safe := n.sm.AtSafePoint() && n.term != 0
	if safe != n.safeTold && n.term != 0 {
		n.safeTold = safe
		e.step(n, election.SafePoint{Name: Job, Safe: safe})
	}
	n.safeTold = safe
}

// preferRead is n's read of the candidacies, at the store now (its
// request took its latency): the answer reaches it after its latency,
// and the next read is a renew interval later.
func (e *engine) preferRead(n *node, gen int32) {
	if int(gen) != n.prefGen || n.term == 0 {
		return
	}
	e.push(event{at: e.now + e.c.Renew, kind: evPrefer, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.prefGen)})
	if n.cut {
		return // the read fails
	}
	e.push(event{at: e.now + n.latency, kind: evPreferReply, node: int32(n.idx), inc: int32(n.inc), gen: gen,
		ev: election.Event(election.Candidates{Name: Job, List: e.candidacies()})})
}

// candidacies is the candidacies of Job as a read at the store finds
// them now.
func (e *engine) candidacies() []election.Candidate {
	e.renewCandidacies()
	list := make([]election.Candidate, 0, len(e.nodes))
	for _, m := range e.nodes {
		if m.candAt < 0 {
			continue // never a candidate yet
		}
		list = append(list, election.Candidate{Node: m.id, Attrs: e.attrs(m), Age: e.now - m.candAt})
	}
	return list
}

// candStart begins the candidacy reads of n's new incarnation as a
// contender, as the library's waiting node reads them (every renew
// interval, with its candidacy's refresh): its machine defers a takeover
// to a strictly better live candidate (election's deferral). A leader's
// own reads (preferStart) tell its machine while it leads.
func (e *engine) candStart(n *node) {
	n.candGen++
	e.push(event{at: e.now + n.latency, kind: evCandRead, node: int32(n.idx), inc: int32(n.inc), gen: int32(n.candGen)})
}

// candRead is n's read of the candidacies as a contender, at the store
// now: the answer reaches it after its latency, the next read is a renew
// interval later.
func (e *engine) candRead(n *node, gen int32) {
	if int(gen) != n.candGen {
		return
	}
	e.push(event{at: e.now + e.c.Renew, kind: evCandRead, node: int32(n.idx), inc: int32(n.inc), gen: gen})
	if n.cut || n.term != 0 {
		return // the read fails, or the leader's reads tell it
	}
	e.push(event{at: e.now + n.latency, kind: evCandReply, node: int32(n.idx), inc: int32(n.inc), gen: gen,
		ev: election.Event(election.Candidates{Name: Job, List: e.candidacies()})})
}

// candReply steps a contender's read into its machine, and keeps it for
// the deferral check.
func (e *engine) candReply(n *node, ev event) {
	if int(ev.gen) != n.candGen || n.term != 0 || n.cut {
		return
	}
	c := ev.ev.(election.Candidates)
	n.candList, n.candFed, n.candFedAt, n.candFedSome = c.List, e.now, n.local(e.now), true
	e.step(n, c)
}

// jobWrote notes Job's record as written now, and every node's clock.
func (e *engine) jobWrote(r store.Record) {
	e.jobRec, e.jobWritten = r, true
	e.jobLocal = e.jobLocal[:0]
	for _, m := range e.nodes {
		e.jobLocal = append(e.jobLocal, m.local(e.now))
	}
}

// deferred checks a takeover of Job by contender n as its swap reaches
// the store (Takeover.Check), with the last candidacies n's machine was
// told before the swap was sent; not one whose node heard of candidacies
// while its swap was out.
func (e *engine) deferred(n *node, sw store.Swap) {
	if !e.c.Check || !e.jobWritten {
		return
	}
	sent := e.now
	if e.c.CallLatency {
		sent -= n.latency
	}
	if !n.candFedSome || n.candFed > sent {
		return
	}
	judged, v := Takeover{
		Name: Job, Node: n.id, Self: e.attrs(n), Policy: e.c.Prefer, Prev: e.jobRec, Swap: sw,
		Lease: e.c.Lease, Margin: e.c.Margin, Deferral: e.electionConfig(n).Deferral(),
		List: n.candList, Since: n.local(e.now).Sub(n.candFedAt), Took: n.local(e.now).Sub(e.jobLocal[n.idx]),
		Up: func(id string) bool { b := e.nodeByID(id); return b != nil && b != n && b.up },
	}.Check()
	if judged {
		e.out.Covered.Deferred++
	}
	e.violated(v)
}

// Takeover is a contender's takeover of a name with a preference policy
// as its swap reaches the store, as the deferral check reads it: the
// record it took (Prev, as last written), its swap, the last candidacies
// its machine was told before the swap was sent (List, Since on its
// clock since then) and how long after the record's write, on its clock,
// the swap lands (Took). Up says whether another node's process is up.
// The simulator and the explorer (internal/lab/explore) both check with
// it.
type Takeover struct {
	Name, Node    string
	Self          election.Attrs
	Policy        election.Policy
	Prev          store.Record
	Swap          store.Swap
	Lease, Margin time.Duration
	Deferral      time.Duration // election.Config.Deferral of the contender
	List          []election.Candidate
	Since, Took   time.Duration
	Up            func(node string) bool
}

// Check reports whether the takeover is one the deferral judges and the
// broken invariant, "" if none: if a node strictly preferred to the
// contender by the policy is up and was live in List, the contender took
// the name only once the record's wait (its lease plus 2e, none for a
// free record) and the deferral had elapsed on its own clock since the
// record was written. A takeover of a record held through a session
// (awaited, not deferred), of one the contender held itself, and a
// transfer to it, are not judged.
func (t Takeover) Check() (judged bool, violation string) {
	sw, prev := t.Swap, t.Prev
	if sw.Record.Holder != t.Node || (sw.Event != store.TakenOver && sw.Event != store.Acquired) {
		return false, ""
	}
	if prev.Version != sw.Expect || prev.Holder == t.Node || (!prev.Free() && prev.Session != "") || (prev.Free() && prev.Transfer == t.Node) {
		return false, ""
	}
	var wait time.Duration
	if !prev.Free() || (prev.Transfer != "" && prev.Transfer != store.AnyNode) {
		wait = prev.Lease + 2*t.Margin
	}
	need := wait + t.Deferral
	for _, c := range t.List {
		if c.Node == t.Node || !t.Up(c.Node) || c.Age+t.Since >= t.Lease || !election.Better(t.Policy, c.Attrs, t.Self) {
			continue
		}
		if t.Took < need {
			return true, fmt.Sprintf("%s took %s over %v after its record was written (token %d), on its clock, while %s (%s) was a live candidate preferred by %s to it (%s): before the record's wait and the deferral, %v", t.Node, t.Name, t.Took, prev.Token, c.Node, attrsText(c.Attrs), t.Policy, attrsText(t.Self), need)
		}
		return true, ""
	}
	return false, ""
}

// nodeByID returns the node of id, nil if none.
func (e *engine) nodeByID(id string) *node {
	for _, m := range e.nodes {
		if m.id == id {
			return m
		}
	}
	return nil
}

// preferReply steps the answer into n's machine, right after its safe
// point as it stands at this instant.
func (e *engine) preferReply(n *node, ev event) {
	if int(ev.gen) != n.prefGen || n.term == 0 || n.cut {
		return
	}
	safe := n.sm.AtSafePoint()
	n.safeTold = safe
	if e.tracing() {
		e.tracef("%s reads %d candidacies of %s, at a safe point: %v", n.id, len(ev.ev.(election.Candidates).List), Job, safe)
	}
	c := ev.ev.(election.Candidates)
	n.candList, n.candFed, n.candFedAt, n.candFedSome = c.List, e.now, n.local(e.now), true
	e.steps(n, []election.Event{election.SafePoint{Name: Job, Safe: safe}, c})
}

// handedOver checks n's preference handover of Job, as its machine
// announced it (Lost with ErrHandedOver), before its work is ended
// (Handover.Check). "No run under way" is the checker's own reading, not
// the scheduler machine's: no ledger write or read-back of the node
// unanswered, no effect it started that its machine was not told ended,
// and no running row of its token in the store.
func (e *engine) handedOver(n *node) {
	e.out.Covered.Preferred++
	if !e.c.Check {
		return
	}
	e.violated(Handover{
		Name: Job, Node: n.id, Token: n.term, RunCalls: n.runCalls, EffectOut: n.effectOut, Running: n.running.Period,
		Ledger: e.ledger(), Held: n.local(e.now).Sub(n.prefSince), Hysteresis: e.c.Hysteresis,
		TermAt: n.prefTermAt, LastPref: e.lastPref,
	}.Check())
	e.lastPref = e.now
}

// Handover is a leader's preference handover of a name as the checker
// reads it, at the instant its machine announces it (Lost with
// ErrHandedOver), before its work is ended: its ledger writes and
// read-backs not answered yet (RunCalls), whether an effect it started
// is not known ended (EffectOut, of period Running), the ledger's rows,
// how long its term lasted on its own clock (Held), and when (true time)
// its term began and the name's previous preference handover was made
// (LastPref, negative: none). The simulator and the explorer
// (internal/lab/explore) both check with it.
type Handover struct {
	Name, Node string
	Token      uint64
	RunCalls   int
	EffectOut  bool
	Running    string
	Ledger     []store.Run
	Held       time.Duration
	Hysteresis time.Duration
	TermAt     time.Duration
	LastPref   time.Duration
}

// Check returns the first broken invariant, "" if none: no run was under
// way (a safe point), the term had lasted the hysteresis on the leader's
// clock, and it began after the name's previous preference handover.
func (h Handover) Check() string {
	if h.RunCalls > 0 {
		return fmt.Sprintf("%s handed %s over to a preferred candidate with %d ledger calls of its token %d out: not at a safe point", h.Node, h.Name, h.RunCalls, h.Token)
	}
	if h.EffectOut {
		return fmt.Sprintf("%s handed %s over to a preferred candidate with its run of %s under way (token %d): not at a safe point", h.Node, h.Name, h.Running, h.Token)
	}
	for _, r := range h.Ledger {
		if r.State == store.Running && r.Token == h.Token && r.Holder == h.Node {
			return fmt.Sprintf("%s handed %s over to a preferred candidate with period %s running under its token %d: not at a safe point", h.Node, h.Name, r.Period, h.Token)
		}
	}
	if h.Held < h.Hysteresis {
		return fmt.Sprintf("%s handed %s over to a preferred candidate %v into its term on its clock, within the hysteresis %v", h.Node, h.Name, h.Held, h.Hysteresis)
	}
	if h.LastPref >= 0 && h.TermAt <= h.LastPref {
		return fmt.Sprintf("%s handed %s over to a preferred candidate in a term that began at %.3fs, not after the previous preference handover at %.3fs", h.Node, h.Name, h.TermAt.Seconds(), h.LastPref.Seconds())
	}
	return ""
}

// preferredAtEnd checks, at the end, long after the last fault, that the
// holder of Job is a best live candidate of the policy: no live node is
// strictly preferred to it.
func (e *engine) preferredAtEnd() {
	holder := -1
	var live []election.Candidate
	for j, n := range e.nodes {
		if !n.up || n.frozen {
			continue
		}
		live = append(live, election.Candidate{Node: n.id, Attrs: e.attrs(n)})
		if e.holds(n, 0) {
			holder = j
		}
	}
	if holder < 0 {
		return // the liveness check says so
	}
	h := e.nodes[holder]
	if best, ok := election.Best(e.c.Prefer, live); ok && election.Better(e.c.Prefer, best.Attrs, e.attrs(h)) {
		e.violate("preference: %s leads %s at the end, %v after the last fault, but %s (%s) is preferred by %s to it (%s)",
			h.id, Job, e.c.End/4, best.Node, attrsText(best.Attrs), e.c.Prefer, attrsText(e.attrs(h)))
	}
}

func attrsText(a election.Attrs) string {
	s := fmt.Sprintf("weight %d", a.Weight)
	if a.Version != "" {
		s += ", version " + a.Version
	}
	for _, l := range a.Labels {
		s += ", " + l.Key + "=" + l.Value
	}
	return s
}

// PreferTrace describes the run's preference, for a trace.
func (c Config) PreferTrace() string {
	s := fmt.Sprintf("preference %s, hysteresis %v:", c.Prefer, c.Hysteresis.Round(time.Millisecond))
	for i, a := range c.Attrs {
		s += fmt.Sprintf(" node-%d (%s", i, attrsText(a))
		if i < len(c.Upgraded) && c.Upgraded[i].Version != a.Version {
			s += ", after a restart " + c.Upgraded[i].Version
		}
		s += ")"
	}
	return s
}
