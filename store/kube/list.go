package kube

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// listPage is how many Leases one list request asks for.
const listPage = 500

// each calls fn with every baton object of the namespace, by pages.
func (s *Store) each(ctx context.Context, fn func(o object) error) error {
	return s.eachLease(ctx, labelSelector, func(name string, l *coordinationv1.Lease) error {
		o, err := decode(name, l)
		if err != nil {
			return err
		}
		return fn(o)
	})
}

// eachLease calls fn with every Lease of the namespace that selector
// selects and that holds a name's state, and that name, by pages.
func (s *Store) eachLease(ctx context.Context, selector string, fn func(name string, l *coordinationv1.Lease) error) error {
	opts := metav1.ListOptions{LabelSelector: selector, Limit: listPage}
	for {
		list, err := s.leases.List(ctx, opts)
		if err != nil {
			return s.apiError(ctx, "list", "", err)
		}
		for i := range list.Items {
			l := &list.Items[i]
			name := stateName(l)
			if name == "" {
				continue // labelled by hand, holds no state: not a name
			}
			if err := fn(name, l); err != nil {
				return err
			}
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

// stateName returns the name whose state l holds ("": none).
func stateName(l *coordinationv1.Lease) string {
	var head struct {
		Name string `json:"name"`
	}
	if json.Unmarshal([]byte(l.Annotations[annotState]), &head) != nil {
		return ""
	}
	return head.Name
}

// names returns the names of every object kept (sessions only if
// sessions), sorted.
func (s *Store) names(ctx context.Context, sessions bool) ([]string, error) {
	var out []string
	err := s.each(ctx, func(o object) error {
		if (o.st.Rec != nil || o.st.Job != nil) && store.IsSession(o.st.Name) == sessions {
			out = append(out, o.st.Name)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// Names implements store.Store: one list of the namespace's Leases.
func (s *Store) Names(ctx context.Context) ([]string, error) { return s.names(ctx, false) }

// NamesPage implements store.Store, in byte order of the name, from a
// list of every name (storedriver.Page): its cost grows with the number
// of names.
func (s *Store) NamesPage(ctx context.Context, q store.NameQuery) ([]string, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	all, err := s.names(ctx, store.IsSession(q.Prefix))
	if err != nil {
		return nil, err
	}
	return storedriver.Page(all, q)
}

// CountHolders implements store.Store from one list of the namespace.
func (s *Store) CountHolders(ctx context.Context, now time.Time) ([]store.HolderCount, int, error) {
	var h storedriver.Holders
	jobsOnly := 0
	err := s.each(ctx, func(o object) error {
		rec, ok := o.record()
		switch {
		case ok && !store.IsSession(rec.Name):
			h.Add(rec, now)
		case !ok && o.st.Job != nil:
			jobsOnly++
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return h.Counts(), jobsOnly, nil
}
