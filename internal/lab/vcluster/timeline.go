package vcluster

import "time"

// Happening is one entry of Outcome.Timeline: what a node did or suffered,
// and when, for drawing a run (the drill's HTML report).
type Happening struct {
	At     time.Duration `json:"at"`
	Node   int           `json:"node"`
	Kind   HappeningKind `json:"kind"`
	Token  uint64        `json:"token,omitempty"`
	Period string        `json:"period,omitempty"`
	// Fault is the fault injected (Kind FaultBegan).
	Fault string `json:"fault,omitempty"`
	// Cause says why a term ended (Lost) or what a fence refused (Refused).
	Cause string `json:"cause,omitempty"`
}

// HappeningKind names a Happening.
type HappeningKind string

// The kinds of Happening.
const (
	Elected     HappeningKind = "elected"      // the node won a term with Token
	Lost        HappeningKind = "lost"         // its term ended (Cause)
	FaultBegan  HappeningKind = "fault"        // a fault event hit it (Fault)
	Claimed     HappeningKind = "claimed"      // it claimed Period with Token
	FrozeBefore HappeningKind = "froze-before" // it froze after Valid(), before writing Period
	Wrote       HappeningKind = "wrote"        // its write of Period with Token was accepted
	Refused     HappeningKind = "refused"      // a fence refused its write with Token (Cause: what)
)

// note records h at the current time when the run keeps a timeline.
func (e *engine) note(n *node, h Happening) {
	if !e.c.Timeline {
		return
	}
	h.At, h.Node = e.now, n.idx
	e.out.Timeline = append(e.out.Timeline, h)
}
