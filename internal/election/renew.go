// The renewal, top-down. An Elector's term: its timer (Machine.tick,
// renewDue) sends the renewal, a compare-and-swap of the record at the
// version it holds; the reply (renewReply) extends the deadline from the
// instant the renewal was sent, ends the term on a conflict, or, when its
// outcome is unknown, re-reads the record first (recheckReply). A
// Group's names are renewed by this same path run on its session's record
// (session.go turns the session's Extended and Lost into its names'
// terms); a name held through the session is only re-read (checkReply),
// never written. Every end of a term goes through lose or loseStore.

package election

import (
	"errors"
	"time"

	"github.com/batonhq/baton/store"
)

// renewDue is a leader's timer: the term ends at its deadline, and a
// renewal is sent when one is due and nothing is in flight (a read first
// after a renewal of unknown outcome). A name held through a session
// renews nothing: the session's machine renews and keeps the deadline.
func (m *Machine) renewDue(now time.Time) []Action {
	if m.sess != nil {
		return nil
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

// recheckReply handles a leader's read after a renewal of unknown
// outcome: the renewal is sent again at the version read if the record is
// still its term's, and the term ends if it is not.
func (m *Machine) recheckReply(now time.Time, r *GetReply) []Action {
	switch {
	case store.Permanent(r.Err):
		return m.loseStore(r.Err)
	case r.Err != nil:
		m.setTimes(m.deadline, now.Add(m.cfg.Retry))
		return nil
	case m.mine(&r.Record) && r.Record.Token == m.token && r.Record.Transfer == "":
		m.rec, m.recheck = r.Record, false
		return m.send(now, opRenew, store.Swap{Expect: m.rec.Version, Record: m.rec})
	default:
		return m.lose(now, ErrDeposed)
	}
}

// checkReply handles a leader's re-read of a record it holds through a
// session. The holder never writes that record, so any other version means
// somebody else did: an operator's transfer or resign request, a
// reschedule, a raised token floor, or a new holder after the session was
// given up for dead. The term ends; the release follows if it is still
// ours.
func (m *Machine) checkReply(now time.Time, r *GetReply) []Action {
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
	case m.mine(&r.Record) && r.Record.Token == m.token && r.Record.Session == m.rec.Session:
		m.rec = r.Record
		return m.lose(now, ErrDeposed)
	default:
		m.recheck = true // not ours: the read in lose finds nothing to release
		return m.lose(now, ErrDeposed)
	}
}

func (m *Machine) renewReply(now time.Time, r *SwapReply) []Action {
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
		m.setTimes(m.sentAt.Add(m.cfg.Lease), m.sentAt.Add(m.cfg.Renew))
		// Nothing is in flight any more: a preference handover that
		// waited only for this renewal is due now (docs/prefer.md, rule
		// 5), not at the next candidacy read, which a runtime reading
		// them every renew interval would send as the next renewal goes.
		name := m.cfg.Name
		if m.session {
			name = "" // every term held through it
		}
		return append([]Action{Extended{Name: name, Deadline: m.deadline}}, m.preferDue(now)...)
	case errors.Is(r.Err, store.ErrConflict):
		m.recheck = true
		return m.lose(now, ErrDeposed)
	default:
		// Outcome unknown: read before the next attempt, which adopts the
		// record's version if the renewal went through. The deadline stays
		// where the last confirmed renewal put it.
		m.recheck = true
		m.setTimes(m.deadline, now.Add(m.cfg.Retry))
		return nil
	}
}
