package scheduler

import (
	"errors"
	"log/slog"
	"time"

	"github.com/batonhq/baton/store"
)

// Event is an input to Step.
type Event interface{ event() }

// Start says a term began: the machine works for Token as Node until End.
type Start struct {
	Token uint64
	Node  string
}

// End says the term ended: the machine starts nothing more. An effect
// still running may report EffectDone; its outcome is then recorded once,
// without retries, and the fence decides whether it counts.
type End struct{}

// Tick says the timer the machine asked for (Next) fired.
type Tick struct{}

// Trigger says a trigger was seen. With Config.Momentary it is the period
// to run (Key and Scheduled); otherwise it only asks for an early look at
// the ledger (a durable trigger was written).
type Trigger struct {
	Key       string
	Scheduled time.Time
}

// Registered answers Register.
type Registered struct {
	Job store.Job
	Err error
}

// JobRead answers ReadJob: the job as stored, with its suspension.
type JobRead struct {
	Job store.Job
	Err error
}

// RunsRead answers ReadRuns.
type RunsRead struct {
	Rows []store.Run
	Err  error
}

// Swapped answers SwapRun.
type Swapped struct {
	Run store.Run
	Err error
}

// ReadBack answers GetRun.
type ReadBack struct {
	Run store.Run
	Err error
}

// ClockRead answers CheckClock: a reference wall time the runtime trusts
// more than its own clock (a database server's clock, or the wall clock
// as it stood at start carried forward by the monotonic clock), read at
// about the instant of the Step it is fed to.
type ClockRead struct {
	Reference time.Time
	Err       error
}

// EffectDone answers StartEffect: the effect's exit status, output and
// error. NotStarted says the runtime did not start it because the term was
// no longer valid (StartEffect.RequireValid).
type EffectDone struct {
	ExitCode   int
	Output     string
	Err        error
	NotStarted bool
}

func (Start) event()      {}
func (End) event()        {}
func (Tick) event()       {}
func (Trigger) event()    {}
func (Registered) event() {}
func (RunsRead) event()   {}
func (Swapped) event()    {}
func (ReadBack) event()   {}
func (EffectDone) event() {}
func (JobRead) event()    {}
func (ClockRead) event()  {}

// Action is an output of Step. The runtime executes actions in order and
// feeds back the answer the action names. At most one action that wants
// an answer is outstanding at a time.
type Action interface{ action() }

// Register asks for store.EnsureJob of the job; answer Registered.
type Register struct{}

// ReadJob asks for store.GetJob of the job; answer JobRead. The machine
// reads the job before every read of the ledger that it plans from, so
// that it learns of a suspension within one poll, without its term ending.
type ReadJob struct{}

// ReadRuns asks for the job's ledger rows after After ("" : all of them);
// answer RunsRead.
type ReadRuns struct{ After string }

// Kind says what a ledger write is for.
type Kind int

// Kinds of ledger writes.
const (
	KindSkip     Kind = iota + 1 // a period skipped by the catch-up policy
	KindClaim                    // a period claimed by the plan
	KindTrigger                  // a momentary trigger claimed
	KindComplete                 // a run's outcome recorded
	KindRelease                  // a run cut short given back, pending (Release)
)

// String names the kind.
func (k Kind) String() string {
	return [...]string{"?", "skip", "claim", "claim trigger", "complete", "release"}[k]
}

// SwapRun asks for store.SwapRun(Swap); answer Swapped. A KindComplete
// write must not be cut short by the end of the term. Nor must a
// KindRelease write, which the machine asks for when the term's run was
// cut short (not started, or interrupted: ErrInterrupted), also after
// End: the runtime makes it before it gives the term up, bounded by a
// short timeout (ReleaseTimeout), after which the next term takes the
// row over once Config.TakeoverGrace has passed, as without it. A claim or skip
// that the store refuses with store.ErrSuspended (the job was suspended
// after the pass read it) is not an error: the machine reads the job
// again at once and claims nothing while it stays suspended.
type SwapRun struct {
	Kind Kind
	Swap store.RunSwap
}

// CheckClock asks for a reference wall time (Config.ClockTolerance);
// answer ClockRead.
type CheckClock struct{}

// GetRun asks to read back a row whose write had an unknown outcome;
// answer ReadBack.
type GetRun struct{ Period string }

// StartEffect asks the runtime to run the claimed period's effect under
// Run.Token; answer EffectDone. With RequireValid the runtime checks the
// term's Valid() atomically with starting it and answers NotStarted when it
// is not valid.
type StartEffect struct {
	Period       Period
	Run          store.Run
	RequireValid bool
}

// StopEffect asks the runtime to stop the running effect (cancel its
// context with Cause): it ran past Policy.Timeout. The effect still
// answers EffectDone when it returns; the machine records it failed,
// "timeout", whatever the effect reports.
type StopEffect struct{ Cause error }

// ErrTimeout is StopEffect's cause, and wrapped in the error recorded
// for a run stopped by Policy.Timeout.
var ErrTimeout = errors.New("timeout")

// Halt says the machine acts no more in this term (a newer leader exists,
// or the term is no longer valid); the runtime waits for the term to end.
type Halt struct{ Cause error }

// Fail says a store error that will never heal (store.Permanent) ended the
// machine's work; the runtime stops and returns Err.
type Fail struct{ Err error }

// ClockHeld says the wall-clock guard began to hold the machine off
// (Held: its wall clock is Skew ahead of the reference, behind when
// negative, by more than Config.ClockTolerance) or stopped (the clocks
// agree again, off by Skew): for metrics, beside the Note that says so.
// A machine that is held off when its term ends says nothing more: the
// runtime clears what it was told at the end of the term.
type ClockHeld struct {
	Held bool
	Skew time.Duration
}

// StepDown says the machine ends its term: the wall-clock guard held it off
// for Config.ClockStepDown. The runtime stops and returns Err (wrapping
// ErrClockHeld), so that its caller resigns the term. No effect runs then:
// the guard is asked only between two runs.
type StepDown struct{ Err error }

// ErrClockHeld is wrapped in StepDown's error: the wall clock disagreed
// with the reference for Config.ClockStepDown.
var ErrClockHeld = errors.New("the wall-clock guard held the term off")

// Note is something worth a log line.
type Note struct {
	Level  slog.Level
	Msg    string
	Period string
	Err    error
}

// Failed is the event that answers the store call a when the call failed
// with err (it could not be sent, or its answer was lost): what a runtime
// that cannot make the call steps into the machine. It is nil for an
// action that is not a store call.
func Failed(a Action, err error) Event {
	switch a.(type) {
	case Register:
		return Registered{Err: err}
	case ReadRuns:
		return RunsRead{Err: err}
	case ReadJob:
		return JobRead{Err: err}
	case SwapRun:
		return Swapped{Err: err}
	case GetRun:
		return ReadBack{Err: err}
	case Prune:
		return Pruned{Err: err}
	}
	return nil
}

func (Register) action()    {}
func (ReadRuns) action()    {}
func (ReadJob) action()     {}
func (SwapRun) action()     {}
func (GetRun) action()      {}
func (StartEffect) action() {}
func (Halt) action()        {}
func (StopEffect) action()  {}
func (Fail) action()        {}
func (Note) action()        {}
func (CheckClock) action()  {}
func (ClockHeld) action()   {}
func (StepDown) action()    {}

// ErrNotValid is Halt's cause when a claimed effect was not started
// because the term was no longer valid.
var ErrNotValid = errors.New("term no longer valid after the claim; not starting")
