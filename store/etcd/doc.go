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
//	<prefix>schema                    schema version ("4")
//	<prefix>schema-upgrade            only between the two steps of an upgrade from "1", "2" or "3"
//	<prefix>e/<name>                  election record (JSON), session records included
//	<prefix>l/<name>/<seq, 20 digits> election log events from seq on (JSON: one, or a list)
//	<prefix>j/<job>                   job registration (JSON)
//	<prefix>r/<job>/<period>          run ledger row (JSON)
//	<prefix>c/<name>/<node>           candidate row (JSON)
//	<prefix>x/<name>/<seq>/<n>        log events written without the record (Suspended, Resumed; JSON)
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
// log, numbered in order. A writable Open of a version 1, 2 or 3 store
// upgrades it in place (no record is rewritten: an older record has no
// session and carries no events, older log keys hold one event each, and
// an older job is not suspended)
// and gives its schema key a new create revision, so that processes of an
// older baton that opened it before fail their next write with
// store.ErrReplaced and stop, and an older baton's Open refuses the store:
// a version 1 baton would read a name held through a live session as a
// record nobody renews and take it over, a version 2 baton would drop
// the events a record carries when it rewrites it, and a version 3 baton
// would claim the periods of a suspended job. Upgrade every process
// of a deployment together. A read-only Open reads an older store as it
// is.
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
// watched.
package etcd
