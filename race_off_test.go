//go:build !race

package baton_test

// raceFactor scales the real-time leases of the process tests (see
// race_on_test.go).
const raceFactor = 1
