// Package storedriver is for authors of store backends, as database/sql/driver
// is for authors of database drivers: programs that use a store import
// package store and a backend, never this package.
//
// It holds the rules every backend applies inside its write transaction
// (CheckSwap, CheckRunSwap) and the construction of election log entries
// (NextEvent), so that all backends refuse the same swaps with the same
// errors and write the same log, the fallbacks of calls a backend has no
// batched form of, and the check of a store's declared capabilities
// (CheckCapabilities).
//
// # A backend author's checklist
//
// Everything a backend implements, required and optional, and every
// conformance case it must pass:
//
//  1. The whole of store.Store, asserted: var _ store.Store = (*Store)(nil).
//     Where it has no batched or grouped form of a call, the method calls
//     a fallback of this package: GetMany by one Get per name, SwapMany by
//     one Swap per swap, Page to answer NamesPage from a sorted list of
//     every name, CountHolders by paging through the names and reading
//     their records. The fallbacks cost one call per name where a
//     batched backend makes one per batch. The change feed (WatchChanges)
//     has none, since only the backend knows when it was written (a poll
//     of its own records will do, as the SQLite backend's).
//  2. Capabilities, the declaration of the optional capabilities it
//     offers (items 3 to 6), each implemented by its interface, asserted
//     (var _ store.Succeeder = (*Store)(nil)). The library reaches each
//     only through the declaration (store.SucceederOf and the others);
//     NewGroup logs one line naming a capability it would use that the
//     store lacks.
//  3. store.CapSuccession, store.Succeeder (HeldThrough, Settle): a dead
//     session passes its names on in one write (docs/succession.md;
//     CheckSuccessionSwap, SuccessionEvent). Without it a Group takes
//     names over one at a time, each after its lease, and CheckSwap
//     refuses a Successor.
//  4. store.CapOrderedFeed, store.OrderedFeed (FeedInOrder): the feed's
//     batches carry Change.Through. Without it a succession's names are
//     read again instead of adopted from the feed.
//  5. store.CapIdentity, store.Identifier (StoreID): an id made with the
//     store, and ErrReplaced from a handle that finds another.
//  6. store.CapStoreTime, store.TimeSource (StoreTime): a clock of the
//     store's own, on the server. Without it the wall-clock guard uses a
//     step detector.
//  7. Registration of its URL scheme, once, in an init function of its
//     package (url.go): Register(Scheme{...}); store/storeurl, the baton
//     command and its log lines, and the drill read it from there, and
//     storeurl imports the backend (a blank import) to link it.
//  8. Conformance, from <backend>_test.go: storetest.Run(t, factory),
//     which checks the whole of store.Store, that the declaration of
//     Capabilities is true (CheckCapabilities: declared and implemented
//     alike), the ordered feed's case (FeedInOrder) when it declares one,
//     and the succession cases (storetest.RunSuccession, the subtest
//     Succession) when it declares successions, SuccessorRefused when it
//     does not; storetest.RunDamaged (rows no baton wrote, planted below
//     the API); for a networked or multi-process backend
//     internal/electortest.Run (real Electors and a schedule.Runner on
//     real handles); storetest.Benchmark in bench_test.go; and its own
//     tests of what storetest does not check: StoreID and StoreTime's
//     values, a store replaced under a handle (replaced_test.go), its
//     schema (schema_test.go).
//
// A wrapper of a store (a counter, a fault injector) forwards
// Capabilities and implements every optional interface by forwarding it,
// so that it keeps every capability of the store it wraps by
// construction; the methods of those the inner store lacks answer
// Unsupported (StoreID "", FeedInOrder false). cmd/baton/countstore.go
// is one. A wrapper that forwards none of them declares none
// (Capabilities returns 0).
//
// The layout of the shipped backends (memstore, sqlite, postgres, etcd):
//
//	doc.go          package doc: guarantees, limits, the URL form
//	<backend>.go    Store, Open(ctx, target, opts ...Option), the WithX options,
//	                Capabilities, Close
//	url.go          the registration of the URL scheme (Register)
//	election.go     Get, GetMany, Swap, SwapMany, History (the election record and log)
//	ledger.go       EnsureJob, GetRun, SwapRun, Runs (the run ledger)
//	list.go         Names, NamesPage, CountHolders
//	session.go      DeleteSession
//	succession.go   HeldThrough, Settle (store.Succeeder)
//	suspend.go      SuspendJob
//	watch.go        WatchChanges (the change feed), FeedInOrder
//	schema.go       creating and checking the backend's tables or keys, and the
//	                store's identity (store.Identifier, store.ErrReplaced)
//	<concept>.go    what a backend has beyond these, one concept a file, as
//	                sqlite's open.go (the file checks), tx.go (write
//	                transactions, error classification), encoding.go and
//	                stmts.go, or etcd's batch.go
//	<backend>_test.go  storetest.Run and the backend's own fault tests
//	replaced_test.go   the store deleted or replaced under a handle
//	bench_test.go   BenchmarkStore calling storetest.Benchmark, then the
//	                backend's own benchmarks of what only it has
//
// A backend's errors keep the contract of package store: decisions
// (ErrConflict, ErrInvalid, ErrNotFound, ErrStaleToken, ErrSuspended) as such,
// anything that may heal as ErrUnavailable, and what never heals as
// ErrReplaced (the store is gone or is another one), ErrCorrupt (damaged
// data, values that are not baton's, a write refused by a constraint
// baton did not make) or ErrSchema (not a baton store, an unknown
// version), and a token above store.MaxToken as ErrTokenLimit
// (CheckElectionToken, CheckRunToken; CheckSwap and CheckRunSwap apply
// them): store.Permanent tells electors and runners to stop.
// Errors never quote a password.
//
// Options have one shape in every backend: type Option func(*config) error;
// an invalid value makes Open fail, before it touches a file or the
// network, with an error that wraps store.ErrInvalid and the module's one
// field-error type, *baton.OptionError, naming the option as its URL
// parameter is named ("sqlite: invalid request: invalid busy-timeout 0s;
// want at least 1ms, such as 5s", built by InvalidOption, CheckPositive
// and CheckClock). Nothing is clamped silently.
package storedriver
