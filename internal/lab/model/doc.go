// Package model is the course lesson's round model of lease-based leader
// election, ported to Go so that its numbers can be reproduced, varied and
// compared with the real implementation.
//
// A run plays a fixed number of rounds. A round is an abstract step, not a
// duration: the lease, the renewal period and the outage are counted in
// rounds. Node 0 starts as the leader named in a shared record and becomes
// unreachable for a while; the other nodes take over when the record's lease
// runs out; an end-of-day batch is due at given rounds. Run counts what
// happens: batches started, missed, started twice or late, work rejected by
// fencing, rounds with two leaders or none, and the handover.
//
// The port is exact: Run returns the numbers the lesson's own model returns,
// for valid parameters and for the invalid ones the lesson's model accepts
// (the tests compare the two on a few thousand generated parameter sets), and
// MeasureBlock and CostBlock print the lesson's two output blocks byte for
// byte.
//
// The model shows the lesson's point and no more: a returning leader keeps
// believing it leads until it next reads the record, so election alone does
// not stop two nodes acting at once; only fencing stops the stale node's
// work, and only a persistent trigger saves a batch due while nobody leads.
// The model has no clocks, messages or stores; it proves nothing about the
// real protocol.
//
// The package also holds the glossary's two small formulas: the majority
// quorum with the term check (Elect) and the safe activation time of a new
// leader (Activation).
//
// Everything here is a pure function: no I/O, no goroutines, no globals that
// change.
package model
