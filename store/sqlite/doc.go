// Package sqlite is baton's embedded default store: a store.Store on one
// SQLite file, through the pure-Go driver modernc.org/sqlite (no cgo).
//
// # What it guarantees
//
// Several processes on one host may open the same file, each with its own
// Store (or several). Every read-check-write (Swap, SwapMany, SwapRun,
// EnsureJob) runs in a BEGIN IMMEDIATE transaction, which takes the file's
// write lock before the first read, so compare-and-swap is linearizable
// across all of them: of two swaps expecting the same version, exactly one
// wins. A reader never waits for a writer (WAL journal mode) and sees every
// write acknowledged before it started.
//
// Durability: the file runs in WAL mode with synchronous=FULL, so a write is
// on stable storage (the WAL is fsynced) before Swap returns. A fencing
// token that was handed out therefore survives a power loss; with
// synchronous=NORMAL the last acknowledged writes could roll back after one,
// and a new leader could be handed the same token twice. FULL costs one
// fsync per write, which a lease renewal every few seconds affords.
//
// A Store keeps at most DefaultMaxConns connections to the file
// (WithMaxConns) and runs its own writes one at a time: SQLite has one
// writer per file, so N writers of one process would only take turns
// through the busy handler's sleeps; they queue in the Store instead, and
// reads go on beside the writer (WAL). A single swap (Swap: a lease or
// session renewal) goes ahead of the queued writes that are not one, so
// a renewal waits for at most the write in progress, not for every
// batched write (SwapMany) queued before it. With a pool of 3 or more, the
// writes run on one connection kept for them, with a page cache of up to
// 64 MiB (SQLite drops a connection's cache whenever another one has
// committed, so a writer that changes connections reads the file again),
// statement journals in memory and a checkpoint every 16,384 WAL pages
// (64 MiB; the WAL file is cut back to 64 MiB after). A connection that
// finds the file locked by another process waits up to the busy timeout
// (WithBusyTimeout, DefaultBusyTimeout) and then fails with an error
// wrapping store.ErrUnavailable. Every call with a ctx that has ended fails
// with an error wrapping both store.ErrUnavailable and ctx.Err(). Open of
// a path that cannot be a store (a directory that does not exist, a file
// where a directory should be, no permission, a read-only file system)
// fails with an error wrapping store.ErrInvalid, not
// store.ErrUnavailable: waiting will not make it.
//
// # Schema and foreign files
//
// Open creates the tables on first use (baton_meta, baton_election,
// baton_election_log, baton_candidates, baton_jobs, baton_runs) and records
// SchemaVersion in baton_meta. A writer's Open upgrades a store of an older
// version in place, in one transaction; a read-only Open reads it as it is
// and writes nothing. An older baton refuses to open an upgraded store, but
// one that had it open before the upgrade does not notice it: it ignores
// Record.Session and would take over a name held through a live session
// once the name's own record looked expired. Stop every older baton on a
// store before a newer one opens it. It refuses, with store.ErrSchema and without writing a byte,
// a file that is not an SQLite database and a file whose schema version it
// does not know; the error names the file, both versions and the fix. It
// refuses the same way an SQLite database that holds a schema (tables,
// indexes, views, triggers) but no baton tables: an application's own
// database is never changed, not even switched to WAL mode ("not a baton
// store; baton left it untouched", the read-only Open's message). A new
// path, an empty file and an SQLite database with no schema at all become
// a new store.
//
// Versions come from one store-wide counter in baton_meta, so a version is
// never reused for a name, even after its record is recreated. Every write
// but a renewal raises the counter; a renewal (storedriver.Renews, or
// RenewsSession of a session record) writes only its record's row, with
// the next version above the record's own and the counter. A name's
// renewal is not on the change feed; a session's is, found by the poller
// in the session records' versions (see renewStmt, sessionsStmt). Each
// election record also keeps the sequence number of its name's newest log
// event (log_seq, schema 6): a write of a log event takes the next one and
// raises it in the same transaction, without reading the log. Times are
// stored as integer Unix nanoseconds and read back in UTC; the zero
// time.Time is stored as NULL. Tokens are uint64 in Go and signed 64-bit
// integers in SQLite: tokens up to MaxToken (2^63-1, store.MaxToken)
// round-trip, a larger one is refused with store.ErrInvalid and
// store.ErrTokenLimit. A write that a constraint refuses (one baton did
// not make, such as a trigger another program added) is store.ErrCorrupt:
// it never heals by retrying.
//
// # Successions
//
// Store implements store.Succeeder (schema 7; docs/succession.md): a
// session record ended with a Successor keeps it, with the successor's
// holder and incarnation, in its own row (successor, successor_holder,
// successor_incarnation), and an index on the election record's session
// column serves HeldThrough, Settle and DeleteSession's check. Nothing
// else is written at a succession: every read (Get, GetMany, HeldThrough,
// History, CountHolders) reads its rows and then, in the same read
// transaction, the session records they point at, one query a hop, and
// returns them resolved (store.Resolve); History shows a succession's log
// events before they are stored, under the sequence numbers the name's
// next write stores them under. Every write of a name settles it first,
// in its transaction (the name is rewritten resolved, at its resolved
// version, with the succession's log events), and compares Expect with
// the resolved version; the fast paths (a renewal's one UPDATE, a batch
// of takes' one UPDATE) leave a name a succession passed on to the
// general path, and cost a name no succession passed on one probe of its
// session's row. Fenced ledger writes compare the resolved token. A row
// whose successor columns baton does not write (a successor on a held
// record or on a name) is store.ErrCorrupt; a cycle of successions or a
// chain longer than store.MaxSuccession is store.ErrInvalid. A baton of
// version 6 that still has the store open when it is upgraded fails its
// next write (the counter's key changed), rather than take a name passed
// on at its stored token + 1, a token already handed out.
//
// # Identity, damage and file modes
//
// Every store has an id (baton_meta.store_id, random, made at creation;
// StoreID), and its file a mark of it in the SQLite header's application
// id, written at Open (32 bits of the id). Every call checks that the path
// still names the file Open opened (device and inode) and that the file's
// own header still holds the mark (one pread of 100 bytes), and every
// write that the file still holds the same store id: a store deleted,
// moved, replaced or overwritten while open, a copy of another store
// written over it in place (cp other.db baton.db) among them, fails with
// store.ErrReplaced, so a leader on it steps down at its next renewal
// instead of leading alone on an unlinked file or on SQLite's cached
// pages of a store that is gone. Not caught: a copy of this same store (a
// backup of it restored in place: same id, same mark), a copy of another
// store whose id shares the mark's 32 bits, and, until SQLite first
// checkpoints the header into the file (Open asks at once), a copy of a
// store with no mark. Open runs SQLite's
// quick_check on an existing store and refuses a damaged one with
// store.ErrCorrupt; a corrupt page found later is store.ErrCorrupt too. A
// new store file is created mode 0600, and SQLite gives its -wal and -shm
// files the same mode.
//
// # Many names: watches, batches
//
// SQLite has no notification between processes. Store implements
// WatchChanges with a poll woken by the file's writes: one goroutine per
// Store reads PRAGMA data_version (which changes only when another
// connection commits) whenever the -wal file is written, by any process
// on this host (inotify, on Linux; a commit is seen within milliseconds),
// and, whatever happens, every second while those notifications come
// (the fallback for a commit published more than a second after its log
// write, which the notification's retries, 1, 2, 4, ... 512ms after it
// while a commit is under way, miss) and every 50ms while
// they cannot be had (all there is elsewhere and under testing/synctest's
// virtual clock, whose bubble a goroutine waiting on a file would never
// let idle), and when it changed
// runs one indexed query for the
// election records changed since the last counter value it saw (every
// write but a renewal gives its record the next value of a store-wide
// counter). A poll costs what the commits wrote, not what the
// store holds or how many names are watched; every WatchChanges feed of
// the Store rides on that one poll.
//
// Store implements SwapMany and GetMany in batches: SwapMany
// applies all swaps in one IMMEDIATE transaction, one fsync for all: one
// query reads the records and their newest log sequence numbers of up to
// GetManyChunk names, the swaps are decided in Go, and multi-row
// statements of up to 64 rows write the records and the log events, each
// prepared once per connection (those of 4 rows and more when a batch
// first needs one: prepared, they hold about 340 KB of SQLite's memory
// per connection, which a node that writes no batch does without);
// GetMany reads up to
// GetManyChunk names per query. A batch holds the file's write lock while
// it runs (tens of microseconds per swap), so that a caller with very
// many swaps sends them in batches of a few thousand, letting other
// writers in between. Session records (store.SessionPrefix) are stored
// like any record; Names leaves them out.
//
// # What it does not do
//
// It serves one host. Do not put the file on a network file system (NFS,
// SMB/CIFS, most FUSE and cloud-drive mounts): SQLite's locking relies on
// POSIX advisory locks and, in WAL mode, on shared memory, and those are
// broken or absent there, so two hosts could both win the same
// compare-and-swap and elect two leaders with the same token. For
// leadership across hosts use the postgres or etcd store.
//
// A process frozen inside a write transaction (SIGSTOP, a debugger) keeps
// the file's write lock: every other process's writes wait, and fail with
// store.ErrUnavailable after the busy timeout, until it resumes or dies (a
// killed process releases the lock at once). Leaders then cannot renew and
// step down at their deadlines; nobody acts until the lock is free. The
// postgres and etcd stores hold no lock between calls.
//
// Like every store, it decides who holds a lease; it cannot stop a paused
// former leader from acting late. Fenced run writes (store.RunSwap.Fenced)
// and the fence package do that.
package sqlite
