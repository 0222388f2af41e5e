// Package election is baton's election protocol as a deterministic state
// machine, in the manner of etcd/raft: it is fed the current monotonic time
// and an event (a store reply, a timer firing, a resign request) and answers
// with actions (a store request to send, a leadership change to announce).
// It never reads a clock, starts a goroutine or touches a store, so the
// runtime in package baton, the drill and the simulator all drive the very
// same logic: real time in production, virtual time in tests.
//
// The protocol, on any linearizable compare-and-swap store:
//   - A leader renews every Renew with a swap on the record's version. A
//     renewal sent at local time s that succeeds makes the leadership valid
//     until s + Lease. When renewals fail, the leader keeps trying and steps
//     down by itself at that deadline. A conflict (someone else wrote the
//     record) ends the leadership at once.
//   - A contender takes over a held record only after it saw the record at
//     the same version for Lease + 2*Margin on its own clock, with a swap
//     on that version that raises the token by one. Margin is the clock
//     uncertainty e: the 2e keeps the old leader's own deadline strictly
//     before the takeover.
//   - A free record is taken at once; a record released towards a named
//     node is taken at once by that node and by others only after the lease.
//   - A token is fixed when a term is won; the machine never adopts a token
//     it reads later.
//   - With a preference policy (Config.Prefer, prefer.go), a leader that a
//     live candidate is strictly preferred to releases the record towards
//     it, as a transfer does, only at a safe point its runtime reports and
//     once its term has lasted the hysteresis. Without one (the default)
//     nothing moves the lead but a failure or an operator.
package election

import (
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/store"
)

// sessionView is a Group's own session as its names' machines see it.
type sessionView struct {
	name     string    // the session record's name
	alive    bool      // the session is held and valid
	deadline time.Time // until when, on the local clock
	// fed is the generation of the Group's change feed while it is live
	// and says how far it has reported (Config.OrderedFeed), 0 otherwise: a
	// read sent under a generation, and notified of no change since, is
	// known current up to what the feed has reported (Synced) while the
	// generation lasts.
	fed uint64
}

// Reasons a term ends, carried by Lost.
var (
	// ErrLeaseExpired: renewals failed until the lease deadline passed.
	ErrLeaseExpired = errors.New("lease expired: renewals failed until the deadline")
	// ErrDeposed: the record changed under the leader (another node took it,
	// or an operator asked for a handover).
	ErrDeposed = errors.New("deposed: the election record was changed by another writer")
	// ErrResigned: the leader resigned.
	ErrResigned = errors.New("resigned")
	// ErrStoreLost: the store answered with an error that never heals
	// (store.Permanent: replaced, corrupt, foreign schema). The term ends at
	// once, nothing is released on a store that cannot be trusted, and the
	// machine stops campaigning: the cause wraps the store's error.
	ErrStoreLost = errors.New("store failed for good")
)

// lost wraps a permanent store error as a term's cause.
func lost(err error) error { return fmt.Errorf("%w: %w", ErrStoreLost, err) }

type phase int

const (
	idle       phase = iota // not campaigning
	contending              // watching the record, waiting to acquire
	leading                 // holding the record
	releasing               // lost or resigned; writing holder=free
)

type op int

const (
	opNone op = iota
	opRead
	opAcquire
	opRenew
	opRelease
	opRequest // a transfer request towards this node (pull)
)

func (p phase) String() string {
	return [...]string{"idle", "contending", "leading", "releasing"}[p]
}

// Machine is the election state machine for one name on one node. It is not
// safe for concurrent use; one runtime goroutine drives it.
type Machine struct {
	cfg   Config
	phase phase
	get   Action   // Get{Name: cfg.Name}, boxed once: a contender reads every poll
	gets  []Action // []Action{get}, made once: what read returns
	// await is Await{Name: cfg.Name, Session: awaiting}, boxed once for
	// each session awaited (a contender reports it at every read of the
	// record held through it), and awaits []Action{await}, what the
	// report returns: the same slice every time, as gets.
	await  Action
	awaits []Action

	inflight op        // the one store request in flight
	sentAt   time.Time // when it was sent

	// Contender's observation: the record as last read, and when it may be
	// taken over (expired): the local time its current version was first
	// seen plus the wait for its lease (Config.wait), found once.
	seen    store.Record
	takeAt  time.Time
	hasSeen bool
	readAt  time.Time // next read due (zero: none scheduled)

	// Leader's state.
	rec      store.Record // the record as last written by us
	token    uint64
	deadline time.Time
	renewAt  time.Time
	timerAt  time.Time // earliest(deadline, renewAt), set with them (setTimes)
	recheck  bool      // the last renewal's outcome is unknown: read before renewing
	changed  bool      // a change was notified while a read was in flight
	// changedTo is the version that change notified (0: unknown): a
	// contender's reply showing it needs no second read.
	changedTo int64
	again     bool // Start arrived while releasing: campaign once released
	hold      bool // Start.Hold: campaign again after every term, until Resign

	// Released on an operator's resign request (store.AnyNode): the free
	// record at yieldToken is left to the other nodes until yieldUntil, so
	// that the resigned node, campaigning again at once, does not simply
	// win it back.
	yieldToken uint64
	yieldUntil time.Time

	// sess is the Group's session when the name is held through it; nil
	// for a machine that renews its own record.
	sess     *sessionView
	awaiting string // another process's session the contender waits on
	// adopt is the session the Group's own session succeeded while this
	// contender awaited it: its next read, if it shows the record passed
	// on from that session to the Group's session (Record.Via), is the
	// term, taken without a write. Cleared by that read whatever it shows.
	adopt string
	// readFed is sess.fed when the read in flight was sent; seenFed is
	// that of the read that last confirmed seen, with no change notified
	// while it was out (0: none, or not under a feed in order). Only a
	// contender's reads set it.
	readFed, seenFed uint64
	waitOwn          bool // the contender waits for sess to be alive to acquire
	// session: the machine is a Group's own session, whose extensions
	// are every term's held through it: its Extended carries no name
	// (Extended), so that the Group passes it on as it is.
	session bool
	// swept: the machine is a Group's, whose check sweep re-reads an
	// awaited record (Check events) at a rate that does not grow with the
	// number of names; the machine sets no timer of its own for it.
	swept bool

	// pref is the name's preference (prefer.go); nil without one.
	pref *prefState
}

// New returns an idle machine.
func New(cfg Config) *Machine {
	m := &Machine{cfg: cfg}
	if cfg.Prefer.Kind != PreferNone {
		m.pref = &prefState{policy: cfg.Prefer, hysteresis: cfg.Hysteresis}
	}
	return m
}

// Leading reports whether the machine holds a term.
func (m *Machine) Leading() bool { return m.phase == leading }

// Token returns the current term's token (0 when not leading).
func (m *Machine) Token() uint64 {
	if m.phase != leading {
		return 0
	}
	return m.token
}

// Deadline returns the current term's deadline (zero when not leading).
// A name held through a session has the session's.
func (m *Machine) Deadline() time.Time {
	if m.phase != leading {
		return time.Time{}
	}
	if m.sess != nil {
		return m.sess.deadline
	}
	return m.deadline
}

// Phase names the machine's phase, for logs and traces.
func (m *Machine) Phase() string { return m.phase.String() }

// Next returns when the machine wants the next Tick; zero means no timer.
func (m *Machine) Next() time.Time {
	// Small enough to be inlined: the Group asks after every step.
	if m.phase == leading {
		return m.leaderNext()
	}
	if m.phase == idle || m.inflight != opNone {
		return time.Time{}
	}
	return m.readAt // contending or releasing: the next read
}

// leaderNext is Next for a leader.
func (m *Machine) leaderNext() time.Time {
	if m.sess != nil {
		return time.Time{} // the session's machine keeps the deadline
	}
	if m.inflight != opNone {
		return m.deadline
	}
	return m.timerAt // earliest(m.deadline, m.renewAt)
}

// setTimes sets a term's deadline and next renewal: every change of
// either goes through it, so that timerAt stays their earliest, which
// Next, asked after every step, returns.
func (m *Machine) setTimes(deadline, renewAt time.Time) {
	m.deadline, m.renewAt, m.timerAt = deadline, renewAt, earliest(deadline, renewAt)
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// Step feeds one event at local monotonic time now and returns the actions
// to execute, in order.
func (m *Machine) Step(now time.Time, ev Event) []Action {
	if _, ok := ev.(Tick); ok {
		// Most steps, told apart with one comparison (the switch below
		// searches every event type).
		return m.stepped(m.tick(now))
	}
	var acts []Action
	switch ev := ev.(type) {
	case Start:
		if ev.Hold {
			m.hold = true
		}
		acts = m.start(now)
	case Tick:
		acts = m.tick(now)
	case Changed:
		switch {
		case m.phase == contending && m.inflight == opNone && !m.waitOwn:
			if ev.Version == 0 || !m.hasSeen || ev.Version != m.seen.Version {
				acts = m.read(now)
			}
		case m.phase == contending && m.inflight == opRead && !m.waitOwn:
			// The read in flight may predate the change (a release, most
			// often): without a second read the contender would learn of
			// it only at its next poll.
			if !m.changed || ev.Version == 0 {
				m.changedTo = ev.Version
			} else if m.changedTo != 0 {
				m.changedTo = max(m.changedTo, ev.Version)
			}
			m.changed = true
		case m.phase == leading && m.sess != nil:
			switch {
			case ev.Version != 0 && ev.Version == m.rec.Version:
				// The version it holds: nothing new.
			case m.inflight == opNone:
				acts = m.read(now) // as a Check: somebody else wrote the record
			default:
				m.changed = true // the read in flight may predate the change
			}
		}
	case Check:
		switch {
		case m.phase == leading && m.sess != nil && m.inflight == opNone:
			acts = m.read(now)
		case m.phase == contending && m.inflight == opNone && m.awaiting != "" && !m.waitOwn:
			acts = m.read(now) // the sweep's re-read of an awaited record
		}
	case pull:
		acts = m.pull(now)
	case poll:
		acts = m.poll(now)
	case sessionCorrupt:
		if m.phase == contending && m.inflight == opNone && m.awaiting == ev.session {
			m.awaiting = ""
			acts = m.fail(ev.err) // the session can never be judged dead
		}
	case passed:
		if m.phase == contending && m.awaiting == ev.session && ev.adopt {
			// Also with a read out: its answer, if it shows the record
			// passed on from that session, was read after the succession.
			m.adopt = ev.session
		}
		if m.phase == contending && m.inflight == opNone && m.awaiting == ev.session {
			m.awaiting = ""
			if ev.adopt {
				if m.cfg.Mutate.AdoptUnread && m.hasSeen && m.seen.Session == ev.session {
					// Mutation: the term from the old read.
					rec := m.seen
					rec.Holder, rec.Incarnation, rec.Session, rec.Token = m.cfg.Node, m.cfg.Incarnation, m.sess.name, rec.Token+1
					return m.stepped(m.adoptTerm(now, rec))
				}
				if rec, ok := m.proven(ev); ok {
					// The record as a read would show it now: the
					// contender's reply to it, which adopts the term.
					m.adopt = ev.session
					return m.stepped(m.contenderReply(now, &GetReply{Name: m.cfg.Name, Record: rec}))
				}
			}
			acts = m.read(now)
		}
	case SessionEnded:
		if m.phase == contending && m.inflight == opNone && m.awaiting == ev.Session {
			m.awaiting = ""
			if m.hasSeen && m.seen.Session == ev.Session {
				acts = m.acquire(now, m.seen)
			} else {
				acts = m.read(now)
			}
		}
	case Resign:
		acts = m.resign(now, ev.Token)
	case Candidates, SafePoint, SetPolicy:
		acts = m.stepPrefer(now, ev)
	case GetReply:
		return m.stepReply(now, &ev, false)
	case SwapReply:
		return m.stepReply(now, (*GetReply)(&ev), true)
	default:
		panic(fmt.Sprintf("election: unknown event %T", ev))
	}
	return m.stepped(acts)
}

// stepReply is Step for a store answer, r a SwapReply when swap: the
// typed path (Group.StepGet, StepSwap) that never boxes it into an Event.
func (m *Machine) stepReply(now time.Time, r *GetReply, swap bool) []Action {
	if swap {
		return m.stepped(m.swapReply(now, (*SwapReply)(r)))
	}
	if m.inflight == opRead && m.phase == contending {
		// getReply's most common case, without its call: a
		// contender's read.
		m.inflight = opNone
		return m.stepped(m.contenderRead(now, r))
	}
	return m.stepped(m.getReply(now, r))
}

// stepped ends every step: an idle machine with nothing in flight says so.
func (m *Machine) stepped(acts []Action) []Action {
	if m.phase == idle && m.inflight == opNone {
		acts = append(acts, Idle{})
	}
	return acts
}

func (m *Machine) read(now time.Time) []Action {
	m.inflight, m.sentAt, m.readAt = opRead, now, time.Time{}
	m.readFed = 0
	if m.sess != nil {
		m.readFed = m.sess.fed
	}
	if m.get == nil {
		m.get = Get{Name: m.cfg.Name}
		m.gets = []Action{m.get}
	}
	// The same slice every time (its one element set again): a step's
	// actions are read, or appended to (which copies, at full capacity),
	// never written in place.
	m.gets[0] = m.get
	return m.gets[:1:1]
}

func (m *Machine) send(now time.Time, o op, sw store.Swap) []Action {
	m.inflight, m.sentAt, m.readAt = o, now, time.Time{}
	return []Action{Swap{Swap: sw}}
}

func (m *Machine) tick(now time.Time) []Action {
	switch m.phase {
	case contending, releasing:
		if m.inflight == opNone && !m.readAt.IsZero() && !now.Before(m.readAt) {
			if m.phase == contending && m.hasSeen && (m.seen.Session == "" || m.cfg.Mutate.SessionNameExpiry) && m.expired(now) && !m.cfg.Mutate.NoTakeover {
				if m.deferTake(now, &m.seen) {
					return m.read(now) // deferring: watch for the better one's takeover
				}
				return m.acquire(now, m.seen)
			}
			return m.read(now)
		}
	case leading:
		return m.renewDue(now)
	}
	return nil
}

// mine reports whether r is held by this process instance.
func (m *Machine) mine(r *store.Record) bool {
	return r.Holder == m.cfg.Node && r.Incarnation == m.cfg.Incarnation
}

func (m *Machine) getReply(now time.Time, r *GetReply) []Action {
	if m.inflight != opRead {
		return nil // not ours to answer
	}
	m.inflight = opNone
	switch m.phase {
	case contending:
		return m.contenderRead(now, r)
	case leading:
		if m.sess != nil {
			return m.checkReply(now, r)
		}
		return m.recheckReply(now, r)
	case releasing:
		return m.releaseRead(now, r)
	}
	return nil
}

func (m *Machine) swapReply(now time.Time, r *SwapReply) []Action {
	o := m.inflight
	if o == opNone || o == opRead {
		return nil
	}
	m.inflight = opNone
	switch o {
	case opAcquire:
		return m.acquireReply(now, r)
	case opRenew:
		return m.renewReply(now, r)
	case opRequest:
		return m.pullReply(now, r)
	case opRelease:
		return m.releaseReply(now, r)
	}
	return nil
}
