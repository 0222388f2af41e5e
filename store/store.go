// Package store defines the shared durable record that baton's election,
// fencing and run ledger live on, and the contract every backend meets.
//
// A Store is small on purpose: compare-and-swap on one versioned record per
// name, an append-only election log written in the same atomic step as the
// record change, and a run ledger whose writes can be fenced by the election
// record. Backends live in their own packages (memstore, sqlite, postgres,
// etcd) so that a program links only the driver it uses; storetest holds the
// conformance suite that every backend passes.
//
// What a Store guarantees: every method is linearizable with respect to the
// others on the same store (a read returns the latest acknowledged write),
// and a Swap or SwapRun either applies completely, log entry included, or not
// at all. What it does not do: it never reads a clock to decide anything.
// Store times (Record.Updated, Event.Time) are informational, for people.
//
// Store is the one interface every backend implements whole: record
// compare-and-swap, batched reads and swaps, the change feed, the run
// ledger, listing, session deletion and job suspension. A backend that
// has no batched form of a call (or no cheap count) may answer it with the
// fallbacks of package storedriver.
//
// Four behaviours are optional, because some stores cannot have them: an
// identity (Identifier), a clock of their own (TimeSource), a change feed
// that says how far it has reported (OrderedFeed) and successions
// (Succeeder). They are declared, not discovered: Store.Capabilities
// says which ones a store offers, and the library reaches each one only
// through the accessor that consults the declaration (IdentifierOf,
// TimeSourceOf, OrderedFeedOf, SucceederOf). The declaration was chosen
// over folding the four into Store with fallbacks because two of them
// cannot be faked (a fallback clock would be the node's own, which the
// clock guard must not trust; a fallback succession would drop a
// successor) and because a required method makes every wrapper say what
// it forwards: a wrapper that forwards Capabilities and implements the
// optional methods keeps every capability by construction, and one that
// forgets a method loses the capability in the open (storetest.Run fails,
// NewGroup logs it) instead of silently. What a store lacks costs this:
// without successions a Group takes a dead process's names over one at a
// time, each after its lease; without an ordered feed a succession's names
// are re-read instead of adopted from the feed; without a clock of its own
// the wall-clock guard uses a step detector; an identity is for tools
// (the library itself reads none; a backend detects a replaced store by
// it, inside its own methods).
package store

import (
	"context"
	"time"
)

// Store is the shared durable record. Implementations must be safe for
// concurrent use. Every method honours ctx: when ctx ends before the store
// answers, the method returns an error wrapping both ctx.Err() and
// ErrUnavailable, and the write may or may not have been applied.
type Store interface {
	// Get returns the election record for name, or ErrNotFound if no
	// process has ever written it.
	Get(ctx context.Context, name string) (Record, error)

	// Swap writes s.Record if the record's current version is s.Expect
	// (0: the record must not exist yet) and returns the record as stored,
	// with its new Version and Updated. If s.Event is not empty, an Event
	// for the new record is appended to the election log in the same atomic
	// write. On a version mismatch it returns ErrConflict and writes nothing.
	// A swap that would lower the token returns ErrInvalid.
	Swap(ctx context.Context, s Swap) (Record, error)

	// History returns up to limit election log events for name with
	// sequence numbers greater than after, oldest first. limit <= 0 means
	// no limit.
	History(ctx context.Context, name string, after uint64, limit int) ([]Event, error)

	// EnsureJob registers j if no job of that name exists and returns the
	// stored job either way; Created is set by the store on first
	// registration and never changes afterwards.
	EnsureJob(ctx context.Context, j Job) (Job, error)

	// GetJob returns the job registered under name, or ErrNotFound.
	GetJob(ctx context.Context, name string) (Job, error)

	// GetRun returns the ledger row of one period of a job, or ErrNotFound.
	// A row whose state is none of RunStates (no baton wrote it) is never
	// handed out: every read that meets it (GetRun, Runs, RecentRuns) and
	// every write over it returns the error of CheckRunState, which wraps
	// ErrCorrupt and names the row.
	GetRun(ctx context.Context, job, period string) (Run, error)

	// SwapRun writes s.Run if the row's current version is s.Expect (0: the
	// row must not exist yet), returning the row as stored. If s.Fenced is
	// true, the write is applied only if s.Run.Token equals the token of
	// the election record named s.Run.Job, checked in the same atomic step;
	// otherwise it returns an error wrapping ErrStaleToken and writes
	// nothing. On a version mismatch it returns ErrConflict. A write that
	// claims or skips a period (s.Run.State is Running: it starts an
	// attempt, a takeover included; or Skipped) of a job that is
	// suspended at that moment, read in the same atomic step, returns an
	// error wrapping ErrSuspended and writes nothing, so that no period
	// starts after SuspendJob returned. Other
	// writes land while the job is suspended: the outcome (Done, Failed)
	// of a run in progress, and Pending rows (manual triggers, backfill),
	// which wait for the resume. A run of a job that is not registered is
	// never suspended.
	SwapRun(ctx context.Context, s RunSwap) (Run, error)

	// Runs returns up to limit ledger rows of job whose period key is
	// greater than after (keys sort by time), in period order. limit <= 0
	// means no limit.
	Runs(ctx context.Context, job string, after string, limit int) ([]Run, error)

	// RecentRuns returns up to limit ledger rows of job whose period key is
	// less than before ("" means no bound), newest first. limit <= 0 means
	// no limit. Its cost grows with limit, not with the ledger's size.
	RecentRuns(ctx context.Context, job string, before string, limit int) ([]Run, error)

	// PruneRuns deletes up to p.Limit ledger rows of p.Job that are past
	// p's bounds (a key below p.Before, or not among the p.Keep newest rows)
	// and whose state is one of p.States, oldest first, and returns how
	// many it deleted. Its cost grows with p.Limit and p.Keep, not with the
	// ledger's size. It never deletes the job's
	// newest row that is not Manual: that row is where a leader's planning
	// resumes, so deleting it would make old periods due again. If
	// p.Fenced is true, it deletes only if p.Token equals the token of the
	// election record named p.Job, checked in the same atomic step;
	// otherwise it returns an error wrapping ErrStaleToken and
	// deletes nothing.
	PruneRuns(ctx context.Context, p Prune) (int, error)

	// UpdateJob replaces the schedule of job u.Name if it is u.Expect,
	// and returns the job as stored (Created does not change). If the
	// election record of that name exists, in the same atomic write it
	// appends a Rescheduled event (Detail "FROM -> TO") to the election log
	// and changes the record's Version (none of its values), so that a
	// leader still running the old schedule loses its next renewal. A
	// missing job is ErrNotFound; another schedule than u.Expect is
	// ErrConflict, and nothing is written.
	UpdateJob(ctx context.Context, u JobUpdate) (Job, error)

	// Heartbeat records that c.Node campaigns for c.Name: it creates or
	// refreshes the candidate row of (c.Name, c.Node) with Seen set to the
	// store's time, keeping Since unless the incarnation changed. With
	// c.Gone it deletes the row instead (the node stopped campaigning or
	// won). Candidate rows are for people and operator checks; the
	// election never reads them.
	Heartbeat(ctx context.Context, c Candidate) error

	// Candidates returns the candidate rows of name, by node id, with Age
	// measured by the store's clock at the read. Rows are returned however
	// old; Candidate.Stale says which ones to ignore.
	Candidates(ctx context.Context, name string) ([]Candidate, error)

	// GetMany returns one result per name, in order: the record, or an
	// error wrapping ErrNotFound for a name without one, so that a process
	// holding or contending for many names reads them in a few calls
	// instead of one call per name. err is non-nil only when the read as
	// a whole failed. Every result reflects one linearizable read of its
	// own record (the batch is not a snapshot).
	GetMany(ctx context.Context, names []string) (results []GetResult, err error)

	// SwapMany applies each swap independently (each one compares its own
	// version), in as few writes as the store can, so that a process
	// holding many names renews them all in one round trip per renew
	// period, and returns one result per swap, in order. err is non-nil
	// only when the write as a whole failed.
	SwapMany(ctx context.Context, swaps []Swap) (results []SwapResult, err error)

	// WatchChanges returns a channel that receives, in batches, the
	// election records (session records included) that were written,
	// soon after the writes, so that a process watching many names
	// follows one feed whose cost grows with the number of changes, not
	// with the number of names. Each entry names a record and a Version
	// it had after a write. While the channel is open, every write made
	// after the call is reported by an entry of its record with the
	// write's Version or a later one, so a reader that finds the version
	// it wrote itself has nothing to re-read; except a renewal of an
	// election record that is not a session's (a Swap without an event
	// that keeps every value of a held record and changes only its
	// Version and Updated: storedriver.Renews), which a store may leave
	// out (SQLite and PostgreSQL do, so that a renewal writes one row and
	// nothing else). Such a renewal changes nothing a watcher acts on: a
	// contender of the name times the lease from its own reads (it reads
	// again every poll interval), and takes over only by a Swap at the
	// version it read, which fails once the record was renewed, whether
	// or not the feed named the renewal. A session record's renewal
	// (storedriver.RenewsSession) is reported like any write, because a
	// session's observers read it on a reported change; SQLite and PostgreSQL write it as one row as well, and report
	// it by another means than the one their other writes use (SQLite's
	// poller reads the held session records' versions at every poll after
	// a commit, PostgreSQL's renewal notifies its new version; see their
	// WatchChanges). A name may come more than
	// once, and an entry may name a record that did not change since the
	// reader's last read. A store that can no longer tell (a missed
	// notification, a reconnect, a compacted history) closes the channel
	// instead, and the caller re-reads what it follows and may watch
	// again; callers keep polling as the fallback either way. The channel
	// is closed when ctx ends.
	WatchChanges(ctx context.Context) <-chan []Change

	// Names returns every name that has an election record or a
	// registered job, sorted, each once (session records are not names),
	// for tools that show every name at once. Electors and job runners
	// never need it.
	Names(ctx context.Context) ([]string, error)

	// NamesPage returns up to q.Limit names that have an election record
	// or a registered job (session records are not names, unless
	// q.Prefix begins with SessionPrefix: then it lists session records),
	// each once, that come after q.After and begin with q.Prefix, in the
	// store's order: byte order of the name in SQLite, PostgreSQL and
	// memstore, of the escaped key in etcd. A shorter page than q.Limit
	// is the last. Its cost grows with q.Limit, not with the number of
	// names.
	NamesPage(ctx context.Context, q NameQuery) ([]string, error)

	// CountHolders returns the election records (session records left
	// out) grouped by holder, incarnation and session, with the number of
	// each group silent at now, and the number of registered jobs that
	// have no election record, so that a summary of 100,000 names need
	// not return them. A store without a grouped query answers by paging
	// (storedriver.CountHolders).
	CountHolders(ctx context.Context, now time.Time) (groups []HolderCount, jobsWithoutRecord int, err error)

	// DeleteSession deletes the session record name if it is free (a dead
	// session) and its version is expect, in one atomic step, so that the
	// ones a process leaves behind at every restart or lost session do not
	// pile up. A held session record, or a name that is not a session
	// record's, is ErrInvalid; another version is ErrConflict; a missing
	// record is ErrNotFound. Nothing is deleted then.
	//
	// Deleting a dead session record loses nothing: a free session record
	// never becomes held again, a name that points at a dead or missing
	// session may be taken at once (with its own token + 1: tokens live in
	// the names' records, which are kept), and the election log is kept.
	DeleteSession(ctx context.Context, name string, expect int64) error

	// SuspendJob suspends or resumes job s.Name and returns the job as
	// stored; while a job is suspended no node claims a period of it. It
	// is a compare-and-swap on the job's suspension: suspending a
	// suspended job, or resuming one that is not, is ErrConflict, so of
	// two operators racing one wins. In the same atomic write, if the
	// election record of that name exists, it appends a Suspended or
	// Resumed event (Detail "by WHO: WHY") to the election log without
	// changing the record (its version included: the holder's term goes
	// on). A claim that SwapRun checks after SuspendJob returned is
	// refused (ErrSuspended); one that committed before, and its run,
	// go on. A missing job is ErrNotFound; By empty or By or Reason longer
	// than MaxReasonLen or not printable text (no control characters:
	// every view shows them as given) is ErrInvalid; nothing is written.
	SuspendJob(ctx context.Context, s JobSuspend) (Job, error)

	// PreferJob sets the preference policy and hysteresis of job p.Name
	// (Job.Prefer, Job.PreferHysteresis) and returns the job as stored.
	// In the same atomic write, if the election record of that name
	// exists, it appends a PreferChanged event (Detail "FROM -> TO", each
	// side PreferText) to the election log without changing the record
	// (its version included: the holder's term goes on). A missing job is
	// ErrNotFound; p.Prefer longer than MaxReasonLen or not printable, or
	// a negative p.Hysteresis, is ErrInvalid; nothing is written.
	PreferJob(ctx context.Context, p JobPrefer) (Job, error)

	// Capabilities declares the optional behaviours the store offers
	// (CapIdentity, CapStoreTime, CapOrderedFeed, CapSuccession), each
	// of which it implements by the matching interface. It is constant
	// for a handle. A store wrapping another returns what it forwards
	// (usually the inner store's Capabilities).
	Capabilities() Capabilities

	// Close releases the store's resources. It does not change any record.
	Close() error
}

// Identifier is an optional capability (CapIdentity): a store with an id made when the
// store was created (its file, schema or key prefix), changed afterwards
// only by an upgrade to a schema that older batons must not write (etcd,
// PostgreSQL), so that a process of an older version still running fails
// its next write instead of writing what it no longer understands. A handle remembers the id it opened and fails every later
// write (SQLite: every call) with an error wrapping ErrReplaced when the
// store it reaches has another id or is gone: a deleted or replaced file, a
// dropped and recreated schema, a restored backup of another store.
//
// A backup of this very store, restored, has this store's id: what the
// id cannot tell apart, the token floor must (see docs/production.md's backup
// and restore section: baton store floor).
type Identifier interface {
	// StoreID returns the id of the store this handle opened.
	StoreID() string
}

// TimeSource is an optional capability (CapStoreTime): a store that can read a clock of
// its own, on the server, which every node reads alike. It is the
// reference a wall-clock guard compares a node's clock with before the
// ledger trusts it (a leader whose clock runs ten minutes ahead must not
// claim or skip ten minutes of future periods).
//
// PostgreSQL implements it (clock_timestamp() on the server); the in-memory
// store too, with its store time (virtual in the simulator). SQLite (the
// store is on this very host, so its clock is the node's) and etcd (no
// server time in its API) do not: a guard there needs another reference.
//
// The time includes the round trip: it was read at some instant between
// the call and its return. Callers bound the difference with the call's
// duration measured on their monotonic clock.
type TimeSource interface {
	// StoreTime returns the store's current time.
	StoreTime(ctx context.Context) (time.Time, error)
}

// OrderedFeed is an optional capability (CapOrderedFeed): a store whose change feed
// (Store.WatchChanges) says how far it has reported, so that a batch tells
// what has not changed as well as what has. The last entry of every batch
// a feed hands out carries Change.Through (0 while the feed can say
// nothing yet), and every write that committed before some write of
// version at most Through drew its version, and
// after WatchChanges returned, has been named in that batch or an earlier
// one of the same feed, under its version or a later one (renewals aside:
// a Swap that changes only a held record's Version and Updated,
// storedriver.Renews, need not be named, see WatchChanges). Where
// versions rise in commit order (etcd's revisions, the in-memory store's
// counter, SQLite's store-wide counter) that is every write of version at
// most Through; PostgreSQL draws its versions from a sequence, whose
// order is not the commit order, and says it of the writes that committed
// before the draw (of the versions its reads found, never of one a
// notification names: anyone connected may send one).
//
// With a Succeeder, whose succession write draws its version after every
// write of the names it passes on that committed before it (ordered by
// version, or, on PostgreSQL, by the lock on the session record: see
// package postgres), a process that read such a name after the feed
// opened, and was told of no change of it since, knows the name as the
// succession left it once its feed's Through reaches the succession's
// version: a Group that succeeded a dead session takes the names it was
// passed on from the reads it made while it waited (docs/succession.md,
// "Adoption without a read").
type OrderedFeed interface {
	// FeedInOrder marks the capability; it reports true.
	FeedInOrder() bool
}
