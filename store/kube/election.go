package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, name string) (store.Record, error) {
	if err := store.CheckName(name); err != nil {
		return store.Record{}, err
	}
	o, err := s.read(ctx, name)
	if err != nil {
		return store.Record{}, err
	}
	rec, ok := o.record()
	if !ok {
		return store.Record{}, fmt.Errorf("election %q: %w", name, store.ErrNotFound)
	}
	return rec, nil
}

// Swap implements store.Store: one compare-and-swap of the name's Lease,
// which holds the record and the log tail together.
func (s *Store) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	if err := store.CheckName(sw.Record.Name); err != nil {
		return store.Record{}, fmt.Errorf("election record: %w", err)
	}
	o, err := s.update(ctx, sw.Record.Name, func(o *object) error {
		cur, _ := o.record()
		if err := storedriver.CheckSwap(cur, sw); err != nil {
			return err
		}
		rec := sw.Record
		rec.Via, rec.SuccessorHolder, rec.SuccessorIncarnation = "", "", ""
		rec.Version = o.next()
		rec.Updated = s.now()
		stored := rec
		stored.Name = ""
		o.st.Rec, o.recWritten = &stored, true
		o.foreign = false
		if sw.Event != "" {
			o.appendEvent(func(seq uint64) store.Event { return storedriver.NextEvent(seq, rec, sw.Event) })
		}
		return nil
	})
	if err != nil {
		return store.Record{}, err
	}
	rec, _ := o.record()
	if store.IsSession(rec.Name) {
		if rec.Holder == "" {
			s.releaseNames(rec.Name)
			return rec, nil
		}
		// The names held through the session must stay held for
		// client-go's candidates, which read a name's own Lease only;
		// until those the renewed term needs are written, the session's
		// renewal has not succeeded.
		if err := s.holdNames(ctx, rec.Name, s.now(), rec.Lease); err != nil {
			return store.Record{}, fmt.Errorf("kube: session %q written, the Leases of its names not all renewed: %w", rec.Name, err)
		}
	}
	return rec, nil
}

// GetMany implements store.Store: one read per name, parallelWrites at
// a time; from listMany names on, lists of their Leases by label instead
// (getByList).
func (s *Store) GetMany(ctx context.Context, names []string) ([]store.GetResult, error) {
	if len(names) >= listMany {
		return s.getByList(ctx, names)
	}
	out := make([]store.GetResult, len(names))
	idx := indexes(len(names))
	err := s.forEach(ctx, idx, func(ctx context.Context, i int) error {
		rec, err := s.Get(ctx, names[i])
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		out[i] = store.GetResult{Record: rec, Err: err}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SwapMany implements store.Store: one write per swap, parallelWrites at
// a time (in order, one at a time, if a name comes twice). ErrConflict
// and ErrInvalid are a swap's own result; any other error is the whole
// call's, and the other swaps may or may not have been applied.
func (s *Store) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	seen := make(map[string]bool, len(swaps))
	for _, sw := range swaps {
		if seen[sw.Record.Name] {
			return storedriver.SwapMany(ctx, s, swaps)
		}
		seen[sw.Record.Name] = true
	}
	out := make([]store.SwapResult, len(swaps))
	err := s.forEach(ctx, indexes(len(swaps)), func(ctx context.Context, i int) error {
		rec, err := s.Swap(ctx, swaps[i])
		if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrInvalid) {
			return err
		}
		out[i] = store.SwapResult{Record: rec, Err: err}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// indexes returns 0, 1, ..., n-1.
func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// History implements store.Store, from the log tail the name's Lease
// keeps: events older than its last 64 are gone.
func (s *Store) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	o, err := s.read(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []store.Event
	for _, ev := range o.st.Log {
		if ev.Seq > after && (limit <= 0 || len(out) < limit) {
			ev.Name = name
			out = append(out, ev)
		}
	}
	return out, nil
}

// Heartbeat implements store.Store: the candidate rows live in the name's
// Lease too.
func (s *Store) Heartbeat(ctx context.Context, c store.Candidate) error {
	if c.Name == "" || c.Node == "" {
		return fmt.Errorf("%w: a candidate needs a name and a node", store.ErrInvalid)
	}
	if err := store.CheckName(c.Name); err != nil {
		return err
	}
	if err := store.CheckAttrs(c.Attrs); err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	_, err := s.update(ctx, c.Name, func(o *object) error {
		if c.Gone {
			if _, ok := o.st.Cands[c.Node]; !ok {
				return errNoWrite
			}
			delete(o.st.Cands, c.Node)
			return nil
		}
		now := s.now()
		cur, ok := o.st.Cands[c.Node]
		if !ok || cur.Incarnation != c.Incarnation {
			cur = store.Candidate{Node: c.Node, Incarnation: c.Incarnation, Since: now}
		}
		cur.Name = ""
		cur.Every, cur.Seen, cur.Attrs = c.Every, now, c.Attrs
		if o.st.Cands == nil {
			o.st.Cands = map[string]store.Candidate{}
		}
		o.st.Cands[c.Node] = cur
		o.st.Seq++
		return nil
	})
	return err
}

// Candidates implements store.Store; Age is measured by this process's
// clock (the API server's is not readable).
func (s *Store) Candidates(ctx context.Context, name string) ([]store.Candidate, error) {
	o, err := s.read(ctx, name)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]store.Candidate, 0, len(o.st.Cands))
	for _, c := range o.st.Cands {
		c.Name = name
		c.Age = now.Sub(c.Seen)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, nil
}

// listMany is the number of names from which GetMany lists their Leases
// by a selector rather than read each: at the client's rate limit
// (DefaultQPS) 1,000 reads take 20 s, longer than a batch may.
const listMany = 32

// selectorNames is the most names in one list's selector (about 18 bytes
// of the request's URL each).
const selectorNames = 500

// getByList answers GetMany from lists, each a quorum read: first the
// namespace's Leases without baton's name label (a Lease only client-go
// wrote, usually few), then the Leases of the names asked by their
// labels, selectorNames at a time. A Lease that baton labels between the
// two lists is in the second, so each name's answer is its Lease at one
// of them, after the call began; a name in neither has none.
func (s *Store) getByList(ctx context.Context, names []string) ([]store.GetResult, error) {
	want := make(map[string][]int, len(names))
	for i, name := range names {
		if err := store.CheckName(name); err != nil {
			return nil, err
		}
		want[objectName(name)] = append(want[objectName(name)], i)
	}
	out := make([]store.GetResult, len(names))
	found := make([]bool, len(names))
	take := func(selector string) error {
		opts := metav1.ListOptions{LabelSelector: selector, Limit: listPage}
		for {
			list, err := s.leases.List(ctx, opts)
			if err != nil {
				return s.apiError(ctx, "list", "", err)
			}
			for j := range list.Items {
				l := &list.Items[j]
				for _, i := range want[l.Name] {
					o, err := decode(names[i], l)
					if err != nil {
						return err
					}
					rec, ok := o.record()
					found[i] = ok
					out[i] = store.GetResult{Record: rec}
				}
			}
			if list.Continue == "" {
				return nil
			}
			opts.Continue = list.Continue
		}
	}
	if err := take("!" + labelName); err != nil {
		return nil, err
	}
	objs := make([]string, 0, len(want))
	for obj := range want {
		objs = append(objs, nameLabel(obj))
	}
	slices.Sort(objs)
	for len(objs) > 0 {
		n := min(len(objs), selectorNames)
		if err := take(labelName + " in (" + strings.Join(objs[:n], ",") + ")"); err != nil {
			return nil, err
		}
		objs = objs[n:]
	}
	for i, name := range names {
		if !found[i] {
			out[i] = store.GetResult{Err: fmt.Errorf("election %q: %w", name, store.ErrNotFound)}
		}
	}
	return out, nil
}
