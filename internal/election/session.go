// A Group's session, top-down: one session record per Group (startSession,
// SessionName) is elected and renewed by a Machine like any name
// (campaign.go, renew.go); stepSession feeds it, and sessionActs turns its
// announcements into the names' terms: Elected wakes the names waiting for
// it, Extended moves every name's deadline at once, Lost ends every term
// held through it (Machine.sessionLost) without a write, and the session is
// given up when no name needs it (sessionUnneeded).

package election

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/store"
)

// SessionName is the name of the session record of seq-th session of the
// process instance (node, incarnation).
func SessionName(node, incarnation string, seq int) string {
	return fmt.Sprintf("%s%s/%s/%d", store.SessionPrefix, node, incarnation, seq)
}

// SharedSessionName is SessionName for a balanced Group of weight share
// (Config.Share): a share other than 1 is written after the sequence
// number, "/w" and the number, so that every record held through the
// session tells its readers the holder's weight (SessionShare) without a
// field of its own. A share of 1 (or 0) gives SessionName's name.
func SharedSessionName(node, incarnation string, seq, share int) string {
	name := SessionName(node, incarnation, seq)
	if share > 1 {
		name += "/w" + strconv.Itoa(share)
	}
	return name
}

// SessionShare is the weight a session record's name carries
// (SharedSessionName): 1 for a name without one, and for one whose
// weight does not parse as 1 to MaxWeight (a record the reader cannot
// trust weighs as much as one without a weight).
func SessionShare(session string) int {
	i := strings.LastIndexByte(session, '/')
	if i < 0 || !strings.HasPrefix(session[i+1:], "w") {
		return 1
	}
	digits := session[i+2:]
	if digits == "" || len(digits) > 7 || strings.TrimLeft(digits, "0123456789") != "" || digits[0] == '0' {
		return 1
	}
	w, err := strconv.Atoi(digits)
	if err != nil || w < 1 || w > MaxWeight {
		return 1
	}
	return w
}

func (g *Group) startSession(now time.Time) []Action {
	g.seq++
	cfg := g.cfg
	cfg.Name = SharedSessionName(g.cfg.Node, g.cfg.Incarnation, g.seq, g.weight())
	g.sm = New(cfg)
	g.sm.session = true
	g.view = sessionView{name: cfg.Name, fed: g.view.fed} // the feed outlives a session
	return g.stepSession(now, Start{})
}

// stepSession steps the group's own session and turns its announcements
// into the names' terms.
func (g *Group) stepSession(now time.Time, ev Event) []Action {
	return g.sessionActs(now, g.sm.Step(now, ev))
}

// sessionActs handles the actions of a step of the group's own session.
func (g *Group) sessionActs(now time.Time, acts []Action) []Action {
	if plainSession(acts) {
		// Most steps of the session send or answer a renewal: the
		// session machine's own slice serves as it is (its extension
		// names every term held through it: Machine.session).
		for _, a := range acts {
			if x, ok := a.(Extended); ok {
				g.view.deadline = x.Deadline
			}
		}
		return acts
	}
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
				m := g.entry(name).m
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
				e := g.entry(name)
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
				e := g.entry(name)
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

// plainSession reports whether the session's actions are only reads,
// writes and extensions, which sessionActs passes on as they are (an
// extension renamed).
func plainSession(acts []Action) bool {
	for _, a := range acts {
		switch a.(type) {
		case Get, Swap, Extended:
		default:
			return false
		}
	}
	return true
}

// sessionUnneeded reports whether the session is alive and no name needs
// it any more: every step of the group then gives it up (Group.stepped).
func (g *Group) sessionUnneeded() bool {
	return g.sessions && g.sm != nil && g.view.alive && g.count[contending]+g.count[leading]+g.count[releasing] == 0
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
