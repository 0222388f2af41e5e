package kube

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/batonhq/baton/internal/bound"
)

// DefaultSessionHold is the leaseDurationSeconds written on the Lease of a
// name held through a session (baton.Group), where the URL or
// WithSessionHold sets none. See "Names held through a session" in the
// package doc: it is how long a client-go candidate of such a name waits
// after the holder's process died, and what makes a session's renewal
// one write whatever its number of names.
const DefaultSessionHold = time.Hour

// holdSlack is what a name's Lease must cover past a session term's
// deadline: one second because client-go sees renewTime in whole seconds
// (two writes within a second look like one), one more for the rates of
// the clocks involved.
const holdSlack = 2 * time.Second

// holdSeconds is the leaseDurationSeconds of a name held through a session
// at lease: the store's session hold, and never less than a lease plus the
// slack and a second, so that a write covers at least one renewal.
func holdSeconds(hold, lease time.Duration) int32 {
	d := max(hold, bound.Add(lease, holdSlack+time.Second)) // saturated: a hostile record's lease
	return int32(min(math.Ceil(d.Seconds()), math.MaxInt32))
}

// holdPlan is what a session's names need from a renewal at now that
// extends the session's terms to at most now + lease, given when each
// name's Lease spec was last written (written, on this process's clock;
// a Lease protects its holder from client-go for its leaseDurationSeconds,
// secs, after it was written). must are the names whose Lease would run
// out for client-go before those terms end (plus holdSlack): the renewal
// succeeds only once they are written. soon are the names past half of
// the time they may wait before that, to be written in the background so
// that must stays empty. Both are oldest first.
func holdPlan(written map[string]time.Time, now time.Time, lease time.Duration, secs int32) (must, soon []string) {
	d := time.Duration(secs) * time.Second
	wait := d - holdSlack - lease // how long after a write a renewal may still lean on it (d > lease + holdSlack: holdSeconds)
	for name, w := range written {
		age := now.Sub(w)
		switch {
		case age >= wait:
			must = append(must, name)
		case age >= wait/2:
			soon = append(soon, name)
		}
	}
	oldest := func(a, b string) int {
		if c := written[a].Compare(written[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	slices.SortFunc(must, oldest)
	slices.SortFunc(soon, oldest)
	return must, soon
}

// holds is the store's index of the names held through each session, and
// when their Leases' specs were last written (their renewTime, which
// baton writes from its own clock before the write is sent): a session's
// renewal writes its one Lease and consults this instead of writing every
// name's. Every write of this store keeps it current (noteWrite); a
// session's first renewal in this process, and then every quarter of the
// hold, lists the session's Leases to learn of writes made elsewhere.
type holds struct {
	mu       sync.Mutex
	sessions map[string]*sessionHold
	owner    map[string]string // name -> the session it is indexed under
	closed   bool              // the store is closed: no new background write
}

type sessionHold struct {
	written    map[string]time.Time
	listed     time.Time // when the session's Leases were last listed (zero: never)
	refreshing bool      // a background refresh runs
}

// noteWrite indexes name as its Lease o is after a write or a read: held
// through a session, its spec written at at (on this process's clock,
// monotonic where it can be, so that a step of the wall clock does not
// make an old write look young), or not held through one.
func (h *holds) noteWrite(name string, o object, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	session := ""
	if r := o.st.Rec; !o.foreign && r != nil && r.Holder != "" && r.Session != "" && specHolder(o) != "" {
		session = r.Session
	}
	if prev, ok := h.owner[name]; ok && prev != session {
		if sh := h.sessions[prev]; sh != nil {
			delete(sh.written, name)
		}
		delete(h.owner, name)
	}
	if session == "" {
		return
	}
	sh := h.session(session)
	if w, ok := sh.written[name]; !ok || at.After(w) {
		sh.written[name] = at
	}
	h.owner[name] = session
}

// specHolder is the holder o's Lease spec names ("": none).
func specHolder(o object) string {
	if o.lease == nil || o.lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *o.lease.Spec.HolderIdentity
}

// has reports whether name is indexed under session.
func (h *holds) has(session, name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.owner[name] == session
}

// session returns session's entry, making it. Callers hold h.mu.
func (h *holds) session(session string) *sessionHold {
	if h.sessions == nil {
		h.sessions, h.owner = map[string]*sessionHold{}, map[string]string{}
	}
	sh := h.sessions[session]
	if sh == nil {
		sh = &sessionHold{written: map[string]time.Time{}}
		h.sessions[session] = sh
	}
	return sh
}

// forget drops session's entry (its record deleted or released) and
// returns the names it had.
func (h *holds) forget(session string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	sh := h.sessions[session]
	if sh == nil {
		return nil
	}
	names := make([]string, 0, len(sh.written))
	for name := range sh.written {
		delete(h.owner, name)
		names = append(names, name)
	}
	delete(h.sessions, session)
	return names
}

// holdNames is the part of a session's renewal that concerns its names,
// after the session's record was written at now with lease: the names
// whose Leases would run out for client-go before the renewed terms end
// are written now, and the renewal fails if one cannot be; the names
// getting old are written in the background.
func (s *Store) holdNames(ctx context.Context, session string, now time.Time, lease time.Duration) error {
	secs := holdSeconds(s.sessionHold, lease)
	s.holds.mu.Lock()
	sh := s.holds.session(session)
	first := sh.listed.IsZero()
	s.holds.mu.Unlock()
	if first {
		// The session's first renewal here: names written through it
		// before (by another process's store) are learnt now.
		if err := s.listSession(ctx, session); err != nil {
			return err
		}
	}
	s.holds.mu.Lock()
	must, soon := holdPlan(sh.written, now, lease, secs)
	relist := now.Sub(sh.listed) >= time.Duration(secs)*time.Second/4
	start := (len(soon) > 0 || relist) && !sh.refreshing && !s.holds.closed
	if start {
		sh.refreshing = true
		s.bg.Add(1) // under the lock that Close takes before it waits
	}
	s.holds.mu.Unlock()
	if err := s.forEach(ctx, indexes(len(must)), func(ctx context.Context, i int) error {
		return s.rewriteHeld(ctx, session, must[i], nil)
	}); err != nil {
		return err
	}
	if start {
		go s.refreshSession(session, lease, secs)
	}
	return nil
}

// listSession indexes the Leases of the names held through session, from
// one list by its label.
func (s *Store) listSession(ctx context.Context, session string) error {
	now := s.now()
	selector := labelSelector + "," + labelSession + "=" + sessionLabel(session)
	err := s.eachLease(ctx, selector, func(name string, l *coordinationv1.Lease) error {
		o, err := decode(name, l)
		if err != nil || l.Spec.RenewTime == nil {
			return nil // a damaged Lease is its reader's error, not the renewal's
		}
		// Its age by the wall clock, taken from this process's clock
		// reading now (which is monotonic).
		at := s.now()
		s.holds.noteWrite(name, o, at.Add(-at.Sub(l.Spec.RenewTime.Time)))
		return nil
	})
	if err != nil {
		return err
	}
	s.holds.mu.Lock()
	s.holds.session(session).listed = now
	s.holds.mu.Unlock()
	return nil
}

// rewriteHeld writes name's Lease spec again (a new renewTime) if it is
// still held through session; first is the Lease if just read (nil: read
// it). A Lease that another writer took, or that no longer points at the
// session, is left alone and leaves the index.
func (s *Store) rewriteHeld(ctx context.Context, session, name string, first *coordinationv1.Lease) error {
	_, err := s.updateFrom(ctx, name, first, func(o *object) error {
		if r := o.st.Rec; o.foreign || r == nil || r.Holder == "" || r.Session != session || specHolder(*o) == "" {
			s.holds.noteWrite(name, *o, time.Time{})
			return errNoWrite
		}
		if !s.holds.has(session, name) {
			return errNoWrite // the session was released meanwhile (releaseNames)
		}
		o.recWritten = true // the spec again, with a new renewTime
		return nil
	})
	return err
}

// releaseNames writes, in the background, the Lease of every name held
// through session, which was just released, with no holder: for baton a
// name of a released session is free at once, and so it becomes for
// client-go's candidates, which read the name's own Lease only. The
// record in the state stays as it is. Close waits for this a little
// (closeGrace); what it does not finish leaves those names to client-go
// after the session hold, as if the process had died.
func (s *Store) releaseNames(session string) {
	known := s.holds.forget(session)
	s.holds.mu.Lock()
	if s.holds.closed {
		s.holds.mu.Unlock()
		return
	}
	s.bg.Add(1) // under the lock that Close takes before it waits
	s.holds.mu.Unlock()
	go func() {
		defer s.bg.Done()
		ctx := s.bgCtx
		names := map[string]bool{}
		for _, n := range known {
			names[n] = true
		}
		selector := labelSelector + "," + labelSession + "=" + sessionLabel(session)
		_ = s.eachLease(ctx, selector, func(name string, _ *coordinationv1.Lease) error {
			names[name] = true
			return nil
		})
		all := make([]string, 0, len(names))
		for n := range names {
			all = append(all, n)
		}
		_ = s.forEach(ctx, indexes(len(all)), func(ctx context.Context, i int) error {
			_, err := s.update(ctx, all[i], func(o *object) error {
				if r := o.st.Rec; o.foreign || r == nil || r.Holder == "" || r.Session != session || specHolder(*o) == "" {
					return errNoWrite
				}
				o.recWritten, o.sessionGone = true, true
				return nil
			})
			return err
		})
	}()
}

// closeGrace is how long Close waits for the background writes of a
// released session's names (releaseNames) before it stops them.
const closeGrace = 5 * time.Second

// refreshSession lists session's Leases again if a quarter of the hold
// passed since it last did, then writes, one at a time and oldest first,
// the Leases of its names that are getting old, until none is (or the
// store is closed, or the session is gone from the index), so that its
// renewals find nothing they must write. A failed write is left to the
// next renewal, which starts this again or writes the name itself.
func (s *Store) refreshSession(session string, lease time.Duration, secs int32) {
	defer s.bg.Done()
	defer func() {
		s.holds.mu.Lock()
		if sh := s.holds.sessions[session]; sh != nil {
			sh.refreshing = false
		}
		s.holds.mu.Unlock()
	}()
	s.holds.mu.Lock()
	relist := false
	if sh := s.holds.sessions[session]; sh != nil {
		relist = s.now().Sub(sh.listed) >= time.Duration(secs)*time.Second/4
	}
	s.holds.mu.Unlock()
	if relist && s.listSession(s.bgCtx, session) != nil {
		return
	}
	for s.bgCtx.Err() == nil {
		s.holds.mu.Lock()
		sh := s.holds.sessions[session]
		if s.holds.closed {
			sh = nil
		}
		var next []string
		if sh != nil {
			must, soon := holdPlan(sh.written, s.now(), lease, secs)
			next = append(must, soon...)
		}
		s.holds.mu.Unlock()
		if len(next) == 0 {
			return
		}
		if err := s.rewriteHeld(s.bgCtx, session, next[0], nil); err != nil {
			return
		}
	}
}

// forEach calls fn with each of items, up to parallelWrites at a time,
// and returns the first error in items' order (the others still run to
// their end).
func (s *Store) forEach(ctx context.Context, items []int, fn func(ctx context.Context, item int) error) error {
	if len(items) == 1 {
		return fn(ctx, items[0])
	}
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallelWrites)
	for i, item := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(ctx, item)
		}()
	}
	wg.Wait()
	return firstErr(errs)
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// parallelWrites is how many requests one call of the store (a SwapMany,
// a GetMany, a session's renewal) has in flight at once; the client's
// rate limit (DefaultQPS) still bounds them.
const parallelWrites = 16
