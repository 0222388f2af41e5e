//go:build !race

package scheduler_test

// raceOn is true in a build with the race detector (see race_on_test.go).
const raceOn = false
