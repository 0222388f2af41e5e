package kube

import (
	"context"
	"fmt"
	"sort"

	coordinationv1 "k8s.io/api/coordination/v1"

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
	if store.IsSession(rec.Name) && rec.Holder != "" {
		// The names held through the session are renewed with it, for
		// client-go's candidates (see renewNames); until they are, the
		// session's renewal has not succeeded.
		if err := s.renewNames(ctx, rec.Name); err != nil {
			return store.Record{}, fmt.Errorf("kube: session %q written, the Leases of its names not all renewed: %w", rec.Name, err)
		}
	}
	return rec, nil
}

// renewNames writes the renewTime of every name's Lease held through
// session, after the session's renewal: client-go's elector reads a
// name's own Lease only, and takes it over once its spec stayed the same
// for leaseDurationSeconds. A Lease is rewritten from its record as it
// is (the record's version does not change, so its holder's next write
// does not conflict); one that another writer took, or that no longer
// points at the session, is left alone. It costs a list and a write per
// name, at every renewal of the session.
func (s *Store) renewNames(ctx context.Context, session string) error {
	selector := labelSelector + "," + labelSession + "=" + sessionLabel(session)
	return s.eachLease(ctx, selector, func(name string, l *coordinationv1.Lease) error {
		_, err := s.updateFrom(ctx, name, l, func(o *object) error {
			if r := o.st.Rec; o.foreign || r == nil || r.Holder == "" || r.Session != session {
				return errNoWrite
			}
			o.recWritten = true // the spec again, with a new renewTime
			return nil
		})
		return err
	})
}

// GetMany implements store.Store: one read per name (storedriver.GetMany).
func (s *Store) GetMany(ctx context.Context, names []string) ([]store.GetResult, error) {
	return storedriver.GetMany(ctx, s, names)
}

// SwapMany implements store.Store: one write per swap (storedriver.SwapMany).
func (s *Store) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	return storedriver.SwapMany(ctx, s, swaps)
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
