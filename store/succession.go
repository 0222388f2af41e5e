package store

import (
	"context"
	"fmt"
)

// MaxSuccession is the most sessions a resolution passes (Resolve). No
// store that follows the rules can hold a longer chain in practice (a
// successor is held when it is named, and the holder rewrites the names it
// was passed on); a longer one, or a cycle, is a corrupt or hostile store,
// refused rather than followed.
const MaxSuccession = 64

// Resolve returns the record that rec, an election record as stored,
// stands for, given session, which returns the stored session record of a
// name (ok false when there is none): only the dead ones along the chain
// are asked for. It is the one rule of a succession,
// which every store that has them (Succeeder) applies inside the atomic
// step of every read and write of an election record:
//
// While the session record that the record points at (Record.Session) is
// dead (free) and names a Successor, the record is held through that
// successor instead: Session becomes the successor, Holder and
// Incarnation the successor's when it was named (SuccessorHolder,
// SuccessorIncarnation), the token rises by one, Version becomes the
// larger of itself and the version of the write that ended the session
// passed, and Updated the later of the two times. Via is set to the
// last session passed: the one whose succession gave the record to
// Session (in a chain of two or more, not the session rec points at).
// A record not held through a session, or through one without a
// successor, is returned as it is.
//
// The version rule makes a succession change the version of every name it
// passes on: a swap prepared from a read made before it conflicts. That
// needs versions that increase in the order the writes commit.
//
// passed, if not nil, is called after each session passed, with the
// record so far and the dead session record passed: what a store needs to
// write (or show) the log events of a succession. A chain longer than
// MaxSuccession, or a token that would pass MaxToken, is an error wrapping
// ErrInvalid.
func Resolve(rec Record, session func(name string) (Record, bool), passed func(now, dead Record)) (Record, error) {
	if rec.Session == "" || rec.Free() {
		return rec, nil
	}
	out := rec
	for hops := 0; ; hops++ {
		dead, ok := session(out.Session)
		if !ok || !dead.Free() || dead.Successor == "" {
			return out, nil
		}
		if hops == MaxSuccession {
			return Record{}, fmt.Errorf("%w: election %q passes more than %d sessions by succession (a cycle or a corrupt store)", ErrInvalid, rec.Name, MaxSuccession)
		}
		if out.Token >= MaxToken {
			return Record{}, fmt.Errorf("%w: %w: election %q is at token %d and has no next term", ErrInvalid, ErrTokenLimit, rec.Name, out.Token)
		}
		out.Via = out.Session
		out.Token++
		out.Version = max(out.Version, dead.Version)
		if dead.Updated.After(out.Updated) {
			out.Updated = dead.Updated
		}
		out.Session, out.Holder, out.Incarnation = dead.Successor, dead.SuccessorHolder, dead.SuccessorIncarnation
		if passed != nil {
			passed(out, dead)
		}
	}
}

// Succeeder is an optional capability (CapSuccession): a store that keeps successions.
// Such a store resolves every election record it returns or compares
// (Resolve), accepts a session record's Successor in the swap that ends
// it, appends a succession's log events at the first write of each name it
// passed on (History shows them before that, with the sequence numbers
// they will be stored under), fences ledger writes with the resolved
// token, and does not delete a dead session with a successor while a
// record still points at it. A store without it refuses a Successor.
type Succeeder interface {
	// HeldThrough returns up to limit election records, resolved, whose
	// resolution passes the session record session: the stored record
	// points at session, or at a dead session whose chain of successors
	// reaches session (one that ended, by succession, before session did,
	// and whose names were not settled yet). Names after after, in byte
	// order of the name. It is the names a successor was passed on, in a
	// few reads, when it succeeds session: those that came through a
	// chain included.
	HeldThrough(ctx context.Context, session, after string, limit int) ([]Record, error)

	// Settle rewrites up to limit election records whose stored record
	// points at session, a dead session record with a Successor, in their
	// resolved form (Resolve, with Via empty), and appends each one's
	// succession events to its log, in one atomic step per record at
	// least, and returns how many it rewrote (limit <= 0: no limit).
	// Nothing a reader acts on changes: every resolved record is the same
	// before and after, its Version included, but for Via (empty once the
	// stored record names the successor itself), and so is every History;
	// so it needs no compare, a write prepared before it still applies,
	// and any process may call it. A session record that is missing, held, or dead
	// without a successor has nothing to settle (0, nil). Once the names
	// pointing at a dead session are settled, and no other dead session
	// names it as its successor, DeleteSession may delete it: this is how
	// chains of successions stay short (the collector settles, then
	// deletes), never approaching MaxSuccession.
	Settle(ctx context.Context, session string, limit int) (int, error)
}

// SuccessionDetail is the Detail of the log event that a succession
// writes for each name it passed on ("succession of SESSION").
func SuccessionDetail(dead string) string { return "succession of " + dead }
