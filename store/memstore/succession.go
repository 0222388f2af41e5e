package memstore

import (
	"context"
	"slices"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

var (
	_ store.Succeeder = (*Store)(nil)
	_ store.Succeeder = (*client)(nil)
)

// sessionLocked is store.Resolve's view of the stored session records.
func (s *Store) sessionLocked(name string) (store.Record, bool) {
	return s.stored(name)
}

// resolveLocked returns the record of name as the store shows it
// (store.Resolve) and whether there is one; s.mu must be held.
func (s *Store) resolveLocked(name string) (store.Record, bool, error) {
	var rec store.Record
	ok, err := s.resolveTo(&rec, name)
	return rec, ok, err
}

// resolveTo is resolveLocked into *dst (the zero record when there is
// none, or on an error): a batched read writes each record once, in its
// result.
func (s *Store) resolveTo(dst *store.Record, name string) (bool, error) {
	// Copied once, where the caller wants it. Small enough to be
	// inlined into every read.
	p := s.records[name]
	if p == nil || p.Session != "" {
		return s.resolveHeld(dst, p)
	}
	*dst = *p
	return true, nil // the common case, inlined: the record as stored
}

// resolveHeld is resolveTo of the stored record *p when there is none (p
// nil) or it is held through a session.
func (s *Store) resolveHeld(dst *store.Record, p *store.Record) (bool, error) {
	if p == nil {
		*dst = store.Record{}
		return false, nil
	}
	*dst = *p
	if !s.passesLocked(dst.Session) {
		return true, nil // the record as stored
	}
	rec, err := s.resolve(*dst, nil)
	*dst = rec
	return true, err
}

// passesLocked reports whether a record held through the session record
// session may be passed on by a succession: that record names a
// successor. store.Resolve returns every other record as it is (a record
// held "through one without a successor"), so a read or a write need not
// copy it through Resolve; s.mu must be held.
func (s *Store) passesLocked(session string) bool {
	p := s.records[session]
	return p != nil && p.Successor != ""
}

// resolve is store.Resolve on the stored records (s.mu held), with the
// simulator's NoRaise mutation when it is set.
func (s *Store) resolve(raw store.Record, passed func(now, dead store.Record)) (store.Record, error) {
	if s.succession.NoRaise && passed != nil {
		inner := passed
		passed = func(now, dead store.Record) { now.Token = raw.Token; inner(now, dead) }
	}
	rec, err := store.Resolve(raw, s.sessionLocked, passed)
	if s.succession.NoRaise && err == nil {
		rec.Token = raw.Token
	}
	return rec, err
}

// impliedLocked returns the log events that the successions rec's stored
// record was passed on by imply, numbered after the stored log.
func (s *Store) impliedLocked(raw store.Record) ([]store.Event, error) {
	if raw.Session == "" || !s.passesLocked(raw.Session) {
		return nil, nil // no succession passed it on: no closure made
	}
	var evs []store.Event
	seq := uint64(len(s.logs[raw.Name]))
	_, err := s.resolve(raw, func(now, dead store.Record) {
		seq++
		evs = append(evs, storedriver.SuccessionEvent(seq, now, dead))
	})
	return evs, err
}

// settleLocked rewrites the stored record of name in its resolved form
// when a succession passed it on, and appends the succession's log events:
// the first write of a name after a succession does it before its own.
// Nothing a reader sees changes (the resolved record is the same, its
// version included; the events were shown by History already).
func (s *Store) settleLocked(name string) error {
	raw, ok := s.stored(name)
	if !ok || raw.Session == "" || store.IsSession(name) {
		return nil
	}
	evs, err := s.impliedLocked(raw)
	if err != nil || len(evs) == 0 {
		return err
	}
	rec, err := s.resolve(raw, nil)
	if err != nil {
		return err
	}
	rec.Via = ""
	s.storeLocked(name, &rec)
	s.logs[name] = append(s.logs[name], evs...)
	return nil
}

// referencedLocked reports whether a stored record points at the session
// record name: a name held through it, or a dead session it succeeded.
func (s *Store) referencedLocked(name string) bool {
	for _, r := range s.records {
		if r.Session == name || r.Successor == name {
			return true
		}
	}
	return false
}

// chainIntoLocked is storedriver.ChainInto over the stored session
// records, as a set: session and the dead sessions whose chain of
// successors reaches it (store.Succeeder.HeldThrough).
func (s *Store) chainIntoLocked(session string) map[string]bool {
	successors := map[string]string{}
	for n, r := range s.records {
		if store.IsSession(n) && r.Successor != "" {
			successors[n] = r.Successor
		}
	}
	set := map[string]bool{}
	for _, n := range storedriver.ChainInto(session, successors) {
		set[n] = true
	}
	return set
}

// HeldThrough implements store.Succeeder.
func (s *Store) HeldThrough(ctx context.Context, session, after string, limit int) ([]store.Record, error) {
	return s.own().HeldThrough(ctx, session, after, limit)
}

// HeldThrough implements store.Succeeder.
func (c *client) HeldThrough(ctx context.Context, session, after string, limit int) ([]store.Record, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	chain := c.s.chainIntoLocked(session)
	var names []string
	for n, r := range c.s.records {
		if n > after && !store.IsSession(n) && chain[r.Session] {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if limit > 0 && len(names) > limit {
		names = names[:limit]
	}
	out := make([]store.Record, 0, len(names))
	var err error
	for _, n := range names {
		var rec store.Record
		if rec, _, err = c.s.resolveLocked(n); err != nil {
			break
		}
		out = append(out, rec)
	}
	c.s.mu.Unlock()
	if lerr := c.s.leave(ctx, c.node); lerr != nil {
		return nil, lerr
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Settle implements store.Succeeder.
func (s *Store) Settle(ctx context.Context, session string, limit int) (int, error) {
	return s.own().Settle(ctx, session, limit)
}

// Settle implements store.Succeeder.
func (c *client) Settle(ctx context.Context, session string, limit int) (int, error) {
	return serve(ctx, c, func() (int, error) {
		dead, ok := c.s.stored(session)
		if !ok || !store.IsSession(session) || !dead.Free() || dead.Successor == "" {
			return 0, nil
		}
		var names []string
		for n, r := range c.s.records {
			if r.Session == session && !store.IsSession(n) {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		if limit > 0 && len(names) > limit {
			names = names[:limit]
		}
		for i, n := range names {
			stored := c.s.records[n].Token // n was listed: it has a record
			if err := c.s.settleLocked(n); err != nil {
				return i, err
			}
			if m := c.s.succession; m.SettleStoredToken || m.SettleNewVersion {
				rec := *c.s.records[n]
				if m.SettleStoredToken {
					rec.Token = stored
				}
				if m.SettleNewVersion {
					c.s.version++
					rec.Version = c.s.version
					c.s.notifyLocked(n, rec.Version)
				}
				c.s.storeLocked(n, &rec)
			}
		}
		return len(names), nil
	})
}

// LongestSuccession returns the most sessions that the resolution of an
// election record passes now (store.Resolve's hops): the longest chain of
// successions not settled yet. For the simulator's coverage.
func (s *Store) LongestSuccession() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	longest := 0
	for n, r := range s.records {
		if r.Session == "" || store.IsSession(n) {
			continue
		}
		hops := 0
		store.Resolve(*r, s.sessionLocked, func(_, _ store.Record) { hops++ })
		longest = max(longest, hops)
	}
	return longest
}

// tokenLocked is the resolved token of the election record name, 0 when
// there is none: what a fenced ledger write is compared with.
func (s *Store) tokenLocked(name string) (uint64, error) {
	p := s.records[name]
	if p == nil {
		return 0, nil
	}
	if p.Session == "" || !s.passesLocked(p.Session) {
		return p.Token, nil // as stored (resolveTo's common case), not copied
	}
	rec, _, err := s.resolveLocked(name)
	return rec.Token, err
}
