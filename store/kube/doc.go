// Package kube is the store.Store backend on the Lease objects
// (coordination.k8s.io/v1) of one Kubernetes namespace: baton for a
// cluster that already runs an API server, with no other database.
//
// URL: kube://NAMESPACE, with the pod's in-cluster configuration; outside
// a cluster kube://NAMESPACE?kubeconfig=PATH or $KUBECONFIG; session-hold=
// and qps= set WithSessionHold and WithQPS. Open lists the
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
//   - A name held through a session (baton.Group) is renewed only in the
//     session's Lease, which client-go never reads: see "Names held
//     through a session".
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
// # Names held through a session
//
// A Group renews all its names by one write of its session's Lease, so
// that holding 10,000 names costs one write a renew interval, not 10,000.
// A client-go candidate of such a name reads only the name's own Lease,
// so that Lease says, for client-go, that the holder keeps it for the
// session hold (WithSessionHold, URL session-hold=, DefaultSessionHold:
// an hour; never less than the lease plus 3 s) instead of a lease: its
// leaseDurationSeconds is the hold. The store keeps an index of when it
// last wrote each name's Lease (the names are found by the label
// batonhq.github.io/session, listed at a session's first renewal in the
// process and every quarter of the hold after), and:
//
//   - a renewal of the session succeeds, extending the Group's terms to at
//     most its start plus the lease, only once every name's Lease covers
//     those terms for client-go, with 2 s to spare (client-go sees
//     renewTime in whole seconds): a name whose last write is too old is
//     written first, and a failed write fails the renewal, leaving the
//     terms' deadlines where the last renewal put them;
//   - so that a renewal rarely has a name to write, a name is written
//     again in the background (one at a time, oldest first) once half of
//     that time has passed: about one write per name per half hold;
//   - when the session is released (Group.Close), every name's Lease is
//     written with no holder, in the background (Close waits for that up
//     to 5 s), and a client-go candidate takes it at once; baton's
//     candidates need none of this (a name of a released session is
//     free).
//
// The cost: a client-go candidate of a name whose Group's process died
// waits up to the session hold before it takes the name (baton's
// candidates take it after the session's lease). A fleet that mixes
// client-go candidates with baton Groups on the same names and needs
// client-go's failover fast sets a short hold: at the shortest, every
// renewal writes every name, as many writes as names a renew interval.
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
// # What the simulator draws of it
//
// baton sim needs nothing of its own for this store's differences, each
// of which the machines already meet on the others:
//
//   - A 409 Conflict is a lost compare-and-swap. The store reads the
//     Lease again and decides again (update), so a Swap answers as on
//     any store: applied, or ErrConflict on the record it finds; the
//     simulator draws concurrent swaps that conflict on every store.
//   - A watch that ends (410 Gone after a compaction, a restarted API
//     server, a dropped connection) closes the change feed, and the
//     caller reads again; the simulator draws nodes without change
//     notifications (every read by polling) and feeds that break while
//     names change hands. TestKube/WatchGone forces a 410 on a real
//     API server.
//   - renewTime in whole seconds is client-go's view only: baton reads
//     its own record from its state, to the nanosecond, and times leases
//     on its own clock; what client-go sees of baton's renewals is
//     covered by the second baton adds to leaseDurationSeconds and by the
//     session hold's slack, tested on the real API server
//     (TestKube/ClientGoSeesSeconds, TestKube/SessionHold).
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
//   - A name held through a session costs a write of its own Lease
//     about every half session hold, and one at its release (see "Names
//     held through a session"), at the client's rate limit (DefaultQPS a
//     second, WithQPS, URL qps=): a Group holds no more names than
//     half a hold has room for at that rate (with the defaults, 90,000).
//   - One write per name in SwapMany (16 at a time, at the client's rate
//     limit: a Group's acquisition or takeover of N names takes N / qps
//     seconds at least); GetMany reads a few names one by one and many
//     by lists with a label selector (the label batonhq.github.io/name,
//     a digest of the Lease's name, 500 names a list, after one list of
//     the namespace's Leases without that label); one list of the whole
//     namespace for Names, NamesPage and CountHolders: costs that grow
//     with the number of names.
//   - The change feed is a watch of the namespace's baton Leases; it closes
//     on any end of the watch (410 Gone after a compaction, a restart), and
//     the caller reads again. It reports renewals too.
//   - The API server does not stop a paused process: a leader frozen past
//     its lease acts on waking; only fenced writes (SwapRun with Fenced)
//     stop its work.
package kube
