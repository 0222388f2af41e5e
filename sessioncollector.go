package baton

import (
	"context"
	"errors"
	"time"

	"github.com/batonhq/baton/store"
)

// collectBatch is how many session records a Group reads, and at most
// deletes, per round of collection.
const collectBatch = 100

// sessionCollector deletes the dead session records that processes leave behind
// (one per restart or lost session), a small batch per round
// (Store.NamesPage, Store.DeleteSession). It deletes only a
// session record that is free (dead: it never becomes held again, and the
// store refuses to delete a held one), once it is past the grace: seen
// free, at the same version, for longer than the grace on this process's
// own clock, or written free longer than the grace ago by store time (so
// that a process that lives shorter than the grace, in a crash loop,
// still collects the sessions its predecessors left). Safety does not rest
// on the grace or on any clock: a free session record may be deleted at
// any age (one passed on by a succession only once no record points at
// it: the collector settles its names first, and the store refuses the
// delete while one still does, so this looks again next pass); the
// grace only lets an operator see a session that just ended.
// Deleting it loses nothing: the names that point at it keep their records
// and tokens and may be taken at once with token + 1, and the election log
// keeps the session's events.
//
// A session whose holder died without a contender stays held until a
// contender for one of its names ends it; then it is collected.
type sessionCollector struct {
	st    store.Store
	clock Clock
	every time.Duration // between rounds once a pass is complete
	pause time.Duration // between the rounds of one pass
	grace time.Duration

	seen   map[string]seenFree // free session records seen, by name
	pass   map[string]seenFree // those seen in the pass under way
	cursor string
	count  func(int) // deleted n
}

// seenFree is when the collector first saw a session record free at a
// version.
type seenFree struct {
	version int64
	since   time.Time
}

// newSessionCollector returns the collector of a Group on st.
func newSessionCollector(st store.Store, cfg config, count func(int)) *sessionCollector {
	return &sessionCollector{st: st, clock: cfg.clock,
		every: 4 * cfg.lease, pause: cfg.lease, grace: cfg.lease + 2*cfg.margin + 4*cfg.lease,
		seen: map[string]seenFree{}, pass: map[string]seenFree{}, count: count}
}

// run collects until ctx ends.
func (c *sessionCollector) run(ctx context.Context) {
	wait := c.pause // the first round soon: a process may not live long
	for {
		t := c.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		more, err := c.round(ctx)
		switch {
		case err != nil || !more:
			wait = c.every
		default:
			wait = c.pause
		}
	}
}

// settleBatch is how many names a collector settles per store call.
const settleBatch = 1000

// settle rewrites every name that points at the dead session name, passed
// on by a succession, to point at its successor (store.Succeeder.Settle),
// so that the session can be deleted and chains of successions stay short
// however many failovers come. Nothing a process acts on changes, so it
// races with nobody. It costs one store write per settleBatch names, once
// per succession, long after the takeover (past the grace). A chain the
// store refuses as corrupt (ErrInvalid) is left as it is: the session is
// then not deleted (the store refuses it), and the other sessions are.
func (c *sessionCollector) settle(ctx context.Context, name string) error {
	h, ok := store.SucceederOf(c.st)
	if !ok {
		return nil
	}
	for {
		n, err := h.Settle(ctx, name, settleBatch)
		switch {
		case errors.Is(err, store.ErrInvalid):
			return nil
		case err != nil:
			return err
		case n < settleBatch:
			return nil
		}
	}
}

// round reads one batch of session records and deletes the ones dead for
// longer than the grace. It reports whether the pass has more batches.
func (c *sessionCollector) round(ctx context.Context) (more bool, err error) {
	names, err := c.st.NamesPage(ctx, store.NameQuery{After: c.cursor, Prefix: store.SessionPrefix, Limit: collectBatch})
	if err != nil {
		return false, err
	}
	recs := make([]*store.Record, len(names))
	if len(names) > 0 {
		res, err := c.st.GetMany(ctx, names)
		if err != nil {
			return false, err
		}
		for i, r := range res {
			if r.Err == nil {
				rec := r.Record
				recs[i] = &rec
			}
		}
	}
	now := c.clock.Now()
	storeNow := time.Now()
	if ts, ok := store.TimeSourceOf(c.st); ok {
		if storeNow, err = ts.StoreTime(ctx); err != nil {
			return false, err
		}
	}
	deleted := 0
	for i, n := range names {
		r := recs[i]
		if r == nil || !r.Free() {
			continue
		}
		s, ok := c.seen[n]
		if !ok || s.version != r.Version {
			s = seenFree{version: r.Version, since: now}
		}
		if now.Sub(s.since) <= c.grace && storeNow.Sub(r.Updated) <= c.grace {
			c.pass[n] = s
			continue
		}
		if r.Successor != "" {
			if err := c.settle(ctx, n); err != nil {
				return false, err
			}
		}
		err := c.st.DeleteSession(ctx, n, r.Version)
		switch {
		case err == nil:
			deleted++
		case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalid):
			// Changed or gone since the read: look again next pass.
		default:
			return false, err
		}
	}
	if deleted > 0 {
		c.count(deleted)
	}
	if len(names) < collectBatch {
		c.cursor, c.seen, c.pass = "", c.pass, map[string]seenFree{}
		return false, nil
	}
	c.cursor = names[len(names)-1]
	for n, s := range c.seen { // keep what later batches of the pass will look at
		if n > c.cursor {
			c.pass[n] = s
		}
	}
	return true, nil
}
