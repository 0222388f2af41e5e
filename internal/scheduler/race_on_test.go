//go:build race

package scheduler_test

// raceOn is true in a build with the race detector, which makes the long
// virtual-time tests ten times slower: they run a shorter stretch then.
const raceOn = true
