package schedule

import (
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton/store"
)

// CatchUp says which overdue periods a leader runs when it finds more than
// one due: after a leaderless stretch, or after a run that outlasted its
// interval.
type CatchUp string

// Catch-up policies.
const (
	// CatchUpAll runs every due period, oldest first.
	CatchUpAll CatchUp = "all"
	// CatchUpLatest runs only the newest due scheduled period and marks the
	// older ones skipped.
	CatchUpLatest CatchUp = "latest"
	// CatchUpNone runs only the current period (the newest scheduled instant
	// not after now) and marks older due periods skipped.
	CatchUpNone CatchUp = "none"
)

// ParseCatchUp parses "all", "latest" or "none".
func ParseCatchUp(s string) (CatchUp, error) {
	switch c := CatchUp(s); c {
	case CatchUpAll, CatchUpLatest, CatchUpNone:
		return c, nil
	}
	return "", fmt.Errorf("catch-up policy %q: want all, latest or none", s)
}

// Policy is a job's catch-up policy. The zero Policy runs every due period
// however late (CatchUpAll, no window).
type Policy struct {
	// CatchUp picks among due scheduled periods; "" means CatchUpAll.
	CatchUp CatchUp
	// Window, when positive, marks skipped every scheduled period that is
	// more than Window late when the leader gets to it. Manual triggers
	// are never skipped.
	Window time.Duration
}

// Validate reports a policy that can never be applied.
func (p Policy) Validate() error {
	if p.CatchUp != "" {
		if _, err := ParseCatchUp(string(p.CatchUp)); err != nil {
			return err
		}
	}
	if p.Window < 0 {
		return fmt.Errorf("catch-up window must not be negative, got %v", p.Window)
	}
	return nil
}

// Period is one scheduled instant of a job, or one manual trigger.
type Period struct {
	// Key is the stable ledger key: Scheduled as KeyLayout.
	Key string
	// Scheduled is the instant the period comes due, in UTC.
	Scheduled time.Time
	// Manual is true for a period written by a manual trigger.
	Manual bool
}

// Step is what a plan does with one period.
type Step int

// Steps.
const (
	// Skip marks the period skipped in the ledger, with the reason.
	Skip Step = iota + 1
	// Claim marks the period running under the leader's token; the leader
	// then runs it and records the outcome.
	Claim
)

func (s Step) String() string {
	switch s {
	case Skip:
		return "skip"
	case Claim:
		return "claim"
	}
	return fmt.Sprintf("Step(%d)", int(s))
}

// Action is one step of a plan.
type Action struct {
	Step   Step
	Period Period
	// Prev is the period's ledger row as read (Version 0: no row yet).
	Prev store.Run
	// Reason says why a period is skipped; it is stored as the skipped
	// row's Output.
	Reason string
}

// Input is what the planner decides from. It is plain data: the planner
// reads no clock and no store.
type Input struct {
	// Now is the current wall time.
	Now time.Time
	// Created is when the job was first registered (store.Job.Created):
	// the first scheduled period is the first instant after it.
	Created time.Time
	// Schedule yields the scheduled instants; nil for a job that only runs
	// manual triggers.
	Schedule Schedule
	// Policy is the catch-up policy.
	Policy Policy
	// Token is the current term's fencing token.
	Token uint64
	// Rows are the job's ledger rows (all of them, in any order).
	Rows []store.Run
	// Limit caps the scheduled instants without a row considered in one
	// plan (<= 0: DefaultLimit), so that a long leaderless stretch of a
	// short interval is worked through in bounded steps.
	Limit int
}

// DefaultLimit is Input.Limit's default.
const DefaultLimit = 100

// Plan is the planner's answer.
type Plan struct {
	// Actions are in period order. A runner applies them in order and
	// stops after the first Claim: running it takes time, so it plans
	// again afterwards.
	Actions []Action
	// Wake is the next instant after Now at which a period comes due
	// (zero: none known). A runner plans again then at the latest.
	Wake time.Time
	// More is true when scheduled instants were left out because of Limit.
	More bool
}

// Decide returns what the leader holding in.Token does next. It is pure.
//
// Due periods are: the scheduled instants after Created and not after Now
// that have no final row, and every row that is pending or running under an
// older token (a leader deposed or crashed mid-run) or under in.Token itself
// (a claim whose reply was lost: a runner plans only when it has nothing in
// flight), whose Scheduled is not after Now. A row running under a newer
// token belongs to a newer leader and is left alone. Scheduled instants are
// enumerated from the newest non-manual row on (or from Created): a runner
// writes scheduled rows in period order, so every older instant has a row.
//
// Manual periods are always claimed. Scheduled ones are skipped when they
// are later than Policy.Window, or when the catch-up policy says so;
// otherwise claimed.
func Decide(in Input) Plan {
	limit := in.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	rows := make(map[string]store.Run, len(in.Rows))
	from := in.Created
	var plan Plan
	for _, r := range in.Rows {
		rows[r.Period] = r
		if !r.Manual && r.Scheduled.After(from) {
			from = r.Scheduled
		}
	}
	open := func(r store.Run) bool { // due unless final or a newer leader's
		return !r.State.Final() && !(r.State == store.Running && r.Token > in.Token)
	}

	type cand struct {
		p    Period
		prev store.Run
	}
	var cands []cand
	seen := map[string]bool{}
	var current time.Time // the newest scheduled instant not after Now
	if in.Schedule != nil {
		n := 0
		for t := in.Schedule.Next(from); !t.IsZero() && !t.After(in.Now); t = in.Schedule.Next(t) {
			key := Key(t)
			r, ok := rows[key]
			if ok && !open(r) {
				current = t
				continue
			}
			if n == limit {
				plan.More = true
				break
			}
			n++
			current = t
			cands = append(cands, cand{Period{Key: key, Scheduled: t, Manual: r.Manual}, r})
			seen[key] = true
		}
		plan.Wake = in.Schedule.Next(in.Now)
	}
	for _, r := range in.Rows {
		if seen[r.Period] || !open(r) {
			continue
		}
		if r.Scheduled.After(in.Now) {
			if r.Manual && (plan.Wake.IsZero() || r.Scheduled.Before(plan.Wake)) {
				plan.Wake = r.Scheduled
			}
			continue
		}
		cands = append(cands, cand{Period{Key: r.Period, Scheduled: r.Scheduled.UTC(), Manual: r.Manual}, r})
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if a.p.Key < b.p.Key {
			return -1
		}
		if a.p.Key > b.p.Key {
			return 1
		}
		return 0
	})

	newest := "" // the newest scheduled candidate
	for _, c := range cands {
		if !c.p.Manual {
			newest = c.p.Key
		}
	}
	policy := in.Policy.CatchUp
	if policy == "" {
		policy = CatchUpAll
	}
	for _, c := range cands {
		a := Action{Step: Claim, Period: c.p, Prev: c.prev}
		if !c.p.Manual {
			late := in.Now.Sub(c.p.Scheduled)
			switch {
			case in.Policy.Window > 0 && late > in.Policy.Window:
				a.Step, a.Reason = Skip, fmt.Sprintf("skipped: %v late, outside the catch-up window of %v", late, in.Policy.Window)
			case policy == CatchUpLatest && (plan.More || c.p.Key != newest):
				a.Step, a.Reason = Skip, "skipped: catch-up policy latest, a newer period is due"
			case policy == CatchUpNone && (plan.More || !c.p.Scheduled.Equal(current)):
				a.Step, a.Reason = Skip, "skipped: catch-up policy none, not the current period"
			}
		}
		plan.Actions = append(plan.Actions, a)
	}
	return plan
}

// Swap returns the fenced ledger write that applies a: a Claim makes the
// row running under token and node with Attempt one more than before and
// Started = now; a Skip makes it skipped with Finished = now and the reason
// as Output.
func (a Action) Swap(job string, token uint64, node string, now time.Time) store.RunSwap {
	r := store.Run{
		Job: job, Period: a.Period.Key, Scheduled: a.Period.Scheduled,
		Token: token, Holder: node, Attempt: a.Prev.Attempt, Manual: a.Period.Manual,
	}
	switch a.Step {
	case Claim:
		r.State = store.Running
		r.Attempt++
		r.Started = now
	case Skip:
		r.State = store.Skipped
		r.Finished = now
		r.Output = a.Reason
	}
	return store.RunSwap{Expect: a.Prev.Version, Run: r, Fenced: true}
}

// Complete returns the fenced ledger write that records the outcome of the
// claimed row: done when err is nil and exitCode is 0, failed otherwise
// (err's text is appended to the output; exit code -1 if err is set and
// exitCode is 0).
func Complete(claimed store.Run, exitCode int, output string, err error, now time.Time) store.RunSwap {
	r := claimed
	r.State, r.ExitCode, r.Output, r.Finished = store.Done, exitCode, output, now
	if err != nil || exitCode != 0 {
		r.State = store.Failed
	}
	if err != nil {
		if exitCode == 0 {
			r.ExitCode = -1
		}
		if r.Output != "" && r.Output[len(r.Output)-1] != '\n' {
			r.Output += "\n"
		}
		r.Output += err.Error()
	}
	return store.RunSwap{Expect: claimed.Version, Run: r, Fenced: true}
}

// Delay returns how late a run started: Started - Scheduled, or 0 for a row
// that has not started.
func Delay(r store.Run) time.Duration {
	if r.Started.IsZero() {
		return 0
	}
	return r.Started.Sub(r.Scheduled)
}
