// Package postgres is a store.Store on PostgreSQL: the election record, the
// election log and the run ledger of baton in a schema of one database.
//
// Open it with a URL:
//
//	s, err := postgres.Open(ctx, "postgres://baton@db.example:5432/app?schema=baton")
//
// The schema (default "baton") is created on first use, in a transaction
// under an advisory lock so that processes opening a new store at the same
// time do not race, and its version is recorded; a schema written by
// another version is refused with store.ErrSchema and left untouched.
//
// # What it guarantees
//
// Every method is linearizable, as package store requires, because every
// read and write goes to one primary server and every compare-and-swap
// takes the row lock of the record it changes (READ COMMITTED with SELECT
// ... FOR UPDATE re-reads the newest committed row). A record swap is one
// statement and one round trip: a PL/pgSQL function created with the
// schema compares the version, refuses what storedriver.CheckSwap refuses
// (a token that would go back, a dead session held again), writes the
// record (its session included), appends the election log event and sends
// a notification, all in one transaction. A fenced run write takes a share
// lock on the job's election record in the same transaction, so that no
// takeover can commit between the token check and the write. Versions come from a sequence and
// are never reused. Store times (Record.Updated, Event.Time, Job.Created)
// are the server's clock_timestamp(), for people only; run times keep
// microseconds (PostgreSQL's precision) and a zero time reads back as zero.
//
// Errors from the server that mean it cannot be reached or cannot decide
// now (a lost or refused connection, an ended ctx, a server shutting down
// or starting, a terminated session, a serialization failure, a read-only
// standby) wrap store.ErrUnavailable: whether a write that failed this way
// was applied is unknown. A closed Store's calls fail the same way.
//
// # Schema versions
//
// Version 3 added the session a record is held through
// (store.Record.Session) and the change feed's column; version 4 a job's
// suspension (store.Job.Suspension: an older baton would claim the
// periods of a suspended job); version 5 replaced the record functions
// (swap_many's one-statement path for a bulk takeover, same outcomes) and
// version 6 again (that path without a row lock before its UPDATE, same
// outcomes), each keeping the store's id: a process of the previous
// release that opened the store before goes on. Version 7 added
// successions (store.Succeeder; see below). A writable Open of an older
// store upgrades it in place, in one transaction (no record, log event,
// job or run is lost); an upgrade from version 1, 2, 3 or 6 gives the
// store a new id, so that processes of an older baton that opened it
// before fail their next write with store.ErrReplaced and stop, and an
// older baton's Open refuses the store (it knows only the versions up to
// its own): an older baton would read a name held through a live session
// as a record nobody renews and take it over, claim the periods of a
// suspended job, or take a name a succession passed on at its stored
// token + 1, a token already handed to the successor.
// Upgrade every process of a deployment together. A read-only Open reads a
// version 1 or 2 store as it is (records without sessions; WatchChanges
// closed at once, so callers poll).
//
// # Many names
//
// A process holding many names through a session renews one record per
// renew interval, whatever the number of names. The store implements
// SwapMany with one statement per batch (one call of a function that
// applies each swap in turn, independently, and notifies once for the
// batch), GetMany with one name = ANY query, and WatchChanges with a
// change feed: every record write but a renewal stores the id
// of its transaction in the record's row and sends one notification per
// transaction, without a payload; the Store's one listening connection
// then reads which records were written since its last read from that
// indexed column and the snapshot of the read (see WatchChanges). A
// renewal writes only the record's version and updated columns; a name's
// is not on the feed, and a session's sends a notification whose payload
// names the record and its version, which the listener reports without
// a read. A notification costs a
// commit-time lock that serializes notifying transactions server-wide,
// so the fewer transactions notify the better: batches notify once, a
// session renews once per process per renew interval, and a refused swap
// does not notify.
//
// # Successions
//
// The store keeps successions (store.Succeeder, docs/succession.md): a
// dead session record names its successor, and every record held through
// it reads as held through the successor (store.Resolve), without a write
// of its own. Reads resolve in Go, in the read's snapshot: the records and
// the session records they name in one statement, and only when a
// succession passed a record on, the chain's next session records, a
// query a hop, in a REPEATABLE READ transaction. Writes settle: the fast
// statements (renewals, swap_one, swap_many) refuse, writing nothing, a
// write whose record names a session passed on, and Go then decides it in
// one transaction: the record is rewritten as it reads (its version the
// resolved one, the succession's log events appended), then compared
// with storedriver.CheckSuccessionSwap. A write of a name held through a
// session takes that session's row FOR KEY SHARE, and the succession
// write takes it FOR UPDATE, so that the later of the two draws its
// version after the earlier committed (versions come from a sequence,
// not in commit order); a session's renewal takes neither. HeldThrough and
// Settle read a partial index of the records held through each session;
// DeleteSession keeps a dead session with a successor while a record
// points at it. A row with a successor that baton never writes is refused
// by the election table's checks (triggers, which a renewal does not
// fire), and read as store.ErrCorrupt.
//
// # What it does not guarantee: replicas and failover
//
// The guarantees hold for one primary. PostgreSQL replication is
// asynchronous by default: a standby promoted after the primary failed may
// lack the newest commits, such as the record swap that made a node leader
// or raised its token. After such a failover the store has gone back in
// time: a second node can win the same record while the first still
// believes it leads (two leaders), and the same token can be issued twice,
// so that fencing can no longer tell them apart. Do not fail over to an
// asynchronous replica. Run a single primary, or make every commit wait
// for a standby: synchronous_commit = on (or remote_apply) with
// synchronous_standby_names naming the standbys, ideally as a quorum
// (ANY n (...)), and promote only a standby that acknowledged. A
// connection to a read-only standby fails with store.ErrUnavailable.
//
// It needs PostgreSQL 13 or later (gen_random_uuid, pg_current_xact_id). Every store has an id
// (meta.store_id, a random UUID made with the schema). A swap runs only if the schema still holds the id its handle
// opened, in the same statement; a dropped schema, or one dropped and
// created afresh, fails with store.ErrReplaced and receives no write.
// Data the server reports corrupt (XX001, XX002) is store.ErrCorrupt. The
// store implements store.TimeSource with the server's clock_timestamp().
// No error quotes the URL's password; keep it off the command line with
// $PGPASSWORD or ~/.pgpass (read by pgx when the URL has none). A
// repeated URL parameter is refused.
//
// Like every store, this one only decides who believes it leads. Election
// without fencing cannot stop a leader that pauses after checking its term
// and acts later; see package fence and fence/pgfence.
package postgres
