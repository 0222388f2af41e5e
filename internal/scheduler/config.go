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

	// Mutate turns protections off, so that the simulator (baton sim
	// --mutate) and the tests can show that their checks catch each
	// breach. Never set outside them.
	Mutate Mutations

	// ClockTolerance, when positive, turns the wall-clock guard on: before
	// every pass that may claim or skip periods the machine asks for a
	// reference time (CheckClock), and while the wall time it is given
	// differs from the reference by more than ClockTolerance it claims and
	// skips nothing (it still records the outcome of a run in progress,
	// and asks again at the next poll).
	ClockTolerance time.Duration
	// ClockStepDown, when positive (with ClockTolerance), ends a term that
	// the guard has held off for that long: the machine asks the runtime
	// to stop (StepDown, its cause wrapping ErrClockHeld), so that the
	// term is resigned and a node whose clock agrees can lead, instead of
	// a leader that keeps the job and runs nothing. Zero: a held-off
	// leader keeps its term.
	ClockStepDown time.Duration

	// TakeoverGrace, when positive, is how long a term waits, from its
	// start, before it takes over (claims again, or skips) a row still
	// running under an older token: time for the process that saw that
	// run end (baton run's supervisor) to record its outcome, which it
	// may do after the term that ran it ended (CompleteSeen) as long as
	// nobody took the row over. Periods after such a row wait with it, so
	// that periods still run in order. Zero: at once. Meanwhile the term
	// reads the row again every tenth of the grace, at most every 250ms
	// (TakeoverRead): a run given back (Release) or recorded is seen then,
	// not at the end of the grace.
	TakeoverGrace time.Duration
}

// Config returns the machine's configuration.
func (m *Machine) Config() Config { return m.cfg }

// Mutations each turn one protection of the machine off, as a simulator
// mutation (baton sim --mutate NAME, the name in brackets) whose check
// must catch it. The zero value is the machine as it ships.
type Mutations struct {
	// NoValidCheck starts effects without asking the runtime to check
	// Term.Valid first [no-valid-check].
	NoValidCheck bool
	// NoCatchUpCap plans as if Policy.Max were 0 [no-catch-up-cap].
	NoCatchUpCap bool
	// NoCatchUpWindow plans as if Policy.Window were 0
	// [no-catch-up-window].
	NoCatchUpWindow bool
	// NoJitter plans as if Policy.Jitter were 0 [no-jitter].
	NoJitter bool
	// IgnoreSuspension plans as if the job were never suspended
	// [ignore-suspension].
	IgnoreSuspension bool
	// NoOverlapSkip plans as if Policy.Overlap were queue
	// [no-overlap-skip].
	NoOverlapSkip bool
	// NoRetryBackoff plans as if Policy.RetryBackoff were 0: a failed
	// period with retries left is due again at once [no-retry-backoff].
	NoRetryBackoff bool
	// NoManualExempt plans manual periods (triggers and backfill rows)
	// like scheduled ones, subject to the catch-up policy and window
	// (Input.NoManualExempt) [no-manual-exempt].
	NoManualExempt bool
	// NoTimeout runs as if Policy.Timeout were 0 [no-timeout].
	NoTimeout bool
	// NodeJitter derives the jitter from the node's name too, so that
	// every node draws its own delay and a handover re-rolls it
	// [node-jitter].
	NodeJitter bool
	// NoClockGuard plans as if every clock check found the wall clock
	// agreeing with the reference [no-clock-guard].
	NoClockGuard bool
	// NoStepDown runs as if Config.ClockStepDown were 0: a leader held
	// off by the guard keeps its term [no-step-down].
	NoStepDown bool
	// PruneFailed prunes failed rows past the retention too, which stay
	// until they are run again or pruned by hand [prune-failed].
	PruneFailed bool
	// PruneEarly prunes by half the retention: half its age, half its
	// rows (rounded up) [prune-early].
	PruneEarly bool
	// NoOwnCompletion counts a completion that conflicts as refused
	// without reading the row back, also when the row was finished by
	// this very attempt (baton run's supervisor recorded it first)
	// [no-own-completion].
	NoOwnCompletion bool
	// RerunUnknownState plans a ledger row whose state is none of
	// store.RunStates as an open one, as the machine did before it
	// refused such a row: it is claimed again, attempt + 1
	// [rerun-unknown-state].
	RerunUnknownState bool
	// NoTakeoverGrace runs as if Config.TakeoverGrace were 0: a row
	// running under an older token is taken over at the term's first
	// plan, before that run's own process could record its outcome
	// [no-takeover-grace].
	NoTakeoverGrace bool
	// ReleaseAfterFinish gives back (Release) the row of a run that ran
	// to its end after its term ended, as if it had been cut short,
	// instead of recording its outcome: the next term runs the period
	// again [release-after-finish].
	ReleaseAfterFinish bool
	// StickySuspension keeps a suspension the machine read until its
	// term ends: a resume is seen only by the next term, so a leader that
	// saw the job suspended claims nothing again while it leads
	// [sticky-suspension].
	StickySuspension bool
}
