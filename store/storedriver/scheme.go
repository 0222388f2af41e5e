package storedriver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/batonhq/baton/store"
)

// Scheme is a store URL scheme, which a backend registers once (Register)
// from an init function of its package, as a database/sql driver does.
// Package storeurl opens URLs by it, and the baton command (its --store,
// its log lines) and the drill read what it says of a URL; nothing else
// knows the schemes.
type Scheme struct {
	// Names are the scheme's names as a URL writes them before the
	// colon, lower case, the canonical one first ("sqlite", "sqlite3",
	// "file"). A URL's scheme matches whatever its case.
	Names []string
	// Form is how a URL of the scheme is written, for messages
	// ("sqlite:PATH"); Note, if any, follows it in the list of forms
	// ("for a throwaway in-process store").
	Form, Note string
	// Rank orders the forms in messages, lowest first.
	Rank int
	// Networked says that the store is reached over the network, so that
	// its being unavailable may pass by itself (a server down, a lost
	// quorum); Hint is said of that ("no quorum?").
	Networked bool
	Hint      string
	// Path says that what follows the colon is a file path on this host
	// (log lines show it absolute).
	Path bool
	// InProcess says that the store lives in the process that opens it,
	// so that no other process can share it (mem:).
	InProcess bool
	// LedgerRows, if positive, is the most run ledger rows the store
	// keeps a job (kube: its Lease's annotations); 0 is no bound. The
	// baton command refuses a scheduled job whose retention keeps more,
	// before it opens the store, rather than fail a ledger write once the
	// ledger is full.
	LedgerRows int
	// Open opens the store at rawURL, whose scheme is one of Names,
	// creating it unless readOnly (then it neither creates nor writes:
	// the backend's WithReadOnly). An error about the URL's form is
	// BadURL's.
	Open func(ctx context.Context, rawURL string, readOnly bool) (store.Store, error)
}

var (
	schemesMu sync.RWMutex
	schemes   = map[string]*Scheme{}
)

// Register makes s known by each of its Names. It panics if s has no
// name, no form or no Open, or if a name is registered already: a
// programming error found at start-up, as with database/sql.Register.
func Register(s Scheme) {
	if len(s.Names) == 0 || s.Form == "" || s.Open == nil {
		panic(fmt.Sprintf("storedriver: Register of an incomplete scheme %+v", s))
	}
	schemesMu.Lock()
	defer schemesMu.Unlock()
	for _, n := range s.Names {
		if n != strings.ToLower(n) || n == "" || strings.Contains(n, ":") {
			panic(fmt.Sprintf("storedriver: Register: scheme name %q is not a lower-case name", n))
		}
		if _, dup := schemes[n]; dup {
			panic(fmt.Sprintf("storedriver: Register: scheme %q registered twice", n))
		}
	}
	p := &s
	for _, n := range s.Names {
		schemes[n] = p
	}
}

// LookupScheme returns the scheme of rawURL (the text before its first
// colon, whatever its case) if a backend registered it.
func LookupScheme(rawURL string) (Scheme, bool) {
	name, _, ok := strings.Cut(rawURL, ":")
	if !ok {
		return Scheme{}, false
	}
	schemesMu.RLock()
	defer schemesMu.RUnlock()
	s, ok := schemes[strings.ToLower(name)]
	if !ok {
		return Scheme{}, false
	}
	return *s, true
}

// Schemes returns every registered scheme once, by Rank, then by name.
func Schemes() []Scheme {
	schemesMu.RLock()
	seen := map[*Scheme]bool{}
	var out []Scheme
	for _, s := range schemes {
		if !seen[s] {
			seen[s] = true
			out = append(out, *s)
		}
	}
	schemesMu.RUnlock()
	slices.SortFunc(out, func(a, b Scheme) int {
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		return strings.Compare(a.Names[0], b.Names[0])
	})
	return out
}

// URLError is the error of a URL whose form its scheme refuses (BadURL).
// Package storeurl quotes the URL, redacted, before Reason.
type URLError struct{ Reason string }

func (e *URLError) Error() string { return e.Reason }

// BadURL returns the error of a Scheme's Open for a URL whose form is
// wrong, reason saying what and how to write it ("no file path after
// sqlite:").
func BadURL(reason string) error { return &URLError{Reason: reason} }

// Opened returns a backend's Open result as a Scheme's Open returns it:
// a nil store.Store (not one holding a nil *Store) with an error.
func Opened[S store.Store](st S, err error) (store.Store, error) {
	if err != nil {
		return nil, err
	}
	return st, nil
}
