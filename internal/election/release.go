// The release, top-down: a term ends (resign, or lose in renew.go), the
// record is freed with a fenced compare-and-swap (release, freed), and
// the reply or a re-read (releaseReply, releaseRead) finishes the release
// (finishRelease), which campaigns again if the name is still held for.

package election

import (
	"errors"
	"time"

	"github.com/batonhq/baton/store"
)

// giveUp reports whether a release that keeps failing may be given up:
// a lease after the term's deadline, when the record frees itself. A name
// held through a live session never frees itself, so its release is tried
// until it is written or the session ends (sessionLost).
func (m *Machine) giveUp(now time.Time) bool {
	return m.sess == nil && !now.Before(m.deadline.Add(m.rec.Lease))
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

// releaseRead handles a releasing machine's read of its record: the
// release is written at the version read if the record is still its
// term's, and is over if it is not (or given up a lease after the
// deadline).
func (m *Machine) releaseRead(now time.Time, r *GetReply) []Action {
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
	case r.Err == nil && m.mine(&r.Record) && r.Record.Token == m.token:
		m.recheck = false
		return m.release(now, r.Record)
	default:
		return m.finishRelease(now, nil) // not ours any more: nothing to release
	}
}

// releaseReply handles the reply to a release: done, or read again to see
// whose the record is after a conflict, or retried (given up a lease
// after the deadline) when its outcome is unknown.
func (m *Machine) releaseReply(now time.Time, r *SwapReply) []Action {
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
