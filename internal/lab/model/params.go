package model

import (
	"errors"
	"fmt"
)

// Bounds that keep one Run small enough to finish quickly and to fit in
// memory. The lesson uses 5 nodes and 24 rounds.
const (
	MaxNodes  = 1000
	MaxRounds = 1_000_000
)

// ErrInvalidParams is matched (with errors.Is) by every error this package
// returns: each is a *FieldError naming the offending field.
var ErrInvalidParams = errors.New("invalid model parameters")

// FieldError reports one parameter outside its allowed range. Field is the
// parameter's lower-case name as used in JSON and in the CLI flags.
type FieldError struct {
	Field string // "nodes", "lease", "renewal", "outage", "start", "triggers" or "rounds"
	Got   string // the rejected value as text
	Want  string // what is allowed, e.g. "an integer from 2 to 1000"
}

// Error says which field is wrong, its value and what is allowed.
func (e *FieldError) Error() string {
	return fmt.Sprintf("model: %s is %s; want %s", e.Field, e.Got, e.Want)
}

// Unwrap returns ErrInvalidParams.
func (e *FieldError) Unwrap() error { return ErrInvalidParams }

// Params are the inputs of one run of the round model. Rounds are abstract
// steps; Lease, Renewal and Outage are counted in rounds, not in seconds.
type Params struct {
	// Nodes is the cluster size. Node 0 is the first leader.
	Nodes int `json:"nodes"`
	// Lease is how many rounds the shared record may go without a renewal
	// before another node takes the leadership over.
	Lease int `json:"lease"`
	// Renewal is the period, in rounds, at which a node that believes it
	// leads re-reads the record (and drops the belief if it is no longer
	// named there).
	Renewal int `json:"renewal"`
	// Outage is how many rounds node 0 is unreachable, starting at Start.
	// Zero means node 0 stays reachable.
	Outage int `json:"outage"`
	// Start is the first round in which node 0 is unreachable.
	Start int `json:"start"`
	// Triggers are the rounds at which the end-of-day batch must start.
	// Order, duplicates and values past Rounds do not matter: a round
	// triggers when it appears in the list at least once.
	Triggers []int `json:"triggers"`
	// Rounds is the length of the run: rounds 1 to Rounds are played.
	Rounds int `json:"rounds"`
	// Fencing makes the record reject the work of a node whose token is
	// older than the record's token.
	Fencing bool `json:"fencing"`
	// PersistentTrigger records a trigger that finds no accepted leader, so
	// that the next round with one starts the batch late instead of never.
	PersistentTrigger bool `json:"persistentTrigger"`
}

// DefaultParams returns the lesson's setting: 5 nodes, lease 3, renewal 3,
// node 0 unreachable for 5 rounds from round 6, triggers at rounds 6, 12, 18
// and 24, 24 rounds, neither fencing nor a persistent trigger.
func DefaultParams() Params {
	return Params{
		Nodes:    5,
		Lease:    3,
		Renewal:  3,
		Outage:   5,
		Start:    6,
		Triggers: []int{6, 12, 18, 24},
		Rounds:   24,
	}
}

// Validate reports the first parameter outside its allowed range as a
// *FieldError, or nil when p can be run.
func (p Params) Validate() error {
	bad := func(field string, got int, want string) error {
		return &FieldError{Field: field, Got: fmt.Sprint(got), Want: want}
	}
	switch {
	case p.Nodes < 2 || p.Nodes > MaxNodes:
		return bad("nodes", p.Nodes, fmt.Sprintf("an integer from 2 to %d", MaxNodes))
	case p.Lease < 1:
		return bad("lease", p.Lease, "an integer of at least 1 round")
	case p.Renewal < 1:
		return bad("renewal", p.Renewal, "an integer of at least 1 round")
	case p.Outage < 0:
		return bad("outage", p.Outage, "an integer of at least 0 rounds")
	case p.Start < 1:
		return bad("start", p.Start, "a round number of at least 1")
	case p.Rounds < 1 || p.Rounds > MaxRounds:
		return bad("rounds", p.Rounds, fmt.Sprintf("an integer from 1 to %d", MaxRounds))
	}
	for _, t := range p.Triggers {
		if t < 1 {
			return &FieldError{Field: "triggers", Got: joinInts(p.Triggers, ","), Want: "round numbers of at least 1"}
		}
	}
	return nil
}
