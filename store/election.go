package store

import (
	"strings"
	"time"
)

// Record is the election record of one name.
type Record struct {
	// Name is the responsibility this record elects a leader for.
	Name string
	// Holder is the node id of the current leader; empty when free.
	Holder string
	// Incarnation identifies the holder's process instance. A restarted
	// process has a new incarnation and never inherits the old one's lease.
	Incarnation string
	// Token is the fencing token: raised by one on every acquisition, never
	// on renewal, never lowered.
	Token uint64
	// Lease is the lease duration the holder promised to honour. Contenders
	// wait Lease plus their clock margin on their own clock before taking
	// over an unchanged record.
	Lease time.Duration
	// Session, when not empty, says the record is held through a session:
	// it names the session record (see SessionPrefix) that the holder
	// renews once for all the names it holds. The holder's liveness is
	// then that record's, not this one's: the holder never renews this
	// record, and a contender waits for the session record, not this one,
	// to stay unchanged for its lease plus the clock margin. Empty: the
	// holder renews this record itself.
	Session string
	// Transfer, when not empty, asks the holder to stop work and release
	// the record to the node with that id; AnyNode asks it to release to
	// whoever comes first. On a free record it names the node that may take
	// it at once; other nodes wait out the lease first.
	Transfer string
	// Successor, on a dead (free) session record, names the session
	// record of the process that took over every name held through this
	// one, in the write that ended it (a succession; see Resolve). It is
	// written only in that write and never changes afterwards. Empty on
	// every other record.
	Successor string
	// SuccessorHolder and SuccessorIncarnation, on a dead session record
	// with a Successor, are the successor's Holder and Incarnation when it
	// was named: who the names passed on are held by (the successor's own
	// record has none once it ends too). A store sets them from the
	// successor's record in the write that names it; a Swap's are ignored.
	SuccessorHolder      string
	SuccessorIncarnation string
	// Via, on a record as a store returns it, names the dead session
	// whose succession passed the record on to Session (Resolve): the
	// last one passed when the stored record points at a chain of them.
	// Empty when the stored record names Session itself. Stores ignore
	// it in a Swap.
	Via string
	// Version changes on every write; it is what Swap compares.
	// 0 means "does not exist". On a record passed on by a succession it
	// is the resolved version (Resolve).
	Version int64
	// Updated is the store's time of the last write, for people to read.
	// No decision may compare it with a local clock.
	Updated time.Time
}

// SessionPrefix begins the name of every session record: the record a
// process renews once per renew interval for all the names it holds through
// it (Record.Session). A session record's Holder and Incarnation are the
// process's, its Lease the lease it promised, its Token 0. A free session
// record is a dead session: it never becomes held again (every backend
// refuses that swap), so that a name pointing at a dead or missing session
// may be taken at once. Election names must not begin with it.
const SessionPrefix = "@session/"

// IsSession reports whether name is a session record's name.
func IsSession(name string) bool { return strings.HasPrefix(name, SessionPrefix) }

// AnyNode as Record.Transfer asks the holder to release to whoever takes the
// record first: an operator's resign request.
const AnyNode = "*"

// Free reports whether nobody holds the record.
func (r *Record) Free() bool { return r.Holder == "" }

// Swap is one compare-and-swap of an election record.
type Swap struct {
	// Expect is the version the record must have; 0 means it must not exist.
	Expect int64
	// Record holds the new values. Its Version and Updated are ignored.
	Record Record
	// Event, when not empty, is appended to the election log atomically with
	// the change. Renewals leave it empty.
	Event EventKind
}

// EventKind names a change of holder in the election log.
type EventKind string

// The election log's event kinds.
const (
	// Acquired: a node took a free record.
	Acquired EventKind = "acquired"
	// Released: the holder gave the record up (resigned or stepped down).
	Released EventKind = "released"
	// TakenOver: a node took a record whose holder stopped renewing for
	// longer than the lease plus the clock margin.
	TakenOver EventKind = "taken-over-after-expiry"
	// Transferred: the holder released the record to a named node.
	Transferred EventKind = "transferred"
	// TransferRequested: an operator asked the holder to hand over.
	TransferRequested EventKind = "transfer-requested"
	// FloorRaised: an operator raised the token (baton store floor), after
	// a restore, so that the next term's token is above any handed out
	// before.
	FloorRaised EventKind = "token-floor-raised"
	// Rescheduled: the job of this name got another schedule
	// (Store.UpdateJob); Detail says from what to what. The record's
	// holder and token are unchanged.
	Rescheduled EventKind = "rescheduled"
)

// Event is one entry of the election log.
type Event struct {
	// Seq orders events of one name; it starts at 1 and increases by one.
	Seq uint64
	// Name is the election name.
	Name string
	// Kind says what happened.
	Kind EventKind
	// Holder and Incarnation are the record's holder after the change
	// (empty after a release).
	Holder      string
	Incarnation string
	// Token is the record's token after the change.
	Token uint64
	// Transfer is the record's transfer target after the change.
	Transfer string
	// Time is the store's time of the write, for people to read.
	Time time.Time
	// Detail is more about the change, for people; empty for the
	// election's own events. A Rescheduled event has "FROM -> TO".
	Detail string
}

// Change is one entry of a change feed (Store.WatchChanges): the record
// of Name was written and then had Version.
type Change struct {
	Name    string
	Version int64
	// Through is set on the last entry of every batch of a feed that says
	// how far it has reported (OrderedFeed), 0 otherwise: every write made
	// after WatchChanges returned that committed before a write of version
	// at most Through drew its version has been named in this batch or an
	// earlier one of the feed (renewals aside); 0 on the last entry too
	// while the feed can say nothing yet.
	Through int64
}

// GetResult is the outcome of one read in a GetMany.
type GetResult struct {
	// Record is the stored record when Err is nil.
	Record Record
	// Err is nil or wraps ErrNotFound.
	Err error
}

// SwapResult is the outcome of one swap in a SwapMany.
type SwapResult struct {
	// Record is the stored record when Err is nil.
	Record Record
	// Err is nil, or wraps ErrConflict or ErrInvalid.
	Err error
}
