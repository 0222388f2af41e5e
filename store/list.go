package store

import "context"

// Lister is an optional capability: a store that can list the names it
// holds, for tools that show every name at once (baton serve). Electors and
// job runners never need it.
type Lister interface {
	// Names returns every name that has an election record or a registered
	// job, sorted, each once.
	Names(ctx context.Context) ([]string, error)
}
