package memstore

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, name string) (store.Record, error) {
	var rec store.Record
	err := s.get(ctx, "", &rec, name)
	return rec, err
}

// Swap implements store.Store.
func (s *Store) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	var rec store.Record
	err := s.swap(ctx, "", &rec, &sw)
	return rec, err
}

// SwapMany implements store.Store.
func (s *Store) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	return s.own().SwapMany(ctx, swaps)
}

// GetMany implements store.Store.
func (s *Store) GetMany(ctx context.Context, names []string) ([]store.GetResult, error) {
	return s.own().GetMany(ctx, names)
}

// GetManyInto is GetMany for a caller that keeps each answer in a place
// of its own: at(i) says where the i-th name's record and error go, and
// each is written there once. It returns the error of the whole call (the
// store's faults), after which what it wrote is to be dropped. The
// simulator's batched reads use it: their answers, in a layout of the
// election machine's, would otherwise be copied out of a result slice
// record by record.
func (s *Store) GetManyInto(ctx context.Context, names []string, at func(i int) (*store.Record, *error)) error {
	c := client{s: s}
	return c.getManyInto(ctx, names, at)
}

// History implements store.Store.
func (s *Store) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	return s.own().History(ctx, name, after, limit)
}

// swapLocked applies the swap *sw, which it does not change, and writes
// the record it stored to *dst, left as it is on an error; s.mu must be
// held. A swap and a record are large: both are read and written in
// place, once.
func (s *Store) swapLocked(dst *store.Record, sw *store.Swap) error {
	// The record stored, looked up once: settleLocked rewrites it in
	// place, and so does the write.
	at := s.records[sw.Record.Name]
	var cur store.Record
	if at != nil {
		cur = *at
	}
	stored := cur.Version
	if cur.Session != "" && s.passesLocked(cur.Session) { // else settleLocked has nothing to settle: cur stands
		if err := s.settleLocked(sw.Record.Name); err != nil {
			return err
		}
		cur = *at
	}
	if s.succession.StoredVersion {
		cur.Version = stored // mutation: the version as stored before
	}
	// The token of the record as written, resolved (store.Resolve): only
	// a record held through a session that names a successor changes.
	next := sw.Record.Token
	if sw.Record.Session != "" && s.passesLocked(sw.Record.Session) {
		res, err := store.Resolve(sw.Record, s.sessionLocked, nil)
		if err != nil {
			return err
		}
		next = res.Token
	}
	var none store.Record // the successor when there is none
	successor, ok := &none, false
	if sw.Record.Successor != "" { // else neither check nor write reads it
		if p := s.records[sw.Record.Successor]; p != nil {
			successor, ok = p, true
		}
	}
	if err := storedriver.CheckSuccessionSwapAt(&cur, sw, next, successor, ok); err != nil {
		return err
	}
	s.version++
	if at == nil {
		at = new(store.Record)
		s.records[sw.Record.Name] = at
	}
	rec := at // written in place, then copied once to *dst
	*rec = sw.Record
	if rec.Successor != "" || rec.SuccessorHolder != "" || rec.SuccessorIncarnation != "" {
		// Else WithSuccessor would change nothing (it sets only those
		// two fields, to "" without a Successor), and copy three records.
		*rec = storedriver.WithSuccessor(*rec, cur, *successor)
	}
	rec.Via = "" // a swap's is ignored (no check reads it)
	rec.Version = s.version
	rec.Updated = s.now()
	if sw.Event != "" {
		log := s.logs[rec.Name]
		s.logs[rec.Name] = append(log, storedriver.NextEvent(uint64(len(log))+1, *rec, sw.Event))
	}
	s.notifyLocked(rec.Name, rec.Version)
	*dst = *rec
	return nil
}

func (c *client) Get(ctx context.Context, name string) (store.Record, error) {
	var rec store.Record
	err := c.s.get(ctx, c.node, &rec, name)
	return rec, err
}

// get is Get through node's view (Client), into *dst: the record copied
// once from the store, where the caller returns it, and the zero record on
// an error.
func (s *Store) get(ctx context.Context, node string, dst *store.Record, name string) error {
	if err := s.enter(ctx, node); err != nil {
		return err
	}
	s.mu.Lock()
	ok, err := s.resolveTo(dst, name)
	s.mu.Unlock()
	if lerr := s.leave(ctx, node); lerr != nil {
		err = lerr
	} else if err == nil && !ok {
		err = &notFound{name}
	}
	if err != nil {
		*dst = store.Record{}
	}
	return err
}

func (c *client) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	var rec store.Record
	err := c.s.swap(ctx, c.node, &rec, &sw)
	return rec, err
}

// swap is Swap through node's view (Client), into *dst (the zero record
// on an error). serve's steps, written out: its closure would copy the
// swap once more, and the simulator swaps at every renewal.
func (s *Store) swap(ctx context.Context, node string, dst *store.Record, sw *store.Swap) error {
	if err := s.enter(ctx, node); err != nil {
		return err
	}
	s.mu.Lock()
	err := s.swapLocked(dst, sw)
	s.mu.Unlock()
	if lerr := s.leave(ctx, node); lerr != nil {
		err = lerr
	}
	if err != nil {
		*dst = store.Record{}
	}
	return err
}

func (c *client) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	return c.swapMany(ctx, make([]store.SwapResult, 0, len(swaps)), swaps)
}

// SwapManyAppend is SwapMany with the results appended to dst (pass dst[:0]
// to reuse a slice), for a caller that writes in a loop and is done with
// one write's results before the next: the simulator's batched writes.
func (s *Store) SwapManyAppend(ctx context.Context, dst []store.SwapResult, swaps []store.Swap) ([]store.SwapResult, error) {
	c := client{s: s}
	return c.swapMany(ctx, dst, swaps)
}

// swapMany is SwapMany, its results appended to res.
func (c *client) swapMany(ctx context.Context, res []store.SwapResult, swaps []store.Swap) ([]store.SwapResult, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	for i := range swaps {
		res = append(res, store.SwapResult{})
		r := &res[len(res)-1]
		r.Err = c.s.swapLocked(&r.Record, &swaps[i])
	}
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return nil, err
	}
	return res, nil
}

func (c *client) GetMany(ctx context.Context, names []string) ([]store.GetResult, error) {
	return c.getMany(ctx, make([]store.GetResult, 0, len(names)), names)
}

// getMany is GetMany, its results appended to res.
func (c *client) getMany(ctx context.Context, res []store.GetResult, names []string) ([]store.GetResult, error) {
	k := len(res)
	res = slices.Grow(res, len(names))[:k+len(names)]
	err := c.getManyInto(ctx, names, func(i int) (*store.Record, *error) {
		r := &res[k+i] // the record written once, in place
		return &r.Record, &r.Err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// getManyInto is GetManyInto: one call, each record resolved once into
// the place at gives for it.
func (c *client) getManyInto(ctx context.Context, names []string, at func(i int) (*store.Record, *error)) error {
	if err := c.s.enter(ctx, c.node); err != nil {
		return err
	}
	c.s.mu.Lock()
	var err error
	for i, n := range names {
		rec, rerr := at(i)
		if p := c.s.records[n]; p != nil && p.Session == "" {
			*rec, *rerr = *p, nil // resolveTo's common case, written out: the record as stored
			continue
		}
		var ok bool
		if ok, err = c.s.resolveTo(rec, n); err != nil { // resolveTo writes the whole record
			break
		}
		*rerr = nil
		if !ok {
			*rerr = &notFound{n}
		}
	}
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return err
	}
	return err
}

func (c *client) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	var out []store.Event
	log := c.s.logs[name]
	raw, _ := c.s.stored(name)
	implied, err := c.s.impliedLocked(raw)
	if len(implied) > 0 {
		// Shown with the numbers the name's next write stores them under.
		log = append(log[:len(log):len(log)], implied...)
	}
	// The events after after, found by their numbers, which increase
	// along the log (the simulator's checker reads a long log's few new
	// events after every write).
	from := sort.Search(len(log), func(i int) bool { return log[i].Seq > after })
	for _, ev := range log[from:] {
		if limit <= 0 || len(out) < limit {
			out = append(out, ev)
		}
	}
	c.s.mu.Unlock()
	if lerr := c.s.leave(ctx, c.node); lerr != nil {
		return nil, lerr
	}
	return out, err
}

// candKey identifies a candidate row.
type candKey struct{ name, node string }

// Heartbeat implements store.Store.
func (s *Store) Heartbeat(ctx context.Context, c store.Candidate) error {
	return s.own().Heartbeat(ctx, c)
}

// Candidates implements store.Store.
func (s *Store) Candidates(ctx context.Context, name string) ([]store.Candidate, error) {
	return s.own().Candidates(ctx, name)
}

func (c *client) Heartbeat(ctx context.Context, cand store.Candidate) error {
	if cand.Name == "" || cand.Node == "" {
		return fmt.Errorf("%w: a candidate needs a name and a node", store.ErrInvalid)
	}
	if err := store.CheckAttrs(cand.Attrs); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	if err := c.s.enter(ctx, c.node); err != nil {
		return err
	}
	c.s.mu.Lock()
	k := candKey{cand.Name, cand.Node}
	if cand.Gone {
		delete(c.s.cands, k)
	} else {
		now := c.s.now()
		cur, ok := c.s.cands[k]
		if !ok || cur.Incarnation != cand.Incarnation {
			cur = store.Candidate{Name: cand.Name, Node: cand.Node, Incarnation: cand.Incarnation, Since: now}
		}
		cur.Every, cur.Seen, cur.Attrs = cand.Every, now, cand.Attrs
		c.s.cands[k] = cur
	}
	c.s.mu.Unlock()
	return c.s.leave(ctx, c.node)
}

func (c *client) Candidates(ctx context.Context, name string) ([]store.Candidate, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	now := c.s.now()
	var out []store.Candidate
	for k, cand := range c.s.cands {
		if k.name == name {
			cand.Age = now.Sub(cand.Seen)
			out = append(out, cand)
		}
	}
	c.s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, c.s.leave(ctx, c.node)
}

// notFound is the error of a read of an election record that is not
// there: fmt.Errorf("election %q: %w", name, store.ErrNotFound), its
// message formatted only when it is read (a contender reads names before
// they are first written, and the simulator reads them often).
type notFound struct{ name string }

// Error is the message fmt.Errorf made: `election "name": ` and
// store.ErrNotFound's.
func (e *notFound) Error() string { return fmt.Sprintf("election %q: %v", e.name, store.ErrNotFound) }

// Unwrap makes errors.Is(err, store.ErrNotFound) hold.
func (e *notFound) Unwrap() error { return store.ErrNotFound }
