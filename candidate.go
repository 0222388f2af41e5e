package baton

import "sync"

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
// it; won says the wait ended with a term, whose leader refreshes the row
// itself when a preference policy is set (lead, prefer.go): the row is
// then kept.
//
// Without a preference policy (WithPreference) the row is for people and
// operator checks only: the election itself never reads it, so a missing
// or stale row changes nothing about who may take over. With one, the row
// carries this node's attributes (WithCandidate) and is refreshed every
// renew interval, and the leader reads it to judge whom to hand over to,
// a waiting node (here, as often) whether to defer a takeover to a
// better live candidate.
func (e *Elector) candidate() (stop func(won bool)) {
	done := make(chan bool, 1)
	e.cands.add()
	go func() {
		defer e.cands.done()
		for {
			every := e.candidacyEvery()
			e.heartbeat(e.row(every))
			if e.pref.Load().on() {
				// The contender defers a takeover to a better live
				// candidate (election's deferral): it reads the rows as
				// often as the leader does.
				e.readCandidates()
			}
			t := e.cfg.clock.NewTimer(every)
			select {
			case <-t.C():
				continue
			case won := <-done:
				t.Stop()
				if won && e.pref.Load().on() {
					return // the leader refreshes it (lead)
				}
			}
			c := e.row(every)
			c.Gone = true
			e.heartbeat(c)
			return
		}
	}()
	var once sync.Once
	return func(won bool) { once.Do(func() { done <- won }) }
}
