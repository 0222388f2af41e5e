//go:build race

package baton_test

// raceFactor scales the real-time leases of the process tests: the race
// detector slows every process several times, and a lease a starved leader
// cannot renew in time tests the machine's load, not the protocol.
const raceFactor = 2
