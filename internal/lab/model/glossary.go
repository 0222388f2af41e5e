package model

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Quorum returns the majority quorum of a voting membership of members:
// floor(members/2) + 1. It returns a *FieldError when members < 1.
func Quorum(members int) (int, error) {
	if members < 1 {
		return 0, &FieldError{Field: "members", Got: strconv.Itoa(members), Want: "an integer of at least 1"}
	}
	return members/2 + 1, nil
}

// Ballot is a candidate's claim to leadership: the votes it got from one
// membership view and the term it asks for.
type Ballot struct {
	Members  int   // voting members in the membership view
	Votes    int   // valid votes the candidate received, 0 to Members
	Term     int64 // the term the candidate asks for
	LastTerm int64 // the highest term accepted so far
}

// Verdict is the outcome of Elect.
type Verdict struct {
	Quorum  int    // majority quorum of the membership
	Elected bool   // votes reach the quorum and the term is newer
	Reason  string // one sentence saying why, in either case
}

// Elect applies the glossary's rule: a candidate is elected only when its
// votes reach the majority quorum and its term is greater than the last
// accepted term. It returns a *FieldError when the ballot is impossible
// (members < 1, votes outside 0..members, a negative term).
func Elect(b Ballot) (Verdict, error) {
	q, err := Quorum(b.Members)
	if err != nil {
		return Verdict{}, err
	}
	switch {
	case b.Votes < 0 || b.Votes > b.Members:
		return Verdict{}, &FieldError{Field: "votes", Got: strconv.Itoa(b.Votes), Want: fmt.Sprintf("an integer from 0 to members (%d)", b.Members)}
	case b.Term < 0:
		return Verdict{}, &FieldError{Field: "term", Got: strconv.FormatInt(b.Term, 10), Want: "an integer of at least 0"}
	case b.LastTerm < 0:
		return Verdict{}, &FieldError{Field: "last-term", Got: strconv.FormatInt(b.LastTerm, 10), Want: "an integer of at least 0"}
	}
	v := Verdict{Quorum: q}
	switch {
	case b.Votes < q:
		v.Reason = fmt.Sprintf("%d of %d votes are below the majority quorum of %d", b.Votes, b.Members, q)
	case b.Term <= b.LastTerm:
		v.Reason = fmt.Sprintf("term %d is not greater than the last accepted term %d", b.Term, b.LastTerm)
	default:
		v.Elected = true
		v.Reason = fmt.Sprintf("%d of %d votes reach the majority quorum of %d and term %d is greater than %d",
			b.Votes, b.Members, q, b.Term, b.LastTerm)
	}
	return v, nil
}

// Activation returns the conservative activation time of a new leader,
// safe = lease + 2*epsilon (the glossary's T_safe, with epsilon the clock
// uncertainty), and the margin it must still wait, or cover by fencing the
// old leader, when election completed after ready: safe - ready, or 0 when
// ready is already at or past safe. Arithmetic is on integer durations, so
// 8s, 150ms and 3.7s give exactly 8.3s and 4.6s.
//
// It returns a *FieldError for a negative duration or when safe would not
// fit in a time.Duration.
func Activation(lease, epsilon, ready time.Duration) (safe, wait time.Duration, err error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"lease", lease}, {"epsilon", epsilon}, {"ready", ready}} {
		if d.v < 0 {
			return 0, 0, &FieldError{Field: d.name, Got: d.v.String(), Want: "a duration of at least 0s"}
		}
	}
	if epsilon > (math.MaxInt64-lease)/2 {
		return 0, 0, &FieldError{Field: "epsilon", Got: epsilon.String(),
			Want: "a duration small enough that lease + 2*epsilon fits in about 292 years"}
	}
	safe = lease + 2*epsilon
	if ready < safe {
		wait = safe - ready
	}
	return safe, wait, nil
}
