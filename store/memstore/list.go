package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/store"
)

var (
	_ store.Lister = (*Store)(nil)
	_ store.Lister = (*client)(nil)
)

// Names implements store.Lister.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	return s.Client("").(store.Lister).Names(ctx)
}

// Names implements store.Lister; session records are not names.
func (c *client) Names(ctx context.Context) ([]string, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	var names []string
	for n := range c.s.records {
		if !store.IsSession(n) {
			names = append(names, n)
		}
	}
	for n := range c.s.jobs {
		names = append(names, n)
	}
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return nil, err
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

var (
	_ store.PageLister = (*Store)(nil)
	_ store.PageLister = (*client)(nil)
	_ store.Summarizer = (*Store)(nil)
	_ store.Summarizer = (*client)(nil)
)

// NamesPage implements store.PageLister, in byte order of the names. The
// reference backend sorts every name: its cost is not bounded.
func (s *Store) NamesPage(ctx context.Context, q store.NameQuery) ([]string, error) {
	return s.Client("").(store.PageLister).NamesPage(ctx, q)
}

// NamesPage implements store.PageLister.
func (c *client) NamesPage(ctx context.Context, q store.NameQuery) ([]string, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	all, err := c.Names(ctx)
	if err != nil {
		return nil, err
	}
	if store.IsSession(q.Prefix) {
		c.s.mu.Lock()
		all = all[:0]
		for n := range c.s.records {
			if store.IsSession(n) {
				all = append(all, n)
			}
		}
		c.s.mu.Unlock()
		slices.Sort(all)
	}
	var out []string
	for _, n := range all {
		if n > q.After && strings.HasPrefix(n, q.Prefix) {
			if out = append(out, n); len(out) == q.Limit {
				break
			}
		}
	}
	return out, nil
}

// CountHolders implements store.Summarizer.
func (s *Store) CountHolders(ctx context.Context, now time.Time) ([]store.HolderCount, int, error) {
	return s.Client("").(store.Summarizer).CountHolders(ctx, now)
}

// CountHolders implements store.Summarizer.
func (c *client) CountHolders(ctx context.Context, now time.Time) ([]store.HolderCount, int, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, 0, err
	}
	type key struct{ holder, inc, session string }
	groups := map[key]*store.HolderCount{}
	c.s.mu.Lock()
	for n, r := range c.s.records {
		if store.IsSession(n) {
			continue
		}
		k := key{r.Holder, r.Incarnation, r.Session}
		g := groups[k]
		if g == nil {
			g = &store.HolderCount{Holder: r.Holder, Incarnation: r.Incarnation, Session: r.Session}
			groups[k] = g
		}
		g.Names++
		if r.Updated.Add(r.Lease).Before(now) {
			g.Silent++
		}
	}
	jobs := 0
	for n := range c.s.jobs {
		if _, ok := c.s.records[n]; !ok {
			jobs++
		}
	}
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return nil, 0, err
	}
	out := make([]store.HolderCount, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b store.HolderCount) int {
		return strings.Compare(a.Holder+"\x00"+a.Incarnation+"\x00"+a.Session, b.Holder+"\x00"+b.Incarnation+"\x00"+b.Session)
	})
	return out, jobs, nil
}
