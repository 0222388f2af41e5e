package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// Bounds of a listing.
const (
	// DefaultLimit is the page size of a listing that asks for none.
	DefaultLimit = 100
	// MaxLimit is the largest page a listing returns.
	MaxLimit = 1000
	// scanPages is how many pages of names one filtered listing reads at
	// most to fill its page: a filter that matches little returns a
	// shorter page and a cursor to go on from, never an unbounded read.
	scanPages = 10
)

// ListQuery selects a page of names. The zero value is the first page of
// DefaultLimit names.
type ListQuery struct {
	// After is the cursor: the Next of the previous page ("" for the first).
	After string
	// Prefix keeps the names that begin with it.
	Prefix string
	// Holder, Session and State keep the names with that holder (node
	// id), session record and state (Free, Held, SessionEnded,
	// ProbablyDead); "" keeps all.
	Holder, Session, State string
	// Limit is the page size: 1 to MaxLimit, 0 for DefaultLimit.
	Limit int
}

// Check returns an error naming the field unless q can be answered.
func (q ListQuery) Check() error {
	if q.Limit < 0 || q.Limit > MaxLimit {
		return fmt.Errorf("invalid limit %d; want 1 to %d, or 0 for pages of %d", q.Limit, MaxLimit, DefaultLimit)
	}
	if q.State != "" && !slices.Contains(States, q.State) {
		return fmt.Errorf("invalid state %q; want one of %s", q.State, strings.Join(States, ", "))
	}
	return nil
}

// Page is one page of a listing.
type Page struct {
	// Entries are the names of the page, in the store's order.
	Entries []Entry
	// Next is the cursor of the next page; "" when there is none.
	Next string
	// Scanned is how many names were read to fill the page (more than
	// len(Entries) when a filter left some out).
	Scanned int
}

// List returns a page of the names of st that q selects, with their
// states at the store's time now (StoreNow). It reads at most a few
// pages of names and their records (Store.NamesPage and Store.GetMany),
// whatever the number of names in the store. With
// names not nil it pages through those names instead of the store's.
func List(ctx context.Context, st store.Store, names []string, q ListQuery, now time.Time) (Page, error) {
	if err := q.Check(); err != nil {
		return Page{}, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	next := pager(st, names)
	var p Page
	after := q.After
	for range scanPages {
		batch, err := next(ctx, store.NameQuery{After: after, Prefix: q.Prefix, Limit: limit})
		if err != nil {
			return p, err
		}
		es, err := ReadStates(ctx, st, batch, now)
		if err != nil {
			return p, err
		}
		full := false
		for _, e := range es {
			p.Scanned++
			after = e.Name
			if q.keeps(e) {
				p.Entries = append(p.Entries, e)
				if full = len(p.Entries) == limit; full {
					break
				}
			}
		}
		if len(batch) < limit && (!full || after == batch[len(batch)-1]) {
			return p, nil // the store has no more names
		}
		if full {
			break
		}
	}
	p.Next = after
	return p, nil
}

// keeps reports whether the filters of q keep e.
func (q ListQuery) keeps(e Entry) bool {
	return (q.Holder == "" || e.State.Holder == q.Holder) &&
		(q.Session == "" || e.State.Session == q.Session) &&
		(q.State == "" || e.State.State == q.State)
}

// pager returns how to read a page of names: from names when not nil,
// else from the store.
func pager(st store.Store, names []string) func(context.Context, store.NameQuery) ([]string, error) {
	if names != nil {
		sorted := slices.Clone(names)
		slices.Sort(sorted)
		sorted = slices.Compact(sorted)
		return func(_ context.Context, q store.NameQuery) ([]string, error) {
			return storedriver.Page(sorted, q)
		}
	}
	return st.NamesPage
}

// Summary counts the names of a store by state, holder and session.
type Summary struct {
	// Names is the number of names (election records and jobs without
	// one; session records are not names).
	Names int `json:"names"`
	// States counts the names by state; every state is present.
	States map[string]int `json:"states"`
	// Holders counts the names held (or last held) by each holder
	// incarnation and session, largest first.
	Holders []HolderSummary `json:"holders"`
	// Sessions is the number of distinct sessions among the names.
	Sessions int `json:"sessions"`
	// Read says how the counts were made: "counted" (counted by the
	// store, Summarize) or "read" (every name read, when a caller counts
	// the names it was given).
	Read string `json:"read"`
	// CountedAt is when the count began, for a caller that keeps it.
	CountedAt time.Time `json:"counted_at,omitzero"`
}

// HolderSummary is one holder's share of a Summary.
type HolderSummary struct {
	Holder      string `json:"holder"`
	Incarnation string `json:"incarnation,omitempty"`
	Session     string `json:"session,omitempty"`
	// State is the state of these names when they share one (through a
	// session), else "" and States says.
	State  string         `json:"state,omitempty"`
	Names  int            `json:"names"`
	States map[string]int `json:"states"`
}

// Summarize counts the names of st by state, holder and session at the
// store's time now: in one count of the store (Store.CountHolders: one
// grouped query where the store has one) and one read of the sessions.
func Summarize(ctx context.Context, st store.Store, now time.Time) (Summary, error) {
	sum := Summary{States: map[string]int{}}
	for _, s := range States {
		sum.States[s] = 0
	}
	groups, jobs, err := st.CountHolders(ctx, now)
	if err != nil {
		return sum, err
	}
	sum.Read = "counted"
	var sessNames []string
	for _, g := range groups {
		if g.Session != "" && g.Holder != "" {
			sessNames = append(sessNames, g.Session)
		}
	}
	slices.Sort(sessNames)
	sessNames = slices.Compact(sessNames)
	sessRecs, err := getMany(ctx, st, sessNames)
	if err != nil {
		return sum, err
	}
	sessions := map[string]*store.Record{}
	for i, n := range sessNames {
		sessions[n] = sessRecs[i]
	}
	sum.Sessions = len(sessNames)
	sum.Names, sum.States[Free] = jobs, jobs
	for _, g := range groups {
		sum.Names += g.Names
		h := HolderSummary{Holder: g.Holder, Incarnation: g.Incarnation, Session: g.Session, Names: g.Names, States: map[string]int{}}
		switch {
		case g.Holder == "":
			h.State, h.States[Free] = Free, g.Names
		case g.Session != "":
			// One session: one state for all of them.
			s := StateOf(store.Record{Holder: g.Holder, Incarnation: g.Incarnation, Session: g.Session}, sessions[g.Session], now)
			h.State, h.States[s.State] = s.State, g.Names
		default:
			h.States[Held], h.States[ProbablyDead] = g.Names-g.Silent, g.Silent
			if g.Silent == 0 {
				h.State = Held
			} else if g.Silent == g.Names {
				h.State = ProbablyDead
			}
		}
		for s, n := range h.States {
			sum.States[s] += n
		}
		if g.Holder != "" {
			sum.Holders = append(sum.Holders, h)
		}
	}
	sortHolders(sum.Holders)
	return sum, nil
}

// sortHolders sorts the largest holders first, then by name.
func sortHolders(hs []HolderSummary) {
	slices.SortFunc(hs, func(a, b HolderSummary) int {
		if a.Names != b.Names {
			return b.Names - a.Names
		}
		return strings.Compare(a.Holder+"\x00"+a.Incarnation+"\x00"+a.Session, b.Holder+"\x00"+b.Incarnation+"\x00"+b.Session)
	})
}

// JobColumns returns what a listing shows of name as a job: its
// registration with the next due period, and its last finished run among
// the newest rows (nil, nil when name is no job). It reads the job and at
// most DefaultRows ledger rows.
func JobColumns(ctx context.Context, st store.Store, name string, now time.Time) (*Job, *Run, error) {
	j, err := st.GetJob(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	rows, err := st.RecentRuns(ctx, name, "", DefaultRows)
	if err != nil {
		return nil, nil, err
	}
	var last *Run
	for _, r := range rows {
		if r.State.Final() {
			v := ViewRun(r)
			last = &v
			break
		}
	}
	return viewJob(j, rows, now), last, nil
}
