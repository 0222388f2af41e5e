// Package kube is the store.Store backend on the Lease objects
// (coordination.k8s.io/v1) of one Kubernetes namespace: baton for a
// cluster that already runs an API server, with no other database.
//
// URL: kube://NAMESPACE, with the pod's in-cluster configuration; outside
// a cluster kube://NAMESPACE?kubeconfig=PATH or $KUBECONFIG. Open lists the
// namespace's Leases once and asks for every other verb the store uses
// without writing (a watch stopped at once, a get of a name no baton name
// maps to, dry-run create and update), so a refused permission or an
// unreachable server fails there, in one line (a refused permission names
// the verb and the resource; a read-only handle checks no write verb); a
// missing namespace fails at the first write, in one line naming it (a
// list in a missing namespace is merely empty). The store uses the verbs get, list,
// watch, create and update on leases.coordination.k8s.io (never delete:
// DeleteSession removes a dead session's record from its Lease and keeps
// the Lease for its log), through a client-go REST client whose scheme holds
// coordination.k8s.io/v1 only (client-go's typed client would link every
// API group: 24.7 MB more in the operator's binary), with a client-side limit of DefaultQPS requests a second where the
// configuration sets none.
//
// # Layout: one Lease per name
//
// Every election or job name is one Lease, named as the name where that
// is a valid object name (so that client-go's elector and baton meet on
// the same Lease) and "baton--" and its base32 otherwise (session records,
// names with capitals or "/"). The Lease's spec is the election record as
// client-go writes it: holderIdentity, leaseDurationSeconds (the lease
// plus one second, rounded up to a second: see "Mixed fleets"), renewTime (the time of the record's last
// write), acquireTime (when the holder changed) and leaseTransitions (the
// fencing token, saturated at 2^31-1), so that `kubectl get lease` shows
// holder and renewal. baton's own state is one JSON annotation,
// batonhq.github.io/state: the record (token, incarnation, session,
// transfer, lease to the nanosecond, version), the tail of the election
// log, the job, its run ledger and its candidate rows; the annotation
// batonhq.github.io/token repeats the token for people, and the label
// batonhq.github.io/store=1 marks the Leases baton lists (its schema
// version).
//
// # What it guarantees
//
// Every write is one update of one Lease compared by its resourceVersion
// (409 Conflict: read again and decide again), and reads are the API
// server's quorum reads. Because everything the store contract makes
// atomic concerns one name, it is one object: a Swap and its log event, a
// fenced SwapRun and the election token it is checked against, a claim and
// the job's suspension, UpdateJob's schedule, record version and
// Rescheduled event, SuspendJob's job and event. Record.Version and
// Run.Version are drawn from a counter in the state, not the
// resourceVersion, so that a ledger write does not change the record's
// version (and so does not make the holder's next renewal conflict).
//
// The token never goes down while the Lease exists: the record's token is
// the larger of the state's and the Lease's leaseTransitions, and a Lease
// whose spec differs from what baton last wrote (another writer: client-go's
// elector, kubectl edit) is read from its spec (holder, duration,
// leaseTransitions as a floor for the token) with a version above every
// one baton drew from it (the object's resourceVersion), so that a baton
// contender sees another writer's renewals as changes and does not take
// the Lease over while they go on.
//
// # Mixed fleets with client-go
//
// client-go's leaderelection candidates (LeaseLock) and baton's may run on
// one Lease, the way to move a controller from one to the other with no
// early takeover either way. The rules, each tested on the real API
// server (kubetest):
//
//   - client-go takes a Lease once its record (the spec, with times in
//     whole seconds) stayed the same for leaseDurationSeconds on
//     client-go's own clock, from when it first saw it. baton writes the
//     spec at every renewal, so a renewal is a change client-go sees;
//     renewals within one second look the same to it, so baton writes a
//     leaseDurationSeconds one second longer than its lease: client-go
//     then waits at least a lease past baton's last renewal. That second
//     is the only margin client-go keeps (it has no 2e).
//   - A name held through a session (baton.Group) would be renewed only in
//     the session's Lease, which client-go never reads; so every renewal
//     of a session also writes the renewTime of every name's Lease held
//     through it (found by the label batonhq.github.io/session), and the
//     renewal succeeds, extending the Group's terms, only once all of them
//     are written. A failed one leaves the terms' deadlines where the last
//     full renewal put them.
//   - baton takes a Lease that another writer holds once its spec stayed
//     the same for its leaseDurationSeconds plus twice the clock margin on
//     the contender's clock (baton's own rule: every change of the spec
//     is a new record version). baton's own writes that keep another
//     writer's spec (candidate rows, ledger rows) keep that record's
//     version too, so that they do not look like its renewals.
//   - The token is leaseTransitions: client-go raises it at every change
//     of holder, baton writes its token there and reads the larger of it
//     and its own, so a job fenced by leaseTransitions under client-go
//     and by baton's token under baton sees one rising number.
//
// client-go's own rules hold among its candidates: one that starts with
// the identity the Lease names takes it back at once, with the same
// leaseTransitions (a restarted pod with a stable name shares its token
// with its predecessor; baton's incarnations do not). Neither rule stops
// a client-go leader that was paused (or starved) from acting after its
// Lease ran out: client-go believes it leads until a renewal fails, up
// to its RenewDeadline after a pause, the overlap client-go has among its
// own candidates (TestKube/MixedFleetFaults reports them: 0.3 s to 6.3 s
// in its runs here, after stops of 0.5-3.5 s on a loaded machine). Fence
// the job's writes with the token.
//
// # What it does NOT guarantee
//
//   - No optional capability: Capabilities is none. No successions (the
//     names of a dead session are taken over one at a time, each after its
//     lease: a multi-object write is what a succession is), no ordered
//     feed, no store clock (the API server's is not readable; store times
//     are this process's clock, for people), no store identity.
//   - The election log is a tail: the last 64 events of each name. History
//     returns what is kept; older events are gone.
//   - A name's state is bounded by the 256 KiB Kubernetes allows a
//     Lease's annotations (the store refuses a write past 250 KiB, ErrInvalid,
//     naming the name): the run ledger of a job holds what fits, about 800
//     rows with empty outputs (310 bytes of JSON a row) and fewer with
//     output tails. schedule's default retention (10,000 rows) does not
//     fit: a job on this store needs a retention of a few hundred rows, or
//     its SwapRun fails, loudly (no row is dropped to make room). The
//     store reports its bound, LedgerRows (500, rows of short outputs),
//     as store.LedgerBounded, and schedule.New refuses a retention that
//     keeps more rows (or every row); the URL scheme declares it too, so
//     that baton run refuses a scheduled job whose --keep-rows is above
//     it (or 0) before it opens the store. With long output tails fewer
//     rows fit than the bound says. Every write of a name rewrites
//     its whole state: a ledger of many rows makes each of its writes
//     larger.
//   - A deleted Lease takes its state with it: whoever deletes it (kubectl
//     delete lease) resets its token to 0. An outside writer that rewrites
//     the annotation loses baton's state the same way. A store that must
//     survive that keeps its records elsewhere.
//   - A name held through a session (baton.Group) costs a write of its
//     own Lease at every renewal of the session (see "Mixed fleets"): a
//     Group's renewal is a list and one write per name, not one write,
//     and its names are renewed as fast as the client's rate limit lets
//     (DefaultQPS a second): a Group holds no more names than its renew
//     interval has room for at that rate.
//   - One read per name in GetMany, one write per name in SwapMany, and
//     one list of the whole namespace for Names, NamesPage and
//     CountHolders: costs that grow with the number of names.
//   - The change feed is a watch of the namespace's baton Leases; it closes
//     on any end of the watch (410 Gone after a compaction, a restart), and
//     the caller reads again. It reports renewals too.
//   - The API server does not stop a paused process: a leader frozen past
//     its lease acts on waking; only fenced writes (SwapRun with Fenced)
//     stop its work.
package kube
