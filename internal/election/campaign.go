// The campaign, top-down: a contender reads the record (start, read),
// judges the reply (contenderRead, contenderReply: free, expired, held
// through a session it must await, or passed on to its own session), and
// takes it with one fenced compare-and-swap (acquire), whose reply makes
// it the leader (acquireReply) or sends it back to reading.

package election

import (
	"errors"
	"time"

	"github.com/batonhq/baton/store"
)

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
	return !now.Before(m.takeAt)
}

// check is how often a contender that awaits a session re-reads the record.
func (m *Machine) check() time.Duration {
	if m.cfg.Check > 0 {
		return m.cfg.Check
	}
	return m.cfg.Poll
}

func (m *Machine) acquire(now time.Time, cur store.Record) []Action {
	if err := checkToken(&cur); err != nil {
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
	case !cur.Free() && !m.mine(&cur):
		kind = store.TakenOver
	}
	if store.IsSession(m.cfg.Name) {
		kind = "" // session records keep no election log
	}
	return m.send(now, opAcquire, store.Swap{Expect: cur.Version, Record: next, Event: kind})
}

func (m *Machine) contenderRead(now time.Time, r *GetReply) []Action {
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
func (m *Machine) contenderReply(now time.Time, r *GetReply) []Action {
	switch {
	case r.Err == nil: // most replies: on to the record
	case errors.Is(r.Err, store.ErrNotFound):
		if m.deferTake(now, &store.Record{}) {
			return nil
		}
		return m.acquire(now, store.Record{})
	case store.Permanent(r.Err):
		return m.fail(r.Err)
	default:
		if m.sess != nil && !m.sess.alive {
			m.waitOwn = true // as in start: retry when the session is back
			return nil
		}
		m.readAt = now.Add(m.cfg.Poll)
		return nil
	}
	rec := &r.Record // read only: a record is large to copy
	if !m.hasSeen || rec.Version != m.seen.Version {
		m.seen, m.takeAt, m.hasSeen = *rec, now.Add(m.cfg.wait(rec.Lease)), true
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
		return m.adoptTerm(now, *rec)
	case m.mine(rec):
		// Ours from an earlier term of this instance, which has ended: take
		// it again under a new token, never the old one.
		return m.acquire(now, *rec)
	case rec.Free() && rec.Token == m.yieldToken && now.Before(m.yieldUntil):
		m.readAt = m.yieldUntil // resigned on request: the others go first
		return nil
	case rec.Free() && (rec.Transfer == "" || rec.Transfer == store.AnyNode || rec.Transfer == m.cfg.Node):
		if rec.Transfer != m.cfg.Node && m.deferTake(now, rec) {
			return nil // a better candidate goes first (prefer.go)
		}
		return m.acquire(now, *rec)
	case !rec.Free() && (rec.Session == "" || m.cfg.Mutate.SessionNameExpiry) && !m.cfg.Mutate.WrapDeadline && !leaseInBounds(rec.Lease):
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
		return m.awaitSession()
	}
	due := m.takeAt // m.expired's instant, m.hasSeen set
	if m.cfg.Mutate.NoTakeover && !rec.Free() {
		m.readAt = now.Add(m.cfg.Poll) // never taken over: read again
		return nil
	}
	if !now.Before(due) {
		if m.deferTake(now, rec) {
			return nil // a better candidate goes first (prefer.go)
		}
		return m.acquire(now, *rec)
	}
	// The next poll, or the takeover if sooner: earliest(next, due),
	// written out on the path most reads take.
	next := now.Add(m.cfg.Poll)
	if next.IsZero() || (!due.IsZero() && due.Before(next)) {
		next = due
	}
	m.readAt = next
	return nil
}

// awaitSession reports that the contender awaits the session m.awaiting
// (Await).
func (m *Machine) awaitSession() []Action {
	if m.await == nil || m.await.(Await).Session != m.awaiting {
		m.await = Await{Name: m.cfg.Name, Session: m.awaiting}
	}
	if m.awaits == nil {
		m.awaits = make([]Action, 1)
	}
	m.awaits[0] = m.await
	return m.awaits[:1:1]
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
	m.setTimes(m.sess.deadline, now.Add(m.cfg.Renew))
	m.recheck = false
	m.termBegan(now)
	if !now.Before(m.deadline) {
		m.phase = releasing // born dead, as a take whose reply came late
		return m.release(now, m.rec)
	}
	return []Action{Elected{Name: m.cfg.Name, Token: m.token, Deadline: m.deadline, Record: m.rec}}
}

func (m *Machine) acquireReply(now time.Time, r *SwapReply) []Action {
	if r.Err == nil && m.phase == contending {
		m.phase, m.rec, m.token = leading, r.Record, r.Record.Token
		deadline := m.sentAt.Add(m.cfg.Lease)
		if m.sess != nil {
			// Valid as long as the session it was taken through; if
			// that session ended while the swap was out, the term is
			// born dead.
			deadline = m.sess.deadline
			if !m.sess.alive || m.sess.name != r.Record.Session {
				deadline = now
			}
		}
		m.setTimes(deadline, m.sentAt.Add(m.cfg.Renew))
		m.recheck = false
		m.termBegan(now)
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
		m.phase, m.rec, m.token = releasing, r.Record, r.Record.Token
		deadline := m.sentAt.Add(m.cfg.Lease)
		if m.sess != nil {
			deadline = m.sess.deadline
		}
		m.setTimes(deadline, m.renewAt)
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
