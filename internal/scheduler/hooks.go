package scheduler

// RunnerHooks reach a schedule.Runner's machine configuration from inside
// baton, for the drill's process mode, whose plain and fencing columns need
// momentary triggers and an unfenced ledger that no user may configure.
// Package schedule sets them when it is initialised.
var RunnerHooks struct {
	// Configure returns a schedule.Option that applies mod to the
	// machine's Config (after the public options).
	Configure func(mod func(*Config)) any
	// Trigger feeds a Trigger event to a running *schedule.Runner's
	// machine (dropped when no term runs).
	Trigger func(runner any, t Trigger)
}
