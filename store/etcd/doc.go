// Package etcd is the store.Store backend on an etcd v3 cluster: the store
// for baton deployments that must survive the loss of a machine.
//
// # What it guarantees
//
// Every write is a single etcd transaction that compares revisions, so a
// swap is applied completely (record and election log entry together) or
// not at all, and reads are linearizable (etcd's default). etcd commits a
// write only when a Raft majority of its members has it. The consequence
// for baton is the one the design relies on: on the minority side of a
// network partition, or when most members are down, no write commits. A
// baton leader there cannot renew; it keeps trying until its lease deadline
// and then steps down by itself, and no contender there can take over.
// Until a majority is reachable again nobody leads on that side and no job
// runs: degraded mode, by design. Errors from such a cluster (no leader,
// request timeouts, unreachable members, deadlines) are returned as
// store.ErrUnavailable, never as store.ErrConflict, so a caller never
// mistakes "cannot decide" for "somebody else won".
//
// Record.Version is the etcd ModRevision of the record's key: it changes on
// every write and is never reused. Record.Updated and the other store times
// are the writing client's clock, for people only.
//
// # What it does not guarantee
//
// etcd does not stop a paused process. A leader frozen (GC, SIGSTOP) after
// its Valid() check can wake past its deadline and act; only fencing stops
// that work (fenced SwapRun, or the resource's own token check). The store
// also does not bound a call by the lease: each call is bounded by its ctx
// and by the request timeout (WithRequestTimeout, default 5s), whichever
// ends first; a caller that must not outlive a deadline passes it in ctx.
// A write that fails with ErrUnavailable may still have been applied (as in
// any consensus store); callers re-read before relying on either outcome.
//
// # Layout
//
// All keys live under a prefix (default "/baton/"); names are path-escaped
// so that a name containing "/" cannot reach into another name's keys:
//
//	<prefix>schema                    schema version ("5")
//	<prefix>schema-upgrade            only between the two steps of an upgrade from "1" to "4"
//	<prefix>e/<name>                  election record (JSON), session records included
//	<prefix>l/<name>/<seq, 20 digits> election log events from seq on (JSON: one, or a list)
//	<prefix>j/<job>                   job registration (JSON)
//	<prefix>r/<job>/<period>          run ledger row (JSON)
//	<prefix>c/<name>/<node>           candidate row (JSON)
//	<prefix>x/<name>/<seq>/<n>        log events written without the record (Suspended, Resumed; JSON)
//	<prefix>d/<session>               only while DeleteSession of a dead session with a successor runs
//
// A prefix must end with "/". Open refuses a prefix that lies inside
// another baton store's (a schema key at an ancestor, such as
// "/baton/schema" for "/baton/r/x/") and one that holds keys but no schema
// key (keys that are not a baton store's). The store's identity is the
// cluster id and the revision that created its schema key: every write
// compares that revision in its transaction and every reply's cluster id
// is checked, so a handle on a prefix that was deleted or recreated, or on
// a cluster restored from a snapshot, fails with store.ErrReplaced and
// writes nothing. Values that do not decode are store.ErrCorrupt. A
// repeated URL parameter is refused.
//
// The election record's value carries the sequence number of its last log
// event and its newest events themselves, up to four: the transaction that
// changes the record logs the next event in the record it writes, and the
// one that would make it carry a fifth moves all five to one log key named
// after the first. The revision compare on the record guarantees no two
// writers use the same sequence number, and that a write carries exactly
// the events the record it replaces carried. A swap that logs an event is
// thus one key write most of the time, which is what makes a bulk takeover
// of many names fast on etcd: there the keys written count more than their
// bytes.
//
// # Schema versions
//
// Version 2 added the session a record is held through (store.Record.Session)
// to the record's value; version 3 the log events a record carries and log
// keys of several events; version 4 a job's suspension and the log events
// an operator's suspend or resume writes beside the record (x/: a write of
// the record would end its holder's term), which History merges into the
// log, numbered in order; version 5 successions (below). A writable Open
// of a version 1 to 4 store upgrades it in place (no record is rewritten:
// an older record has no session and carries no events, older log keys
// hold one event each, an older job is not suspended, and an older
// session names no successor)
// and gives its schema key a new create revision, so that processes of an
// older baton that opened it before fail their next write with
// store.ErrReplaced and stop, and an older baton's Open refuses the store:
// a version 1 baton would read a name held through a live session as a
// record nobody renews and take it over, a version 2 baton would drop
// the events a record carries when it rewrites it, and a version 3 baton
// would claim the periods of a suspended job, and a version 4 baton would
// take a name passed on by a succession with a token already handed out.
// Upgrade every process
// of a deployment together. A read-only Open reads an older store as it
// is.
//
// # Successions
//
// The store keeps successions (store.Succeeder; docs/succession.md). A
// dead session record's value carries its Successor, SuccessorHolder
// and SuccessorIncarnation, written in the one transaction that ends it,
// which compares the successor's key at the ModRevision read, so that the
// holder and incarnation copied are the successor's as held at that
// moment (storedriver.CheckSuccessionSwap refuses the rest).
//
// Reads return resolved records (store.Resolve, the one rule): after the
// name keys, one read of the distinct session keys they point at per hop
// of the chains, at the revision of the names' read (WithRev). The record
// and every session key its resolution used are then one snapshot of the
// store, which was current during the call: a batch of names held through
// one session costs one more key read. A resolved record's Version is the
// largest of its key's version and the ModRevisions of the dead session
// keys passed (revisions increase in commit order, as the rule needs).
// History adds the events of the successions passed, with the numbers the
// name's next write stores them under.
//
// Every transaction that writes a name or relies on its token (a swap, a
// fenced ledger write, UpdateJob, SuspendJob) compares the name's key and
// every session key its resolution read at the ModRevisions read (a
// missing key at 0): a succession, a renewal or a deletion of one of them
// between the read and the write fails it, and it is read and sent again
// (see guards); a write prepared from a read made before a succession thus
// conflicts. A swap compares Expect with the resolved version before it is
// sent. The first write of a name after a succession settles it: it
// appends the succession's events before its own. A batch compares a
// session key shared by its names once, so a bulk takeover's transactions
// still carry up to 127 names (the session key that was passed on, or
// the dead one, is one more compare).
//
// Settle must not change a version a reader sees, and on etcd a version is
// a ModRevision, which every write changes. So the value Settle writes
// carries the resolved version it stands for ("pin"), which decodeRecord
// reports as Record.Version while that write is the key's newest; the
// change feed reports it too. A swap prepared from the version before
// Settle finds its key at another ModRevision, reads it, finds the same
// resolved version, and is sent again with the new ModRevision: it
// applies. The versions a reader sees still change on every other write
// (the next write stores no pin, and its ModRevision is above every
// version seen before), never go back (a pin is a version that was the
// resolved one, and below the key's ModRevision), and a real change (a
// write of the name, a succession of its session) conflicts with every
// write prepared before it.
//
// There is no key per (session, name): writing it on every take and
// release through a session would triple the keys a bulk takeover writes,
// which is what its cost on etcd is made of. So HeldThrough and Settle
// scan the election records from the cursor on, a page of rangePage at a
// time at one revision, keeping those that point at the session, and
// DeleteSession of a dead session with a successor scans them all, once,
// for a record that still points at it. Against a write that makes a name
// point at the session meanwhile, DeleteSession first writes a deleting
// key (d/) that every such write compares absent, then scans, then
// deletes comparing it (see DeleteSession). A hostile or corrupt store
// (a cycle, a chain longer than store.MaxSuccession) gives
// store.ErrInvalid from Resolve; successor fields that no write makes
// give store.ErrCorrupt.
//
// # Many names
//
// GetMany and SwapMany cut their work into transactions within etcd's
// default limits (128 operations per transaction list, 1.5 MiB per
// request), up to 127 swaps per transaction, and send up to eight at
// once; a cluster configured with
// lower limits makes them send smaller ones. GetMany of many names whose
// keys lie together reads their key range instead. A session's renewal is
// one transaction on the session record, whatever the number of names held
// through it.
//
// A Store handle follows the election records with one etcd watch on
// their key prefix, started by the first WatchChanges feed and ended with
// the last: every feed of the handle rides on it, so a process following
// 100,000 names costs the cluster one watcher, and each write costs the
// handle one entry per feed, whatever the number of records stored or
// watched. A watch that must resume (its member restarted, the client
// moved to another) from a revision the cluster has compacted ends, and
// every feed on it closes: its callers read again and watch again
// (TestFeedAcrossCompaction). A feed never names a change it did not
// see, but a closed feed says nothing about what changed while it was
// down.
//
// # Authentication
//
// A client given a user and password (FromClient) authenticates again
// when its token expires (etcd's JWT tokens live for their ttl whether
// used or not) or is made stale by a change of users or roles; the
// store does not keep the credentials itself. A cluster that refuses the
// credentials (a changed password) fails every call with
// store.ErrUnavailable, naming the credentials: a leader retries until
// its deadline and steps down there, like a leader cut off from the
// cluster (TestAuthTokenExpiry), and picks up again once the credentials
// are right. It is not store.ErrInvalid: the same request succeeds then.
package etcd
