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
// fallbacks of package storedriver. Only two abilities are optional, found
// by type assertion in the manner of database/sql/driver, because some
// stores cannot have them: an identity (Identifier) and a clock of their
// own (TimeSource).
package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors. Backends wrap them with %w and detail; callers test with
// errors.Is.
var (
	// ErrConflict is returned by a compare-and-swap whose expected version is
	// not the current one: somebody else wrote first. Nothing was written.
	ErrConflict = errors.New("conflict: the record changed since it was read")

	// ErrNotFound is returned when the named record, job or run does not
	// exist.
	ErrNotFound = errors.New("not found")

	// ErrUnavailable is returned when the store cannot be reached or cannot
	// decide (no quorum, connection lost, timed out). Whether a write that
	// failed this way was applied is unknown; callers re-read before relying
	// on either outcome.
	ErrUnavailable = errors.New("store unavailable")

	// ErrSchema is returned when a store's schema was written by an unknown
	// version of baton, or the file or database is not a baton store. The
	// store is left untouched.
	ErrSchema = errors.New("unsupported store schema")

	// ErrInvalid is returned for a request that can never succeed, such as an
	// empty name or a token that would go backwards. Nothing was written.
	ErrInvalid = errors.New("invalid request")

	// ErrReplaced is returned when the store a caller opened is gone or is
	// no longer the same store (a deleted or replaced SQLite file, a
	// restored backup with another identity). It never heals: a leader that
	// sees it ends its term at once, and nothing it writes afterwards may
	// count.
	ErrReplaced = errors.New("store replaced: it is no longer the store that was opened")

	// ErrCorrupt is returned when the store's data cannot be read or
	// trusted (a corrupt page, a foreign table, keys that are not baton's).
	// It never heals by retrying: callers end their term and stop, naming
	// the store and the problem.
	ErrCorrupt = errors.New("store corrupt or not baton's")

	// ErrTokenLimit is returned, wrapped together with ErrInvalid, by a
	// write whose fencing token is above MaxToken, or of a record whose
	// stored token is: the name's next term could get no token. Nothing
	// was written. It never heals (a token is never lowered): callers end
	// their term and stop; the name's work continues under another name.
	ErrTokenLimit = errors.New("fencing tokens used up")

	// ErrStaleToken is returned when work carries a fencing token lower
	// than the highest token the resource has already accepted for the
	// same name: by a fenced SwapRun or PruneRuns whose token is not the
	// election record's. Nothing of the rejected work is applied.
	// fence.ErrStaleToken is this error.
	ErrStaleToken = errors.New("stale fencing token: a newer leader has already written")
)

// MaxToken is the largest fencing token a baton store holds, on every
// backend: SQLite and PostgreSQL store tokens as signed 64-bit integers
// (etcd could hold more, but a token must move between backends, through
// a restore, and into a fenced SQL table's BIGINT). A name whose token is
// MaxToken has no next term; a token floor (baton.RaiseTokenFloor) is at
// most MaxToken-1 so that the next leader still gets one.
const MaxToken uint64 = math.MaxInt64

// Permanent reports whether err will not heal by retrying: ErrReplaced,
// ErrCorrupt, ErrSchema and ErrTokenLimit. Transient errors
// (ErrUnavailable, timeouts, busy) are worth retrying; permanent ones end
// a term and a process.
func Permanent(err error) bool {
	return errors.Is(err, ErrReplaced) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrSchema) || errors.Is(err, ErrTokenLimit)
}

// MaxNameLen is the longest election or job name, in bytes.
const MaxNameLen = 200

// CheckName returns an error wrapping ErrInvalid unless name can be an
// election or job name: not empty, at most MaxNameLen bytes of valid UTF-8,
// printable characters only (no control characters, no newlines), so that
// every output prints it as given. Every backend refuses writes of other
// names.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalid)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: name of %d bytes; at most %d", ErrInvalid, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: name %q is not valid UTF-8", ErrInvalid, name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w: name %q contains the unprintable character %U; use printable characters only", ErrInvalid, name, r)
		}
	}
	return nil
}

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
	GetRun(ctx context.Context, job, period string) (Run, error)

	// SwapRun writes s.Run if the row's current version is s.Expect (0: the
	// row must not exist yet), returning the row as stored. If s.Fenced is
	// true, the write is applied only if s.Run.Token equals the token of
	// the election record named s.Run.Job, checked in the same atomic step;
	// otherwise it returns an error wrapping ErrStaleToken and writes
	// nothing. On a version mismatch it returns ErrConflict.
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
	// it wrote itself has nothing to re-read. A name may come more than
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
	// on). A missing job is ErrNotFound; By empty or By or Reason longer
	// than MaxReasonLen or not printable text (no control characters:
	// every view shows them as given) is ErrInvalid; nothing is written.
	SuspendJob(ctx context.Context, s JobSuspend) (Job, error)

	// Close releases the store's resources. It does not change any record.
	Close() error
}

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
	// Version changes on every write; it is what Swap compares.
	// 0 means "does not exist".
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
func (r Record) Free() bool { return r.Holder == "" }

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

// Job is a scheduled job's registration in the store.
type Job struct {
	// Name is the job's name; its election record has the same name.
	Name string
	// Schedule describes the schedule, for people (e.g. "every 24h").
	Schedule string
	// Created is set by the store when the job is first registered. A job's
	// first period is the first scheduled instant after it.
	Created time.Time
	// Suspension is the job's suspension by an operator
	// (Store.SuspendJob); zero: not suspended. While it is active no
	// node claims a period of the job.
	Suspension Suspension
}

// RunState is the state of one period in the run ledger.
type RunState string

// Run states.
const (
	// Pending: due (or triggered by hand) and not started.
	Pending RunState = "pending"
	// Running: claimed by the leader with Token.
	Running RunState = "running"
	// Done: completed under Token. A done row never changes again.
	Done RunState = "done"
	// Failed: the command ran and failed under Token.
	Failed RunState = "failed"
	// Skipped: not run by policy (outside the catch-up window, or the
	// catch-up policy said so).
	Skipped RunState = "skipped"
)

// Final reports whether a run in this state is finished for good.
func (s RunState) Final() bool { return s == Done || s == Failed || s == Skipped }

// Run is one row of the run ledger: one period of one job.
type Run struct {
	// Job is the job's name.
	Job string
	// Period is the stable key of the scheduled instant: its RFC 3339 time
	// in UTC, the same on every node.
	Period string
	// Scheduled is the instant the period came due.
	Scheduled time.Time
	// State is the row's state.
	State RunState
	// Token is the fencing token of the attempt that claimed or finished it.
	Token uint64
	// Holder is the node that claimed it.
	Holder string
	// Attempt counts claims; a takeover of a running row adds one.
	Attempt int
	// Manual is true for a row written by a manual trigger.
	Manual bool
	// Started and Finished are the attempt's local start and end times.
	Started  time.Time
	Finished time.Time
	// ExitCode is the command's exit status (done or failed rows).
	ExitCode int
	// Output is the tail of the command's output.
	Output string
	// Version changes on every write; 0 means "does not exist".
	Version int64
}

// RunSwap is one compare-and-swap of a run ledger row.
type RunSwap struct {
	// Expect is the version the row must have; 0 means it must not exist.
	Expect int64
	// Run holds the new values. Its Version is ignored.
	Run Run
	// Fenced makes the write conditional on Run.Token being the current
	// token of the election record named Run.Job.
	Fenced bool
}

// Change is one entry of a change feed (Store.WatchChanges): the record
// of Name was written and then had Version.
type Change struct {
	Name    string
	Version int64
}

// GetResult is the outcome of one read in a GetMany.
type GetResult struct {
	// Record is the stored record when Err is nil.
	Record Record
	// Err is nil or wraps ErrNotFound.
	Err error
}

// Identifier is an optional capability: a store with an id made when the
// store was created (its file, schema or key prefix), changed afterwards
// only by an upgrade to a schema that older batons must not write (etcd,
// PostgreSQL), so that a process of an older version still running fails
// its next write instead of writing what it no longer understands. A handle remembers the id it opened and fails every later
// write (SQLite: every call) with an error wrapping ErrReplaced when the
// store it reaches has another id or is gone: a deleted or replaced file, a
// dropped and recreated schema, a restored backup of another store.
//
// A backup of this very store, restored, has this store's id: what the
// id cannot tell apart, the token floor must (see the README's backup and
// restore section: baton store floor).
type Identifier interface {
	// StoreID returns the id of the store this handle opened.
	StoreID() string
}

// TimeSource is an optional capability: a store that can read a clock of
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

// SwapResult is the outcome of one swap in a SwapMany.
type SwapResult struct {
	// Record is the stored record when Err is nil.
	Record Record
	// Err is nil, or wraps ErrConflict or ErrInvalid.
	Err error
}
