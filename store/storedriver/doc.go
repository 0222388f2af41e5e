// Package storedriver is for authors of store backends, as database/sql/driver
// is for authors of database drivers: programs that use a store import
// package store and a backend, never this package.
//
// It holds the rules every backend applies inside its write transaction
// (CheckSwap, CheckRunSwap) and the construction of election log entries
// (NextEvent), so that all backends refuse the same swaps with the same
// errors and write the same log. A backend implements the whole of
// store.Store (assert it: var _ store.Store = (*Store)(nil)); where it has
// no batched or grouped form of a call, its method calls a fallback of
// this package: GetMany by one Get per name, SwapMany by one Swap per
// swap, Page to answer NamesPage from a sorted list of every name,
// CountHolders by paging through the names and reading their records. The
// fallbacks cost one call per name where a batched backend makes one per
// batch; the change feed (WatchChanges) has none, since only the backend
// knows when it was written (a poll of its own records will do, as the
// SQLite backend's). A new backend calls them, runs
// storetest.Run from its tests, and follows the layout of the shipped
// backends (memstore, sqlite, postgres, etcd):
//
//	doc.go          package doc: guarantees, limits, the URL form
//	<backend>.go    Store, Open(ctx, target, opts ...Option), the WithX options, Close
//	election.go     Get, GetMany, Swap, SwapMany, History (the election record and log)
//	ledger.go       EnsureJob, GetRun, SwapRun, Runs (the run ledger)
//	list.go         Names, NamesPage, CountHolders
//	session.go      DeleteSession
//	suspend.go      SuspendJob
//	watch.go        WatchChanges (the change feed)
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
// an invalid value makes Open fail with an error that wraps store.ErrInvalid
// and names the option ("sqlite: WithBusyTimeout: ...", built by
// InvalidOption, CheckPositive and CheckClock). Nothing is clamped
// silently.
package storedriver
