package baton

import (
	"context"
	"errors"

	"github.com/batonhq/baton/store"
)

// CandidateEvery is how many poll intervals (WithPoll) a campaigning node
// waits between two refreshes of its candidate row (store.Heartbeat): the
// row that lets an operator see the waiting nodes ("baton status") and lets
// "baton transfer" refuse a node that is not campaigning. Readers treat a
// row as gone after store.StaleAfter missed refreshes. One write every five
// polls per waiting node keeps the store's write rate low.
const CandidateEvery = 5

// candidate keeps this node's candidate row fresh while a Campaign waits,
// and deletes it when the wait ends (won, cancelled or closed), all on its
// own goroutine: the election machine never sees it, a failed write only
// leaves the row stale, and ending it does not wait for the deletion (a
// new leader starts its work without waiting for that write; Run and
// Close wait for it before they return). It returns a function that ends
// it.
//
// The row is for people and operator checks only: the election itself
// never reads it, so a missing or stale row changes nothing about who may
// take over.
func (e *Elector) candidate() (stop func()) {
	every := CandidateEvery * e.cfg.poll
	done := make(chan struct{})
	c := store.Candidate{Name: e.name, Node: e.cfg.node, Incarnation: e.cfg.incarnation, Every: every}
	write := func(c store.Candidate) {
		ctx, cancel := context.WithTimeout(context.Background(), e.callTimeout())
		defer cancel()
		if err := e.st.Heartbeat(ctx, c); err != nil && !errors.Is(err, store.ErrInvalid) {
			e.cfg.logger.Debug("candidate row not written", "gone", c.Gone, "err", err)
		}
	}
	e.cands.Add(1)
	go func() {
		defer e.cands.Done()
		for {
			write(c)
			t := e.cfg.clock.NewTimer(every)
			select {
			case <-t.C():
				continue
			case <-done:
				t.Stop()
			}
			c.Gone = true
			write(c)
			return
		}
	}()
	return func() { close(done) }
}
