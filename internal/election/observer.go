package election

import (
	"errors"
	"time"

	"github.com/batonhq/baton/store"
)

// observer follows another process's session record for the contenders
// that await it. It reads the record every Poll, or, while the store's
// change feed is live (Feed), when a change is reported and when the wait
// below ran out; a free or missing record is a dead session. When the record stayed at one version for its lease
// plus twice the clock margin on this node's clock, the session's holder
// has passed its own deadline (the same argument as a takeover of a name),
// and the observer writes the record free: the session is dead, and every
// name held through it may be taken, each with its own swap and a new
// token. A session renewed in the meantime makes that write conflict, and
// the wait starts again.
type observer struct {
	name     string
	get      Action   // Get{Name: name}, boxed once: it reads every poll
	gets     []Action // []Action{get}, made once (as Machine.read's)
	inflight op       // opRead or opRelease (the write that ends the session)
	seen     store.Record
	expiry   time.Time // when seen was first read, plus the wait (o.wait)
	hasSeen  bool
	readAt   time.Time
	dead     bool
	killed   bool   // this observer wrote it dead (it expired); else found dead
	heir     string // the successor named in the write that ends it ("" none)
	// final is the dead session record as the store returned it, from
	// the write that ended it or a read that found it dead (zero when it
	// was found missing): its Successor is the session it was passed on
	// to, and its succession's adoption is derived from it (passed.dead).
	final   store.Record
	corrupt error // the record's lease is outside the bounds: never judged
	feed    *bool // the Group's: the change feed is live (no polling)
	// A change notified while a read was out, which the read may predate:
	// the highest version notified, or unknown (a notification without
	// one). The reply is read again unless it is at least that version.
	notified int64
	unknown  bool
}

// sessionCorrupt tells a contender that the session it awaits has a record
// no valid Config writes (checkLease): its campaign ends with err.
type sessionCorrupt struct {
	session string
	err     error
}

func (sessionCorrupt) event() {}

// passed tells a contender that the session it awaits ended with a
// successor (store.Record.Successor): the name is held through that
// successor now, so it reads again. With adopt, the successor is its
// Group's session, and the read that shows it is the term (adopt).
//
// dead, when not nil, is the dead session's record as its succession
// left it, sent once the Group's feed reported that write (Synced): a
// contender whose last read the feed proves current takes its term from
// that read, without another (Machine.proven).
type passed struct {
	session string
	adopt   bool
	dead    *store.Record
}

func (passed) event() {}

func (o *observer) next() time.Time {
	if o.inflight != opNone || o.dead || o.corrupt != nil {
		return time.Time{}
	}
	return o.readAt
}

func (o *observer) read(now time.Time) []Action {
	o.inflight, o.readAt = opRead, time.Time{}
	if o.get == nil {
		o.get = Get{Name: o.name}
		o.gets = []Action{o.get}
	}
	o.gets[0] = o.get
	return o.gets[:1:1]
}

// expired reports whether the session record stayed at the version seen
// for the wait: the session is dead.
func (o *observer) expired(now time.Time) bool {
	return o.hasSeen && !now.Before(o.expiry)
}

// wait is how long the session record must stay unchanged before the
// session is dead: its lease plus twice the clock margin.
func (o *observer) wait(cfg *Config) time.Duration {
	if cfg.Mutate.NoSessionMargin {
		return o.seen.Lease // mutation: the simulator must catch it
	}
	return cfg.wait(o.seen.Lease)
}

// end writes the session dead, naming heir as its successor when heir is
// not empty (a succession: store.Resolve).
func (o *observer) end(now time.Time, heir string) []Action {
	o.inflight, o.readAt, o.heir = opRelease, time.Time{}, heir
	free := store.Record{Name: o.name, Token: o.seen.Token, Lease: o.seen.Lease, Successor: heir}
	return []Action{Swap{Swap: store.Swap{Expect: o.seen.Version, Record: free}}}
}

// tick reads the record (or ends the session when its wait ran out, heir
// its successor if not empty); the Group calls it when the read is due or
// soon (see Group.tick).
func (o *observer) tick(now time.Time, cfg *Config, heir string) []Action {
	if o.inflight != opNone || o.dead || o.corrupt != nil || o.readAt.IsZero() {
		return nil
	}
	if o.expired(now) {
		return o.end(now, heir)
	}
	return o.read(now)
}

// changed is a change notification of the session record, at version v
// (0: not known): read it now, unless v is the version observed.
func (o *observer) changed(now time.Time, v int64) []Action {
	if o.dead || (v != 0 && o.hasSeen && v == o.seen.Version) {
		return nil
	}
	if o.inflight == opRead {
		o.notified, o.unknown = max(o.notified, v), o.unknown || v == 0
		return nil
	}
	if o.inflight != opNone {
		return nil // the write that ends it: a conflict reads again
	}
	return o.read(now)
}

// getReply takes a read of the session record; heir is what tick's is.
func (o *observer) getReply(now time.Time, cfg *Config, r *GetReply, heir string) []Action {
	if o.inflight != opRead {
		return nil
	}
	o.inflight = opNone
	switch {
	case errors.Is(r.Err, store.ErrNotFound):
		o.dead = true
		return nil
	case r.Err != nil:
		o.readAt = now.Add(cfg.Poll)
		return nil
	case r.Record.Free():
		o.dead, o.final = true, r.Record
		return nil
	}
	if err := checkLease(&r.Record); err != nil && !cfg.Mutate.WrapDeadline {
		o.corrupt = err // no wait derived from it is safe
		return nil
	}
	if !o.hasSeen || r.Record.Version != o.seen.Version {
		o.seen, o.hasSeen = r.Record, true
		o.expiry = now.Add(o.wait(cfg))
	}
	again := o.unknown || o.notified > r.Record.Version
	o.notified, o.unknown = 0, false
	if again && cfg.Mutate.ReadBeforeExpiry {
		return o.read(now) // mutation: the simulator must catch it
	}
	due := o.expiry // o.expired's instant, o.hasSeen set
	if !now.Before(due) {
		// Whatever was notified meanwhile: the write that ends the
		// session compares with the version seen, so a renewal this
		// read missed makes it conflict, and that reads again. Reading
		// first would let notifications that come during every read
		// (anyone connected to a PostgreSQL store may send one) hold
		// the end off for ever.
		return o.end(now, heir)
	}
	if again {
		// A change was notified while the read was out and this answer
		// may predate it: read again rather than wait a whole lease.
		return o.read(now)
	}
	o.readAt = due
	if o.feed == nil || !*o.feed {
		o.readAt = earliest(now.Add(cfg.Poll), o.readAt)
	}
	// With the feed live, a renewal or release is reported (changed) and
	// read then: until the wait ran out, nothing else can change.
	return nil
}

func (o *observer) swapReply(now time.Time, cfg *Config, r *SwapReply) []Action {
	if o.inflight != opRelease {
		return nil
	}
	o.inflight = opNone
	switch {
	case r.Err == nil:
		o.dead, o.killed, o.final = true, true, r.Record
		return nil
	case errors.Is(r.Err, store.ErrConflict):
		return o.read(now) // renewed, or ended by someone else
	default:
		// Outcome unknown: read before deciding again.
		o.readAt = now.Add(cfg.Retry)
		return nil
	}
}
