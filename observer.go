package baton

import (
	"errors"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// Observer is told what Electors and Groups do, for metrics:
// batonprom.Metrics implements it (and schedule.Observer), so the root
// package links no metrics stack. Its methods are called from the
// Elector's or Group's loop goroutine, in the order things happened, and
// must return quickly; they must not call back into the Elector or Group.
//
// The Elector methods are named by the election name; a Group reports in
// aggregate, with no name, so that 100,000 names cost no more than one.
type Observer interface {
	// Campaigning says the Elector of name started campaigning (Campaign
	// or Run), with its lease.
	Campaigning(name string, lease time.Duration)
	// Idle says the Elector of name stopped campaigning.
	Idle(name string)
	// StoreCall says a store call of the Elector of name was answered at
	// at, on the Elector's clock: err is nil when the store answered (a
	// compare-and-swap conflict or a missing record is an answer) and the
	// failure when the call failed.
	StoreCall(name string, at time.Time, err error)
	// Elected says the Elector of name won a term with token.
	Elected(name string, token uint64)
	// Renewal says a renewal write of the term of name was answered
	// (successfully or not) latency after it was sent.
	Renewal(name string, latency time.Duration)
	// Extended says a renewal of the term of name succeeded with left of
	// the lease still to run, before the renewal moved the deadline.
	Extended(name string, left time.Duration)
	// Lost says the term of name ended with cause (ErrLeaseExpired,
	// ErrDeposed, ErrResigned, ErrStoreLost, or another error when the
	// Elector stopped).
	Lost(name string, cause error)

	// GroupElected says a Group won a term of one of its names.
	GroupElected()
	// GroupLost says a term of a Group's name ended with cause, as Lost.
	GroupLost(cause error)
	// GroupStoreError says a store call of a Group failed (a conflict or
	// a missing record is an answer, not an error).
	GroupStoreError(err error)
	// SessionRenewal says a Group's session renewal write was answered
	// latency after it was sent.
	SessionRenewal(latency time.Duration)
}

// WithObserver makes the Elector report its campaigns, terms, renewals and
// store errors to o, and a Group the aggregates over its names (default:
// nil, no observer).
func WithObserver(o Observer) Option {
	return func(c *config) error {
		c.obs = nil
		if o != nil {
			c.obs = &observing{o: o}
		}
		return nil
	}
}

// observing turns one Elector's or Group's machine steps into Observer
// calls. It is used from the loop goroutine only; a nil *observing
// observes nothing.
type observing struct {
	o           Observer
	deadline    time.Time // the Elector's held term's deadline
	renewSent   time.Time // an Elector's renewal in flight since (zero: none)
	sessionSent time.Time // a Group's session renewal in flight since
	inFlight    bool      // a Group's session renewal is in flight
}

// answer returns err unless it is one of the errors that are answers.
func answer(err error, answers ...error) error {
	for _, a := range answers {
		if errors.Is(err, a) {
			return nil
		}
	}
	return err
}

// elector observes one step of the Elector of name: the event its machine
// was fed at now, the actions it answered, and its state afterwards.
func (s *observing) elector(name string, lease time.Duration, mach *election.Machine, now time.Time, ev election.Event, acts []election.Action) {
	if s == nil {
		return
	}
	switch ev := ev.(type) {
	case election.Start:
		s.o.Campaigning(name, lease)
	case election.GetReply:
		s.o.StoreCall(name, now, answer(ev.Err, store.ErrNotFound))
	case election.SwapReply:
		if !s.renewSent.IsZero() {
			s.o.Renewal(name, now.Sub(s.renewSent))
			s.renewSent = time.Time{}
		}
		s.o.StoreCall(name, now, answer(ev.Err, store.ErrConflict))
	}
	for _, a := range acts {
		switch a := a.(type) {
		case election.Elected:
			s.deadline = a.Deadline
			s.o.Elected(name, a.Token)
		case election.Extended:
			s.o.Extended(name, s.deadline.Sub(now))
			s.deadline = a.Deadline
		case election.Swap:
			if mach.Leading() { // a renewal; an acquisition or release is sent while not leading
				s.renewSent = now
			}
		case election.Lost:
			s.o.Lost(name, a.Cause)
		case election.Idle:
			s.o.Idle(name)
		}
	}
}

// group observes one step of a Group's machine, in aggregate: terms won
// and ended, store errors, and the latency of session writes.
func (s *observing) group(now time.Time, ev election.Event, acts []election.Action) {
	if s == nil {
		return
	}
	var err error
	switch ev := ev.(type) {
	case election.GetReply:
		err = answer(ev.Err, store.ErrNotFound)
	case election.SwapReply:
		err = answer(ev.Err, store.ErrConflict)
		if s.inFlight && store.IsSession(ev.Name) {
			s.o.SessionRenewal(now.Sub(s.sessionSent))
			s.inFlight = false
		}
	}
	if err != nil {
		s.o.GroupStoreError(err)
	}
	for _, a := range acts {
		switch a := a.(type) {
		case election.Elected:
			s.o.GroupElected()
		case election.Lost:
			s.o.GroupLost(a.Cause)
		case election.Swap:
			if store.IsSession(a.Swap.Record.Name) {
				s.sessionSent, s.inFlight = now, true
			}
		}
	}
}
