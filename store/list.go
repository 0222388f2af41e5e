package store

import (
	"context"
	"fmt"
	"time"
)

// Lister is an optional capability: a store that can list the names it
// holds, for tools that show every name at once (baton serve). Electors and
// job runners never need it.
type Lister interface {
	// Names returns every name that has an election record or a registered
	// job, sorted, each once.
	Names(ctx context.Context) ([]string, error)
}

// MaxPage is the largest NameQuery.Limit a PageLister accepts.
const MaxPage = 10000

// NameQuery asks a PageLister for one page of names.
type NameQuery struct {
	// After is the cursor: only names after it in the store's order are
	// returned ("" from the first). Pass the last name of a page to get
	// the next one.
	After string
	// Prefix keeps only the names that begin with it ("" keeps all).
	Prefix string
	// Limit is the most names to return: 1 to MaxPage.
	Limit int
}

// Check returns an error wrapping ErrInvalid unless q can be answered.
func (q NameQuery) Check() error {
	if q.Limit < 1 || q.Limit > MaxPage {
		return fmt.Errorf("%w: page limit %d; want 1 to %d", ErrInvalid, q.Limit, MaxPage)
	}
	return nil
}

// PageLister is an optional capability: a store that lists its names a
// page at a time, so that a view of 100,000 names reads only the page it
// shows. Every backend implements it.
type PageLister interface {
	// NamesPage returns up to q.Limit names that have an election record
	// or a registered job (session records are not names, unless
	// q.Prefix begins with SessionPrefix: then it lists session records),
	// each once,
	// that come after q.After and begin with q.Prefix, in the store's
	// order: byte order of the name in SQLite, PostgreSQL and memstore,
	// of the escaped key in etcd. A shorter page than q.Limit is the
	// last. Its cost grows with q.Limit, not with the number of names.
	NamesPage(ctx context.Context, q NameQuery) ([]string, error)
}

// HolderCount is one group of a Summarizer's answer: how many election
// records have this holder, incarnation and session (all empty: free
// records), and how many of them were last written more than their lease
// before the time asked about, so that a caller can tell held from silent
// without reading the records.
type HolderCount struct {
	Holder, Incarnation, Session string
	Names                        int
	// Silent counts the records of the group whose Updated + Lease is
	// before the now passed to CountHolders (by store time; for a record
	// held through a session its own Updated says nothing of the holder's
	// liveness: the session record's does).
	Silent int
}

// Summarizer is an optional capability: a store that counts its names by
// holder in one query, so that a summary of 100,000 names does not read
// them. SQLite, PostgreSQL and memstore implement it; callers fall back to
// paging (PageLister) elsewhere.
type Summarizer interface {
	// CountHolders returns the election records (session records left
	// out) grouped by holder, incarnation and session, with the number of
	// each group silent at now, and the number of registered jobs that
	// have no election record.
	CountHolders(ctx context.Context, now time.Time) (groups []HolderCount, jobsWithoutRecord int, err error)
}
