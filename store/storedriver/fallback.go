package storedriver

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/store"
)

// The fallbacks below let a minimal backend implement the whole of
// store.Store: a backend without a batched read, a batched write or a
// grouped count calls them from its own methods, at the cost of one call
// per name (or a read of every name) where a batched backend makes one.

// GetMany answers store.Store.GetMany by one Get per name: a result per
// name, ErrNotFound as that name's result, any other error as the whole
// read's.
func GetMany(ctx context.Context, st interface {
	Get(ctx context.Context, name string) (store.Record, error)
}, names []string) ([]store.GetResult, error) {
	out := make([]store.GetResult, len(names))
	for i, n := range names {
		rec, err := st.Get(ctx, n)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		out[i] = store.GetResult{Record: rec, Err: err}
	}
	return out, nil
}

// SwapMany answers store.Store.SwapMany by one Swap per swap, in order:
// ErrConflict and ErrInvalid are that swap's result, any other error
// stops the batch and is the whole write's (the swaps before it may have
// been applied, as after any failed write: callers re-read).
func SwapMany(ctx context.Context, st interface {
	Swap(ctx context.Context, s store.Swap) (store.Record, error)
}, swaps []store.Swap) ([]store.SwapResult, error) {
	out := make([]store.SwapResult, len(swaps))
	for i, sw := range swaps {
		rec, err := st.Swap(ctx, sw)
		if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrInvalid) {
			return nil, err
		}
		out[i] = store.SwapResult{Record: rec, Err: err}
	}
	return out, nil
}

// Page answers store.Store.NamesPage from sorted, every name the query
// can return in the store's order (the names, or the session records when
// q.Prefix begins with store.SessionPrefix), for a backend that lists
// rather than pages: its cost grows with the number of names.
func Page(sorted []string, q store.NameQuery) ([]string, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	i, _ := slices.BinarySearch(sorted, q.After)
	var out []string
	for _, n := range sorted[i:] {
		if n > q.After && strings.HasPrefix(n, q.Prefix) {
			if out = append(out, n); len(out) == q.Limit {
				break
			}
		}
	}
	return out, nil
}

// CountHolders answers store.Store.CountHolders by reading every name, a
// page at a time (NamesPage, GetMany), for a backend that cannot group in
// a query: its cost grows with the number of names.
func CountHolders(ctx context.Context, st interface {
	NamesPage(ctx context.Context, q store.NameQuery) ([]string, error)
	GetMany(ctx context.Context, names []string) ([]store.GetResult, error)
}, now time.Time) ([]store.HolderCount, int, error) {
	var h Holders
	jobs := 0
	for after := ""; ; {
		names, err := st.NamesPage(ctx, store.NameQuery{After: after, Limit: store.MaxPage})
		if err != nil {
			return nil, 0, err
		}
		res, err := st.GetMany(ctx, names)
		if err != nil {
			return nil, 0, err
		}
		for _, r := range res {
			if r.Err != nil {
				jobs++ // a name without a record is a job's
				continue
			}
			h.Add(r.Record, now)
		}
		if len(names) < store.MaxPage {
			break
		}
		after = names[len(names)-1]
	}
	return h.Counts(), jobs, nil
}

// Holders groups election records as store.Store.CountHolders returns
// them. The zero value is empty and ready to use.
type Holders struct {
	groups map[holderKey]*store.HolderCount
}

type holderKey struct{ holder, inc, session string }

// Add counts r in its group, as silent if its lease ran out before now
// (by store time).
func (h *Holders) Add(r store.Record, now time.Time) {
	if h.groups == nil {
		h.groups = map[holderKey]*store.HolderCount{}
	}
	k := holderKey{r.Holder, r.Incarnation, r.Session}
	g := h.groups[k]
	if g == nil {
		g = &store.HolderCount{Holder: r.Holder, Incarnation: r.Incarnation, Session: r.Session}
		h.groups[k] = g
	}
	g.Names++
	if r.Updated.Add(r.Lease).Before(now) {
		g.Silent++
	}
}

// ResolveCounts counts each group of gs, as a backend's grouped query
// returns them, that is held through a session a succession passed on as
// its successor's: store.Resolve shows the group's records held by the
// successor, and silent by the resolved Updated (the latest of a record's
// own and the successions'). resolve resolves, at once, one record a
// group held through a session (its holder, incarnation and session;
// named after the session); silentSince counts the records of group g
// silent at the backend's now once their Updated is raised to since
// (zero: not raised). The groups come back merged and sorted.
func ResolveCounts(gs []store.HolderCount, resolve func([]store.Record) ([]store.Record, error),
	silentSince func(g store.HolderCount, since time.Time) (int, error)) ([]store.HolderCount, error) {
	var raws []store.Record
	var at []int // the group of each raw
	for i, g := range gs {
		if g.Holder != "" && g.Session != "" {
			raws = append(raws, store.Record{Name: g.Session, Holder: g.Holder, Incarnation: g.Incarnation, Session: g.Session})
			at = append(at, i)
		}
	}
	if len(raws) == 0 {
		return gs, nil
	}
	recs, err := resolve(raws)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(gs)
	for j, r := range recs {
		if r.Via == "" {
			continue
		}
		g := &out[at[j]]
		if g.Silent, err = silentSince(*g, r.Updated); err != nil {
			return nil, err
		}
		g.Holder, g.Incarnation, g.Session = r.Holder, r.Incarnation, r.Session
	}
	var h Holders
	for _, g := range out {
		h.merge(g)
	}
	return h.Counts(), nil
}

// merge adds the counts of g to its group.
func (h *Holders) merge(g store.HolderCount) {
	if h.groups == nil {
		h.groups = map[holderKey]*store.HolderCount{}
	}
	k := holderKey{g.Holder, g.Incarnation, g.Session}
	if have := h.groups[k]; have != nil {
		have.Names += g.Names
		have.Silent += g.Silent
		return
	}
	h.groups[k] = &g
}

// Counts returns the groups, sorted by holder, incarnation and session.
func (h *Holders) Counts() []store.HolderCount {
	out := make([]store.HolderCount, 0, len(h.groups))
	for _, g := range h.groups {
		out = append(out, *g)
	}
	sortHolders(out)
	return out
}

// sortHolders sorts the groups of a CountHolders answer by holder,
// incarnation and session, as every backend returns them.
func sortHolders(gs []store.HolderCount) {
	slices.SortFunc(gs, func(a, b store.HolderCount) int {
		return strings.Compare(a.Holder+"\x00"+a.Incarnation+"\x00"+a.Session, b.Holder+"\x00"+b.Incarnation+"\x00"+b.Session)
	})
}
