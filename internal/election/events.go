package election

import (
	"time"

	"github.com/batonhq/baton/store"
)

// Event is an input to Step.
type Event interface{ event() }

// Start asks an idle machine to campaign. Name says for which name when
// the event goes to a Group; a Machine ignores it. With Hold the machine
// holds the name until it is told to stop (Resign with token 0): whenever
// a term ends and its release is done, it campaigns again by itself. Only
// a permanent store error (Failed, or a term lost with ErrStoreLost) ends
// a hold otherwise. This is the one place the rule lives: baton.Group's
// Hold, the Elector's Run and the simulator all start names this way.
type Start struct {
	Name string
	Hold bool
}

// Tick says a timer fired; the machine checks what is due.
type Tick struct{}

// Changed says the store notified a change of the record (a hint). Name
// says which record when the event goes to a Group; Version is the
// record's version after the change, 0 when the store did not say. A
// notification of a version the machine knows already (its own write, or
// the record it last read) needs no read.
type Changed struct {
	Name    string
	Version int64
}

// Check asks a leader that holds its name through a session to re-read its
// record: the holder never writes it, so this is how it learns of a
// transfer request or another change made by an operator. It asks a
// contender that awaits another process's session (Await) the same: that
// is how it sees a release that no change notification reported. A Group
// sends it for every held or awaited name about once per Config.Check, and
// to at most CheckRate names a second in all (its check sweep).
type Check struct{}

// SessionEnded tells a contender that the session Session is dead: a
// record held through it may be taken at once (Await).
type SessionEnded struct{ Session string }

// Feed tells a Group whether the store's change feed is live: Live when a
// feed (store.Store.WatchChanges) was opened, not Live when it closed. While
// it is live, every write of a record is reported by a Changed event, so
// an observer of another process's session reads the session record only
// when it changed and once its lease plus 2e ran out, not every Poll: the
// cost of watching a session is then one read per renewal. A Group starts
// without a feed (polling); when a feed opens again after one closed, the
// observers re-read at once, since a write between the two went
// unreported.
type Feed struct{ Live bool }

// Synced follows the Changed events of one batch of a feed that says how
// far it has reported (Config.OrderedFeed, store.OrderedFeed): every write
// that committed before a write of version up to Version drew its version
// (renewals aside) has been reported, in this batch or an earlier one of
// the live feed (Version is the batch's Change.Through). A Group that
// succeeded a dead session waits for it to reach the succession's own
// write before it takes the names passed on from the reads it made while
// it waited (a name notified of no change since its read is then known as
// it stands after the succession: docs/succession.md, "Adoption without a
// read").
type Synced struct{ Version int64 }

// Resign with Token 0 asks a contender to stop campaigning (and a leader to
// resign). Resign with a token asks the leader to resign only if it still
// leads under that token, so a late request never ends a newer term. Name
// says which name when the event goes to a Group ("" there: every name).
type Resign struct {
	Name  string
	Token uint64
}

// GetReply answers a Get action. Name is the Get's.
type GetReply struct {
	Name   string
	Record store.Record
	Err    error
}

// SwapReply answers a Swap action. Name is the swapped record's.
type SwapReply struct {
	Name   string
	Record store.Record
	Err    error
}

// ListReply answers a List action: up to ListPage records held through
// Session (store.Succeeder.HeldThrough, resolved), in name order, or Err.
// A page shorter than ListPage is the last.
type ListReply struct {
	Session string
	Records []store.Record
	Err     error
}

func (Start) event()        {}
func (Tick) event()         {}
func (Changed) event()      {}
func (Resign) event()       {}
func (Check) event()        {}
func (Feed) event()         {}
func (Synced) event()       {}
func (SessionEnded) event() {}
func (GetReply) event()     {}
func (SwapReply) event()    {}
func (ListReply) event()    {}

// Action is an output of Step. The runtime executes actions in order.
type Action interface{ action() }

// Get asks the runtime to read the record and feed back a GetReply.
type Get struct{ Name string }

// Swap asks the runtime to perform a compare-and-swap and feed back a
// SwapReply.
type Swap struct{ Swap store.Swap }

// Elected announces a new term of Name.
type Elected struct {
	Name     string
	Token    uint64
	Deadline time.Time
	Record   store.Record
}

// Extended announces that a renewal moved the term's deadline. From a
// Group, Name "" means every term held through the group's session.
type Extended struct {
	Name     string
	Deadline time.Time
}

// Lost announces the end of the term of Name. The runtime must stop the
// term's work when it executes this action; actions that follow (a
// release) are only ever emitted after it.
type Lost struct {
	Name  string
	Cause error
}

// Released says the machine's release of the record of Name was written
// (or given up, or not needed) and the machine is idle.
type Released struct {
	Name string
	Err  error
}

// Failed says the campaign for Name ended for good: the store answered a
// contender with a permanent error (store.Permanent). The machine is idle;
// a new Start tries again.
type Failed struct {
	Name string
	Err  error
}

// Await says the record of Name is held through another process's session
// Session: the contender waits until it hears that the session ended
// (SessionEnded), because the session record, not this one, tells whether
// the holder is alive. A Group watches the session for it.
type Await struct {
	Name    string
	Session string
}

// List asks the runtime for the records whose stored record points at
// the session record Session or at a dead session whose successors lead
// to it, names after After, at most ListPage of them
// (store.Succeeder.HeldThrough), and to feed back a ListReply. A Group
// asks for its own session's after a succession passed names on to it,
// for the names it does not campaign for.
type List struct{ Session, After string }

// ListPage is the most records a List asks for.
const ListPage = 1000

// Idle says the machine has nothing in flight and nothing to do until the
// next Start: the runtime may stop driving it.
type Idle struct{}

func (Get) action()      {}
func (Swap) action()     {}
func (Elected) action()  {}
func (Extended) action() {}
func (Lost) action()     {}
func (Released) action() {}
func (Idle) action()     {}
func (Failed) action()   {}
func (Await) action()    {}
func (List) action()     {}
