package store

import "fmt"

// MaxPage is the largest NameQuery.Limit Store.NamesPage accepts.
const MaxPage = 10000

// NameQuery asks Store.NamesPage for one page of names.
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

// HolderCount is one group of Store.CountHolders' answer: how many election
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
