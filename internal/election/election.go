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

	inflight op        // the one store request in flight
	sentAt   time.Time // when it was sent

	// Contender's observation: the record as last read and the local time
	// its current version was first seen.
	seen    store.Record
	seenAt  time.Time
	hasSeen bool
	readAt  time.Time // next read due (zero: none scheduled)

	// Leader's state.
	rec      store.Record // the record as last written by us
	token    uint64
	deadline time.Time
	renewAt  time.Time
	recheck  bool // the last renewal's outcome is unknown: read before renewing
	changed  bool // a change was notified while a read was in flight
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
	// swept: the machine is a Group's, whose check sweep re-reads an
	// awaited record (Check events) at a rate that does not grow with the
	// number of names; the machine sets no timer of its own for it.
	swept bool
}

// New returns an idle machine.
func New(cfg Config) *Machine { return &Machine{cfg: cfg} }

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
	switch m.phase {
	case contending:
		if m.inflight != opNone {
			return time.Time{}
		}
		return m.readAt
	case leading:
		if m.sess != nil {
			return time.Time{} // the session's machine keeps the deadline
		}
		if m.inflight != opNone {
			return m.deadline
		}
		return earliest(m.deadline, m.renewAt)
	case releasing:
		if m.inflight != opNone {
			return time.Time{}
		}
		return m.readAt
	}
	return time.Time{}
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
					return m.stepped(m.contenderReply(now, GetReply{Name: m.cfg.Name, Record: rec}))
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
	case GetReply:
		return m.stepReply(now, ev, false)
	case SwapReply:
		return m.stepReply(now, GetReply(ev), true)
	default:
		panic(fmt.Sprintf("election: unknown event %T", ev))
	}
	return m.stepped(acts)
}

// stepReply is Step for a store answer, r a SwapReply when swap: the
// typed path (Group.StepGet, StepSwap) that never boxes it into an Event.
func (m *Machine) stepReply(now time.Time, r GetReply, swap bool) []Action {
	if swap {
		return m.stepped(m.swapReply(now, SwapReply(r)))
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

func (m *Machine) start(now time.Time) []Action {
	if m.phase == releasing {
		m.again = true
		return nil
	}
	if m.phase != idle {
		return nil
	}
	m.phase = contending
	m.hasSeen, m.awaiting, m.waitOwn = false, "", false
	if m.sess != nil && !m.sess.alive && m.inflight == opNone {
		// Nothing can be taken without a session: wait for it quietly
		// (the Group reads the record once it is alive), so that a
		// process cut off from the store retries one write, not a read
		// per name.
		m.waitOwn = true
		return nil
	}
	if m.inflight != opNone {
		// A late reply of the previous campaign is still out; it will be
		// handled as a contender's and the read follows it.
		m.readAt = now
		return nil
	}
	return m.read(now)
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
			if m.phase == contending && m.hasSeen && (m.seen.Session == "" || m.cfg.Mutate.SessionNameExpiry) && m.expired(now) {
				return m.acquire(now, m.seen)
			}
			return m.read(now)
		}
	case leading:
		if m.sess != nil {
			return nil // the session's machine renews and keeps the deadline
		}
		if !now.Before(m.deadline) {
			return m.lose(now, ErrLeaseExpired)
		}
		if m.inflight == opNone && !now.Before(m.renewAt) {
			if m.recheck {
				return m.read(now)
			}
			return m.send(now, opRenew, store.Swap{Expect: m.rec.Version, Record: m.rec})
		}
	}
	return nil
}

// poll is a Group's early Tick for a contender whose next read is due
// soon (within half a poll): it reads now, with the reads due now, in one
// batched read, and from then on the two poll together. A read is never
// unsafe early; what is never early is a takeover: the record is taken
// only if it stayed unchanged for its whole wait (expired), at any time.
type poll struct{}

func (poll) event() {}

func (m *Machine) poll(now time.Time) []Action {
	if m.phase != contending || m.inflight != opNone || m.readAt.IsZero() {
		return nil
	}
	if !now.Before(m.readAt) {
		return m.tick(now)
	}
	return m.read(now)
}

// expired reports whether the observed record stayed at one version for
// its lease plus twice the clock margin, measured on this node's clock.
func (m *Machine) expired(now time.Time) bool {
	return !now.Before(m.seenAt.Add(m.cfg.wait(m.seen.Lease)))
}

// giveUp reports whether a release that keeps failing may be given up:
// a lease after the term's deadline, when the record frees itself. A name
// held through a live session never frees itself, so its release is tried
// until it is written or the session ends (sessionLost).
func (m *Machine) giveUp(now time.Time) bool {
	return m.sess == nil && !now.Before(m.deadline.Add(m.rec.Lease))
}

// check is how often a contender that awaits a session re-reads the record.
func (m *Machine) check() time.Duration {
	if m.cfg.Check > 0 {
		return m.cfg.Check
	}
	return m.cfg.Poll
}

// mine reports whether r is held by this process instance.
func (m *Machine) mine(r store.Record) bool {
	return r.Holder == m.cfg.Node && r.Incarnation == m.cfg.Incarnation
}

func (m *Machine) resign(now time.Time, token uint64) []Action {
	if token != 0 && (m.phase != leading || token != m.token) {
		return nil
	}
	if token == 0 {
		m.hold = false // stop campaigning; a term's own resign keeps the hold
	}
	switch m.phase {
	case releasing:
		m.again = false
	case contending:
		m.phase = idle // an acquisition still in flight is released if it wins
		return nil
	case leading:
		return m.lose(now, ErrResigned)
	}
	return nil
}

// lose ends the term: Lost first, so the runtime stops the work, then the
// release when the record is known to be ours at a known version.
func (m *Machine) lose(now time.Time, cause error) []Action {
	acts := []Action{Lost{Name: m.cfg.Name, Cause: cause}}
	m.phase = releasing
	if cause == ErrLeaseExpired {
		// Nobody heard from the store for a whole lease: others may already
		// be taking over. Try one release (it fails harmlessly if the
		// record moved on) only if nothing is in flight.
		m.recheck = true
	}
	if m.inflight == opNone {
		if m.recheck {
			acts = append(acts, m.read(now)...)
		} else {
			acts = append(acts, m.release(now, m.rec)...)
		}
	}
	return acts
}

// loseStore ends the term at once on a permanent store error: Lost with a
// cause wrapping ErrStoreLost and the store's error, then Released with
// that error. Nothing is written: a release on a store that is gone or
// replaced would go to the wrong store, or nowhere. The machine does not
// campaign again by itself.
func (m *Machine) loseStore(err error) []Action {
	m.phase, m.recheck, m.again, m.hold = idle, false, false, false
	cause := lost(err)
	return []Action{Lost{Name: m.cfg.Name, Cause: cause}, Released{Name: m.cfg.Name, Err: cause}}
}

// fail ends a campaign on a permanent store error.
func (m *Machine) fail(err error) []Action {
	m.phase, m.again, m.hold = idle, false, false
	return []Action{Failed{Name: m.cfg.Name, Err: lost(err)}}
}

func (m *Machine) release(now time.Time, cur store.Record) []Action {
	free, kind := freed(cur)
	if cur.Transfer == store.AnyNode {
		// Two polls: a waiting node reads the free record within one.
		m.yieldToken, m.yieldUntil = cur.Token, now.Add(2*m.cfg.Poll)
	}
	if store.IsSession(m.cfg.Name) {
		kind = "" // session records keep no election log
	}
	return m.send(now, opRelease, store.Swap{Expect: cur.Version, Record: free, Event: kind})
}

// freed is the free record that releases cur, and the event the release
// logs: towards the node a transfer asks for, if one does.
func freed(cur store.Record) (store.Record, store.EventKind) {
	free := store.Record{Name: cur.Name, Token: cur.Token, Lease: cur.Lease}
	if cur.Transfer != "" && cur.Transfer != store.AnyNode {
		free.Transfer = cur.Transfer
		return free, store.Transferred
	}
	return free, store.Released
}

func (m *Machine) finishRelease(now time.Time, err error) []Action {
	m.phase, m.recheck = idle, false
	acts := []Action{Released{Name: m.cfg.Name, Err: err}}
	if store.Permanent(err) {
		m.hold = false // the store cannot be trusted: campaign no more
	}
	if m.again || m.hold {
		m.again = false
		acts = append(acts, m.start(now)...)
	}
	return acts
}

func (m *Machine) acquire(now time.Time, cur store.Record) []Action {
	if err := checkToken(cur); err != nil {
		return m.fail(err) // the next token would not fit
	}
	next := store.Record{
		Name:        m.cfg.Name,
		Holder:      m.cfg.Node,
		Incarnation: m.cfg.Incarnation,
		Token:       cur.Token + 1,
		Lease:       m.cfg.Lease,
	}
	if m.sess != nil {
		if !m.sess.alive {
			// Nothing to hold it through yet: the Group wakes the
			// machine when its session is alive again.
			m.waitOwn, m.readAt = true, time.Time{}
			return nil
		}
		next.Session = m.sess.name
	}
	kind := store.Acquired
	switch {
	case cur.Version == 0:
	case cur.Free() && cur.Transfer == m.cfg.Node:
		kind = store.Transferred
	case !cur.Free() && !m.mine(cur):
		kind = store.TakenOver
	}
	if store.IsSession(m.cfg.Name) {
		kind = "" // session records keep no election log
	}
	return m.send(now, opAcquire, store.Swap{Expect: cur.Version, Record: next, Event: kind})
}

func (m *Machine) getReply(now time.Time, r GetReply) []Action {
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
		// Re-check after a renewal of unknown outcome.
		switch {
		case store.Permanent(r.Err):
			return m.loseStore(r.Err)
		case r.Err != nil:
			m.renewAt = now.Add(m.cfg.Retry)
			return nil
		case m.mine(r.Record) && r.Record.Token == m.token && r.Record.Transfer == "":
			m.rec, m.recheck = r.Record, false
			return m.send(now, opRenew, store.Swap{Expect: m.rec.Version, Record: m.rec})
		default:
			return m.lose(now, ErrDeposed)
		}
	case releasing:
		switch {
		case store.Permanent(r.Err):
			m.again = false
			return m.finishRelease(now, r.Err)
		case r.Err != nil && !errors.Is(r.Err, store.ErrNotFound):
			if m.giveUp(now) {
				return m.finishRelease(now, r.Err) // give up; the lease frees it
			}
			m.readAt = now.Add(m.cfg.Retry)
			return nil
		case r.Err == nil && m.mine(r.Record) && r.Record.Token == m.token:
			m.recheck = false
			return m.release(now, r.Record)
		default:
			return m.finishRelease(now, nil) // not ours any more: nothing to release
		}
	}
	return nil
}

// checkReply handles a leader's re-read of a record it holds through a
// session. The holder never writes that record, so any other version means
// somebody else did: an operator's transfer or resign request, a
// reschedule, a raised token floor, or a new holder after the session was
// given up for dead. The term ends; the release follows if it is still
// ours.
func (m *Machine) checkReply(now time.Time, r GetReply) []Action {
	again := m.changed
	m.changed = false
	switch {
	case store.Permanent(r.Err):
		return m.loseStore(r.Err)
	case r.Err != nil:
		return nil // the next Check reads again
	case r.Record.Version == m.rec.Version:
		if again {
			return m.read(now) // the change notified meanwhile
		}
		return nil
	case m.mine(r.Record) && r.Record.Token == m.token && r.Record.Session == m.rec.Session:
		m.rec = r.Record
		return m.lose(now, ErrDeposed)
	default:
		m.recheck = true // not ours: the read in lose finds nothing to release
		return m.lose(now, ErrDeposed)
	}
}

// sessionLost ends a term held through the Group's session when that
// session ends: Lost, then Released at once, without a write. The records
// point at the session, so whoever finds it dead may take them; the Group
// gives the session record up (or others do after the lease).
func (m *Machine) sessionLost(cause error) []Action {
	switch m.phase {
	case leading, releasing:
		acts := []Action{}
		if m.phase == leading {
			acts = append(acts, Lost{Name: m.cfg.Name, Cause: cause})
		}
		m.phase, m.recheck = idle, false
		var err error
		if errors.Is(cause, ErrStoreLost) {
			err = cause // as loseStore: the runtime does not campaign again
			m.again, m.hold = false, false
		}
		acts = append(acts, Released{Name: m.cfg.Name, Err: err})
		if m.again || m.hold {
			m.again = false
			// Wait for the next session like any contender.
			m.phase, m.hasSeen, m.awaiting, m.waitOwn = contending, false, "", true
		}
		return acts
	}
	return nil
}

func (m *Machine) contenderRead(now time.Time, r GetReply) []Action {
	again, to := m.changed, m.changedTo
	m.changed, m.changedTo = false, 0
	m.seenFed = 0
	if r.Err == nil && !again {
		m.seenFed = m.readFed // nothing notified since it was sent
	}
	adopt := m.adopt
	acts := m.contenderReply(now, r)
	if again && m.phase == contending && m.inflight == opNone && !m.waitOwn &&
		(to == 0 || r.Err != nil || r.Record.Version != to) {
		// A change was notified while the read was in flight, and the
		// reply may not show it: read again now. The second read stands
		// for the first: a succession the machine was told of before it
		// may show in it (no term was won in between, so none is adopted
		// twice).
		m.adopt = adopt
		acts = append(acts, m.read(now)...)
	}
	return acts
}

// contenderReply handles a contender's read of the record.
func (m *Machine) contenderReply(now time.Time, r GetReply) []Action {
	switch {
	case errors.Is(r.Err, store.ErrNotFound):
		return m.acquire(now, store.Record{})
	case store.Permanent(r.Err):
		return m.fail(r.Err)
	case r.Err != nil:
		if m.sess != nil && !m.sess.alive {
			m.waitOwn = true // as in start: retry when the session is back
			return nil
		}
		m.readAt = now.Add(m.cfg.Poll)
		return nil
	}
	rec := r.Record
	if !m.hasSeen || rec.Version != m.seen.Version {
		m.seen, m.seenAt, m.hasSeen = rec, now, true
	}
	// Once per succession. No mutation shows this is needed: an adopted
	// term ends only by a release, which the machine retries while its
	// session lives, or with its session, so its record is not read again
	// as passed on to this session.
	adopt := m.adopt
	m.adopt = ""
	if adopt == "" && m.awaiting != "" {
		// A read can show the succession before the Group tells of it (a
		// sweep's re-read sent as the observer ended the session): passed
		// on from the session this campaign saw holding the record, it
		// was passed on since, so it is no term this machine held.
		adopt = m.awaiting
	}
	switch {
	case adopt != "" && rec.Via == adopt && m.mine(rec) && m.sess != nil && m.sess.alive && rec.Session == m.sess.name:
		// Passed on to this Group's session by its own succession of the
		// session it awaited, as this read shows: the term began then.
		return m.adoptTerm(now, rec)
	case m.mine(rec):
		// Ours from an earlier term of this instance, which has ended: take
		// it again under a new token, never the old one.
		return m.acquire(now, rec)
	case rec.Free() && rec.Token == m.yieldToken && now.Before(m.yieldUntil):
		m.readAt = m.yieldUntil // resigned on request: the others go first
		return nil
	case rec.Free() && (rec.Transfer == "" || rec.Transfer == store.AnyNode || rec.Transfer == m.cfg.Node):
		return m.acquire(now, rec)
	case !rec.Free() && (rec.Session == "" || m.cfg.Mutate.SessionNameExpiry) && !m.cfg.Mutate.WrapDeadline && checkLease(rec) != nil:
		// A lease no valid Config writes: no wait derived from it is
		// safe, so the record is never taken over; the campaign ends.
		return m.fail(checkLease(rec))
	case rec.Session != "" && !rec.Free() && !m.cfg.Mutate.SessionNameExpiry:
		// Held through another process's session: the session record, not
		// this one, says whether the holder lives. Wait to hear that it
		// ended; re-read now and then for a release.
		m.awaiting = rec.Session
		m.readAt = now.Add(m.check())
		if m.swept {
			// The Group's sweep re-reads it (Check), at a bounded rate;
			// a change notification reads it at once (Changed).
			m.readAt = time.Time{}
		}
		if rec.Transfer == m.cfg.Node {
			// Asked to come here (pull): the holder frees it towards
			// this node as soon as it reads the request.
			m.readAt = now.Add(m.cfg.Poll)
		}
		return []Action{Await{Name: m.cfg.Name, Session: rec.Session}}
	case m.expired(now):
		return m.acquire(now, rec)
	}
	m.readAt = earliest(now.Add(m.cfg.Poll), m.seenAt.Add(m.cfg.wait(m.seen.Lease)))
	return nil
}

// proven returns the record of the name as it stands after the
// succession ev tells of, derived from the contender's last read without
// reading it again, when the Group's feed proves that read current
// (Config.OrderedFeed; docs/succession.md, "Adoption without a read"):
// the Group sends ev.dead only once its feed, live under one generation
// since, reported every write up to the succession's own (Synced), and
// the read was sent under that generation with no change of the record
// notified since (seenFed). The store's record then is the one read, and
// the dead session's record is ev.dead, so the store's one rule
// (store.Resolve) gives what a read would return.
func (m *Machine) proven(ev passed) (store.Record, bool) {
	if ev.dead == nil || !m.hasSeen || m.seen.Session != ev.session || m.sess == nil {
		return store.Record{}, false
	}
	if (m.seenFed == 0 || m.seenFed != m.sess.fed) && !m.cfg.Mutate.AdoptAcrossGap {
		return store.Record{}, false
	}
	rec, err := store.Resolve(m.seen, func(name string) (store.Record, bool) {
		return *ev.dead, name == ev.dead.Name
	}, nil)
	if err != nil || rec.Via != ev.session {
		return store.Record{}, false // the token limit, say: a read decides
	}
	return rec, true
}

// adoptTerm makes the contender the leader of rec, a record that a
// succession passed on to the Group's session: valid as long as that
// session, with the token rec shows, and nothing written.
func (m *Machine) adoptTerm(now time.Time, rec store.Record) []Action {
	m.phase, m.rec, m.token = leading, rec, rec.Token
	m.deadline, m.renewAt, m.recheck = m.sess.deadline, now.Add(m.cfg.Renew), false
	if !now.Before(m.deadline) {
		m.phase = releasing // born dead, as a take whose reply came late
		return m.release(now, m.rec)
	}
	return []Action{Elected{Name: m.cfg.Name, Token: m.token, Deadline: m.deadline, Record: m.rec}}
}

func (m *Machine) swapReply(now time.Time, r SwapReply) []Action {
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
		switch {
		case r.Err == nil:
			return m.finishRelease(now, nil)
		case errors.Is(r.Err, store.ErrConflict):
			return m.read(now) // see whose it is now
		case store.Permanent(r.Err):
			m.again = false
			return m.finishRelease(now, r.Err)
		default:
			if m.giveUp(now) {
				return m.finishRelease(now, r.Err)
			}
			m.recheck = true
			m.readAt = now.Add(m.cfg.Retry)
			return nil
		}
	}
	return nil
}

func (m *Machine) acquireReply(now time.Time, r SwapReply) []Action {
	if r.Err == nil && m.phase == contending {
		m.phase, m.rec, m.token = leading, r.Record, r.Record.Token
		m.deadline = m.sentAt.Add(m.cfg.Lease)
		m.renewAt = m.sentAt.Add(m.cfg.Renew)
		m.recheck = false
		if m.sess != nil {
			// Valid as long as the session it was taken through; if
			// that session ended while the swap was out, the term is
			// born dead.
			m.deadline = m.sess.deadline
			if !m.sess.alive || m.sess.name != r.Record.Session {
				m.deadline = now
			}
		}
		if !now.Before(m.deadline) {
			// The reply came after the lease it bought: the term is born
			// dead. Announce nothing; release it.
			m.phase = releasing
			return m.release(now, m.rec)
		}
		return []Action{Elected{Name: m.cfg.Name, Token: m.token, Deadline: m.deadline, Record: m.rec}}
	}
	if r.Err == nil {
		// Won after the campaign was stopped: give it back at once.
		m.phase, m.rec, m.token, m.deadline = releasing, r.Record, r.Record.Token, m.sentAt.Add(m.cfg.Lease)
		if m.sess != nil {
			m.deadline = m.sess.deadline
		}
		return m.release(now, r.Record)
	}
	if m.phase != contending {
		return nil
	}
	if errors.Is(r.Err, store.ErrConflict) {
		return m.read(now)
	}
	if store.Permanent(r.Err) {
		return m.fail(r.Err)
	}
	m.readAt = now.Add(m.cfg.Poll)
	return nil
}

func (m *Machine) renewReply(now time.Time, r SwapReply) []Action {
	if m.phase != leading {
		// The term ended while the renewal was out. If it went through the
		// record is ours at a new version: release that.
		if m.phase == releasing && store.Permanent(r.Err) {
			m.again = false
			return m.finishRelease(now, r.Err)
		}
		if m.phase == releasing {
			if r.Err == nil {
				return m.release(now, r.Record)
			}
			return m.read(now)
		}
		return nil
	}
	if store.Permanent(r.Err) {
		return m.loseStore(r.Err)
	}
	if !now.Before(m.deadline) {
		// The deadline passed before the reply came: the term is over even
		// if the renewal went through, because Valid() has already said so
		// to anyone who asked. Leadership never comes back to life.
		if r.Err == nil {
			m.rec = r.Record
		} else {
			m.recheck = true
		}
		return m.lose(now, ErrLeaseExpired)
	}
	switch {
	case r.Err == nil:
		m.rec = r.Record
		m.deadline = m.sentAt.Add(m.cfg.Lease)
		m.renewAt = m.sentAt.Add(m.cfg.Renew)
		return []Action{Extended{Name: m.cfg.Name, Deadline: m.deadline}}
	case errors.Is(r.Err, store.ErrConflict):
		m.recheck = true
		return m.lose(now, ErrDeposed)
	default:
		// Outcome unknown: read before the next attempt, which adopts the
		// record's version if the renewal went through. The deadline stays
		// where the last confirmed renewal put it.
		m.recheck = true
		m.renewAt = now.Add(m.cfg.Retry)
		return nil
	}
}
