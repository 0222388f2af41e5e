package scheduler

import "time"

// Config is the machine's fixed configuration. The runtime validates it.
// Durations are in the time base of the now the runtime passes to Step.
type Config struct {
	Job      string   // the job's name and the name of its election
	Schedule Schedule // nil: manual triggers only
	Policy   Policy
	Poll     time.Duration // how often the ledger is read when nothing is due sooner
	Rescan   time.Duration // how often the whole ledger is read
	Retry    time.Duration // the wait after a failed store call
	Limit    int           // Input.Limit

	// Momentary makes triggers moments instead of ledger rows: a Trigger
	// event reaches only the node leading when it happens, which claims the
	// period at once (the drill's plain and fencing columns; schedule.Runner
	// never sets it).
	Momentary bool
	// Unfenced writes the ledger without the token check: the drill's plain
	// column, and the simulator's unfenced-ledger mutation.
	Unfenced bool
	// Retention, when on, prunes the ledger's done and skipped rows past
	// it in fenced batches of PruneBatch rows, a round every PruneEvery,
	// while the machine would otherwise wait (see retention.go).
	Retention  Retention
	PruneEvery time.Duration
	PruneBatch int

	// NoValidCheck starts effects without asking the runtime to check
	// Term.Valid first: the simulator's no-valid-check mutation, which it
	// must catch. Never set outside the simulator.
	NoValidCheck bool
	// NoCatchUpCap plans as if Policy.Max were 0: the simulator's
	// no-catch-up-cap mutation, which it must catch. Never set outside
	// the simulator.
	NoCatchUpCap bool
	// NoJitter plans as if Policy.Jitter were 0: the simulator's
	// no-jitter mutation, which it must catch. Never set outside the
	// simulator.
	NoJitter bool
	// IgnoreSuspension plans as if the job were never suspended: the
	// simulator's ignore-suspension mutation, which it must catch. Never
	// set outside the simulator.
	IgnoreSuspension bool
	// NoOverlapSkip plans as if Policy.Overlap were queue: the
	// simulator's no-overlap-skip mutation, which it must catch. Never
	// set outside the simulator.
	NoOverlapSkip bool
	// NoRetryBackoff plans as if Policy.RetryBackoff were 0 (a failed
	// period with retries left is due again at once): the simulator's
	// no-retry-backoff mutation, which it must catch. Never set outside
	// the simulator.
	NoRetryBackoff bool
	// NoManualExempt plans manual periods (triggers and backfill rows)
	// like scheduled ones, subject to the catch-up policy and window
	// (Input.NoManualExempt): the simulator's no-manual-exempt mutation,
	// which it must catch. Never set outside the simulator.
	NoManualExempt bool
	// NoTimeout runs as if Policy.Timeout were 0: the simulator's
	// no-timeout mutation, which it must catch. Never set outside the
	// simulator.
	NoTimeout bool
	// NodeJitter derives the jitter from the node's name too, so that
	// every node draws its own delay and a handover re-rolls it: the
	// simulator's node-jitter mutation, which it must catch. Never set
	// outside the simulator.
	NodeJitter bool

	// ClockTolerance, when positive, turns the wall-clock guard on: before
	// every pass that may claim or skip periods the machine asks for a
	// reference time (CheckClock), and while the wall time it is given
	// differs from the reference by more than ClockTolerance it claims and
	// skips nothing (it still records the outcome of a run in progress,
	// and asks again at the next poll).
	ClockTolerance time.Duration
}

// Config returns the machine's configuration.
func (m *Machine) Config() Config { return m.cfg }
