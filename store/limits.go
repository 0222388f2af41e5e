package store

// LedgerBounded is implemented by a store that keeps a bounded number of
// run ledger rows for each job: store/kube, whose ledger of a job lives in
// one object of bounded size. It is a limit, not a capability: a store
// with no bound does not implement it, and nothing is declared in
// Capabilities. A writer that keeps more rows than the bound (a retention
// above it, or none) fails once the job's ledger is full, so
// schedule.New refuses a retention the store cannot keep, naming the
// bound; reach it through LedgerRowsOf.
//
// A wrapper around a store forwards it (as cmd/baton's counting wrapper
// does): a wrapper that dropped it would hide the bound, and the job
// would fail later, loudly, at a full ledger instead of at start.
type LedgerBounded interface {
	// LedgerRows is the most run ledger rows the store keeps for one job
	// (rows with short outputs; fewer fit with long ones). Positive.
	LedgerRows() int
}

// LedgerRowsOf returns the most run ledger rows st keeps for one job, or
// 0 when its ledger has no bound (st does not implement LedgerBounded, or
// reports no positive bound).
func LedgerRowsOf(st Store) int {
	if b, ok := st.(LedgerBounded); ok {
		return max(b.LedgerRows(), 0)
	}
	return 0
}
