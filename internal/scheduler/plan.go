package scheduler

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/store"
)

// KeyLayout is the layout of a period key: the scheduled instant in UTC,
// to the second. Keys of one job sort in time order. schedule.KeyLayout
// is this constant.
const KeyLayout = "2006-01-02T15:04:05Z"

// Key returns the period key of the instant t (schedule.Key). Its latest
// answers are remembered (keys): a plan names the same periods at every
// pass.
func Key(t time.Time) string {
	// The key names t's second: Date and Clock read nothing finer.
	sec := t.Unix()
	slot := &keys[(uint64(sec)*0x9E3779B97F4A7C15)>>(64-keysBits)]
	if e := slot.Load(); e != nil && e.sec == sec {
		return e.key
	}
	k := keyOf(t)
	slot.Store(&keyed{sec: sec, key: k})
	return k
}

// keys remembers Key's latest answers, as jitters does JitterOf's: a
// table of the process, direct-mapped by the second (Fibonacci hashing,
// so that periods a minute or an hour apart do not share slots).
var keys [1 << keysBits]atomic.Pointer[keyed]

const keysBits = 8

// keyed is one remembered answer of Key.
type keyed struct {
	sec int64
	key string
}

// keyOf is Key without the memo.
func keyOf(t time.Time) string {
	// Written digit by digit: Format parses its layout at every call,
	// and the machine and the simulator make a key for every period they
	// look at. A negative year or one past 9999, which Format writes its
	// own way (a sign, more digits), goes to Format.
	u := t.UTC()
	y, mo, d := u.Date()
	if y < 0 || y > 9999 {
		return u.Truncate(time.Second).Format(KeyLayout)
	}
	h, mi, sec := u.Clock()
	var b [len(KeyLayout)]byte
	put := func(i, v, n int) {
		for j := i + n - 1; j >= i; j-- {
			b[j] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, y, 4)
	b[4] = '-'
	put(5, int(mo), 2)
	b[7] = '-'
	put(8, d, 2)
	b[10] = 'T'
	put(11, h, 2)
	b[13] = ':'
	put(14, mi, 2)
	b[16] = ':'
	put(17, sec, 2)
	b[19] = 'Z'
	return string(b[:])
}

// Schedule yields a job's scheduled instants: schedule.Schedule without
// its String method.
type Schedule interface {
	// Next returns the first scheduled instant strictly after t, or zero.
	Next(t time.Time) time.Time
}

// Catch-up policies (schedule.CatchUp's values).
const (
	CatchUpAll    = "all"
	CatchUpLatest = "latest"
	CatchUpNone   = "none"
)

// Policy is a job's catch-up policy (schedule.Policy, validated there).
type Policy struct {
	// CatchUp is CatchUpAll, CatchUpLatest or CatchUpNone; "" means all.
	CatchUp string
	// Window, when positive, skips scheduled periods more than Window late.
	Window time.Duration
	// Retries is how many times a failed period is claimed again: a failed
	// row whose Attempt is at most Retries is due again RetryBackoff after
	// it finished (schedule.Policy.Retries).
	Retries int
	// RetryBackoff is the wait between a failed attempt and the next.
	RetryBackoff time.Duration
	// Max, when positive, caps the catch-up: a scheduled period with Max
	// or more newer scheduled instants already due is skipped ("outside
	// the catch-up window"), so at most Max missed periods run after an
	// outage, the newest ones.
	Max int
	// Overlap says what happens to a scheduled period that came due while
	// this leader's previous run was still going: OverlapQueue ("" too)
	// runs it afterwards, OverlapSkip records it skipped.
	Overlap string
	// Jitter, when positive, delays each scheduled period's first claim
	// by JitterOf(job, key, Jitter): the same delay on every node and
	// after every handover, recorded in the run's delay.
	Jitter time.Duration
	// Timeout, when positive, stops a run still going Timeout after it
	// started (StopEffect) and records it failed, "timeout": a failure
	// like any other, retried by Retries.
	Timeout time.Duration
}

// Overlap policies (schedule.Overlap's values).
const (
	OverlapQueue = "queue"
	OverlapSkip  = "skip"
)

// JitterOf returns the delay of the period key of job under a jitter of
// at most max: derived from the job's name and the key alone (SHA-256),
// in whole milliseconds in [0, max], so every node computes the same. It
// returns 0 when max is below a millisecond. Its latest answers are
// remembered (jitters): a plan asks for the same periods at every pass,
// and so do the simulator's checks at every ledger write.
func JitterOf(job, key string, max time.Duration) time.Duration {
	h := uint(0)
	for i := 0; i < len(key); i++ {
		h = h*31 + uint(key[i])
	}
	slot := &jitters[(uint64(h)*0x9E3779B97F4A7C15)>>(64-jittersBits)]
	if e := slot.Load(); e != nil && e.max == max && e.key == key && e.job == job {
		return e.d
	}
	d := jitterHash(job, key, max)
	slot.Store(&jittered{job: job, key: key, max: max, d: d})
	return d
}

// jitterHash is JitterOf without the memo: the SHA-256.
func jitterHash(job, key string, max time.Duration) time.Duration {
	ms := uint64(max / time.Millisecond)
	if ms == 0 {
		return 0
	}
	h := sha256.Sum256([]byte(job + "\x00" + key))
	return time.Duration(binary.BigEndian.Uint64(h[:8])%(ms+1)) * time.Millisecond
}

// jitters remembers JitterOf's latest answers: a small table,
// direct-mapped by the key (Fibonacci hashing of its string hash, whose
// low bits alone tell few keys apart: 31 squared is 1 modulo 64), each
// slot one (job, key, max) and its answer, replaced whole. It lives
// outside the machines, whose state it is not (the explorer hashes every
// field of a machine), and is shared by every caller of the process: each
// slot is read and written atomically.
var jitters [1 << jittersBits]atomic.Pointer[jittered]

const jittersBits = 8

// jittered is one remembered answer of JitterOf.
type jittered struct {
	job, key string
	max, d   time.Duration
}

// parseKey is time.Parse(KeyLayout, key): written digit by digit for the
// keys Key writes (CanonicalKey); any other string goes to time.Parse.
func parseKey(key string) (time.Time, error) {
	if t, ok := CanonicalKey(key); ok {
		return t, nil
	}
	return time.Parse(KeyLayout, key)
}

// CanonicalKey returns the instant of key and true when key is one that
// Key writes, read digit by digit: KeyLayout with a year 0 to 9999 and
// every field in its range. time.Parse(KeyLayout, key) then returns that
// instant too, and Key (or Format) of it gives key back. It returns false
// for any other string, which time.Parse may still read (a year out of
// that range) or refuse.
func CanonicalKey(key string) (time.Time, bool) {
	if len(key) != len(KeyLayout) || key[4] != '-' || key[7] != '-' || key[10] != 'T' || key[13] != ':' || key[16] != ':' || key[19] != 'Z' {
		return time.Time{}, false
	}
	num := func(i, n int) int {
		v := 0
		for j := i; j < i+n; j++ {
			c := key[j]
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d, h, mi, sec := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	if y < 0 || mo < 1 || mo > 12 || d < 1 || d > 28 && d > daysIn(time.Month(mo), y) || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC), true
}

// daysIn is the number of days of month m of year y.
func daysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// retryAt returns when the failed row r is due again, and false if it is
// not to be retried.
func (p *Policy) retryAt(r *store.Run) (time.Time, bool) {
	if r.State != store.Failed || r.Attempt > p.Retries {
		return time.Time{}, false
	}
	return r.Finished.Add(p.RetryBackoff), true
}

// final reports whether r is finished for good: a final state, and not a
// failure with retries left.
func (p *Policy) final(r *store.Run) bool {
	_, retry := p.retryAt(r)
	return r.State.Final() && !retry
}

// Period is one scheduled instant of a job, or one manual trigger
// (schedule.Period has the same fields).
type Period struct {
	Key       string
	Scheduled time.Time
	Manual    bool
}

// Delay returns how late a run started: Started - Scheduled, or 0 for a row
// that has not started (schedule.Delay).
func Delay(r store.Run) time.Duration {
	if r.Started.IsZero() {
		return 0
	}
	return r.Started.Sub(r.Scheduled)
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

// String returns "skip" or "claim".
func (s Step) String() string {
	switch s {
	case Skip:
		return "skip"
	case Claim:
		return "claim"
	}
	return fmt.Sprintf("Step(%d)", int(s))
}

// Move is one step of a plan.
type Move struct {
	// Step is what to do with the period.
	Step Step
	// Period is the period it is done to.
	Period Period
	// Prev is the period's ledger row as read (Version 0: no row yet).
	Prev store.Run
	// Reason says why a period is skipped; it is stored as the skipped
	// row's Output.
	Reason string
	// Newer, with a catch-up cap, is how many newer scheduled instants
	// were due when the move was planned: the machine adds those that
	// came due since before it applies a claim (CapReason).
	Newer int
}

// WindowReason is the reason of a period skipped late by the catch-up
// window w.
func WindowReason(late, w time.Duration) string {
	return fmt.Sprintf("skipped: %v late, outside the catch-up window of %v", late, w)
}

// CapReason is the reason of a period skipped by the catch-up cap max.
func CapReason(max int) string {
	return fmt.Sprintf("skipped: outside the catch-up window: %d or more newer periods are due (catch-up max %d)", max, max)
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
	// Rows are the job's ledger rows, in any order: all of them, or those
	// after Floor.
	Rows []store.Run
	// Floor, when set, is the scheduled instant of a non-manual row such
	// that every row up to it is final; Rows may then leave those rows
	// out. Scheduled instants not after Floor are not considered.
	Floor time.Time
	// Limit caps the scheduled instants without a row considered in one
	// plan (<= 0: DefaultLimit), so that a long leaderless stretch of a
	// short interval is worked through in bounded steps.
	Limit int
	// Job is the job's name: Policy.Jitter derives each period's delay
	// from it.
	Job string
	// BusyFrom and BusyTo, when set, are when this leader's previous run
	// started and finished: with Policy.Overlap skip, a scheduled period
	// without a row that came due in (BusyFrom, BusyTo] is skipped.
	BusyFrom, BusyTo time.Time
	// NoManualExempt plans manual periods like scheduled ones (the
	// simulator's no-manual-exempt mutation, Config.Mutate.NoManualExempt).
	NoManualExempt bool
	// TakeoverAt, when set, is the earliest instant at which a row
	// running under an older token than Token is taken over (claimed
	// again or skipped): before it, that row and every later period wait,
	// and Wake is at most TakeoverAt (Config.TakeoverGrace).
	TakeoverAt time.Time
}

// DefaultLimit is Input.Limit's default.
const DefaultLimit = 100

// Plan is the planner's answer.
type Plan struct {
	// Moves are in period order. The machine applies them in order and
	// stops after the first Claim: running it takes time, so it plans
	// again afterwards.
	Moves []Move
	// Wake is the next instant after Now at which a period comes due
	// (zero: none known). The machine plans again then at the latest.
	Wake time.Time
	// More is true when scheduled instants were left out because of Limit.
	More bool
	// Overdue counts the scheduled periods of Moves that are not the
	// newest due instant: the missed periods being caught up (claimed)
	// or given up (skipped) by this plan.
	Overdue, OverdueSkipped int
	// Behind, with More and a cap, is a lower bound of the scheduled
	// instants due without a final row.
	Behind int
	// HeldByGrace is true when a row running under an older token waits
	// for Input.TakeoverAt (Wake is then at most TakeoverAt).
	HeldByGrace bool
}

// Decide returns what the leader holding in.Token does next. It is pure.
//
// Due periods are: the scheduled instants after Created (and Floor) and
// not after Now that have no final row, and every row that is pending or
// running under an older token (a leader deposed or crashed mid-run) or
// under in.Token itself (a claim whose reply was lost: the machine plans
// only when it has nothing in flight), whose Scheduled is not after Now. A
// row running under a newer token belongs to a newer leader and is left
// alone. A row running under an older token waits until Input.TakeoverAt
// (Config.TakeoverGrace), and every later period with it: no move is
// planned from it on, and Wake is at most TakeoverAt. Scheduled instants
// are enumerated from the newest non-manual row
// on (or from Created): the machine writes scheduled rows in period order,
// so every older instant has a row.
//
// A failed row with retries left (Attempt <= Policy.Retries) is due again
// once Policy.RetryBackoff has passed since it Finished, and claimed like a
// taken-over row (Attempt one more); until then it only brings Wake
// forward. A retry the catch-up policy or window would skip now is not
// claimed and stays failed, as it was recorded.
//
// Manual periods are always claimed. Scheduled ones are skipped when they
// are later than Policy.Window, or when the catch-up policy says so;
// otherwise claimed.
func Decide(in Input) Plan {
	limit := in.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	// Rows by key: a scan for the few a cursor read returns (the
	// simulator plans thousands of times a second); for many, a binary
	// search when their keys are strictly ascending (a ledger read lists
	// them so), else a map (the last row of a key, as the map keeps it).
	var byKey map[string]int
	bisect := false
	if len(in.Rows) > 16 {
		bisect = true
		for i := 1; i < len(in.Rows); i++ {
			if in.Rows[i-1].Period >= in.Rows[i].Period {
				bisect = false
				break
			}
		}
		if !bisect {
			byKey = make(map[string]int, len(in.Rows))
			for i, r := range in.Rows {
				byKey[r.Period] = i
			}
		}
	}
	find := func(key string) int {
		switch {
		case bisect:
			if i, ok := slices.BinarySearchFunc(in.Rows, key, func(r store.Run, k string) int { return strings.Compare(r.Period, k) }); ok {
				return i
			}
			return -1
		case byKey != nil:
			if i, ok := byKey[key]; ok {
				return i
			}
			return -1
		}
		for i := range in.Rows {
			if in.Rows[i].Period == key {
				return i
			}
		}
		return -1
	}
	// Scratch on the stack for the common plan of few rows and periods.
	var (
		seenBuf [64]bool
		candBuf [4]cand
		dueBuf  [8]time.Time
	)
	seen := seenBuf[:0] // rows already candidates as scheduled instants
	if len(in.Rows) <= len(seenBuf) {
		seen = seenBuf[:len(in.Rows)]
	} else {
		seen = make([]bool, len(in.Rows))
	}
	from := in.Created
	if in.Floor.After(from) {
		from = in.Floor
	}
	var plan Plan
	for i := range in.Rows {
		if r := &in.Rows[i]; !r.Manual && r.Scheduled.After(from) {
			from = r.Scheduled
		}
	}
	open := func(r *store.Run) bool { // due unless final or a newer leader's
		return !in.Policy.final(r) && !(r.State == store.Running && r.Token > in.Token)
	}
	// A failed row with retries left is due at its retry time; until then
	// it only sets the wake-up.
	var retryWake time.Time
	waiting := func(r *store.Run) bool {
		at, retry := in.Policy.retryAt(r)
		if !retry || !at.After(in.Now) {
			return false
		}
		if retryWake.IsZero() || at.Before(retryWake) {
			retryWake = at
		}
		return true
	}

	cands := candBuf[:0]
	var current time.Time // the newest scheduled instant not after Now
	if from.After(in.Created) && !from.After(in.Now) {
		// The newest scheduled row's instant (or the floor's): current
		// unless a newer instant is due, which the loop below finds. A
		// row of it still open (a crashed leader's run, taken over) is
		// the current period for catch-up none.
		current = from
	}
	due := dueBuf[:0] // every scheduled instant enumerated, in order
	extra := 0        // due instants after the ones enumerated (counted up to Policy.Max)
	if in.Schedule != nil {
		n := 0
		var brk time.Time // the first instant left out by Limit
		for t := in.Schedule.Next(from); !t.IsZero() && !t.After(in.Now); t = in.Schedule.Next(t) {
			if in.Policy.Max > 0 {
				due = append(due, t)
			}
			key := Key(t)
			i := find(key)
			if i >= 0 && (!open(&in.Rows[i]) || waiting(&in.Rows[i])) {
				current = t
				continue
			}
			if n == limit {
				plan.More = true
				if in.Policy.Max > 0 {
					brk, due = t, due[:len(due)-1]
				}
				break
			}
			n++
			current = t
			cands = append(cands, cand{Period{Key: key, Scheduled: t, Manual: i >= 0 && in.Rows[i].Manual}, i})
			if i >= 0 {
				seen[i] = true
			}
		}
		if in.Policy.Max > 0 && !brk.IsZero() {
			for u := brk; !u.IsZero() && !u.After(in.Now) && extra < in.Policy.Max; u = in.Schedule.Next(u) {
				extra++
			}
			plan.Behind = n + extra
		}
		plan.Wake = in.Schedule.Next(in.Now)
		if !plan.Wake.IsZero() && in.Policy.Jitter > 0 {
			plan.Wake = plan.Wake.Add(JitterOf(in.Job, Key(plan.Wake), in.Policy.Jitter))
		}
	}
	// newer counts the due scheduled instants after t, up to Policy.Max
	// or a little beyond.
	newer := func(t time.Time) int {
		i, _ := slices.BinarySearchFunc(due, t, func(a, b time.Time) int { return a.Compare(b) })
		if i < len(due) && due[i].Equal(t) {
			i++
		}
		return len(due) - i + extra
	}
	var none store.Run // the row of a period without one
	prevOf := func(c *cand) *store.Run {
		if c.row < 0 {
			return &none
		}
		return &in.Rows[c.row]
	}
	capped := func(c *cand) bool {
		return in.Policy.Max > 0 && prevOf(c).Version == 0 && newer(c.p.Scheduled) >= in.Policy.Max
	}
	for i := range in.Rows {
		r := &in.Rows[i] // read in place: a row is large to copy
		if seen[i] || !open(r) || waiting(r) {
			continue
		}
		if r.Scheduled.After(in.Now) {
			if r.Manual && (plan.Wake.IsZero() || r.Scheduled.Before(plan.Wake)) {
				plan.Wake = r.Scheduled
			}
			continue
		}
		cands = append(cands, cand{Period{Key: r.Period, Scheduled: r.Scheduled.UTC(), Manual: r.Manual}, i})
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
	if plan.More {
		// Rows after the batch wait for the next plan, behind the
		// scheduled instants left out: oldest first, always.
		last := Key(current)
		for i, c := range cands {
			if c.p.Key > last {
				cands = cands[:i]
				break
			}
		}
	}

	newest := "" // the newest scheduled candidate
	for i := range cands {
		if !cands[i].p.Manual {
			newest = cands[i].p.Key
		}
	}
	policy := in.Policy.CatchUp
	if policy == "" {
		policy = CatchUpAll
	}
moves:
	for i := range cands {
		c := &cands[i]
		prev := prevOf(c) // read in place: a row is large to copy
		a := Move{Step: Claim, Period: c.p, Prev: *prev}
		if prev.State == store.Running && prev.Token < in.Token && in.Now.Before(in.TakeoverAt) {
			// A deposed leader's run: its own process may still record
			// the outcome it saw inside its term (CompleteSeen). Wait,
			// and let later periods wait behind it.
			if plan.Wake.IsZero() || in.TakeoverAt.Before(plan.Wake) {
				plan.Wake = in.TakeoverAt
			}
			plan.HeldByGrace = true
			break moves
		}
		if !c.p.Manual || in.NoManualExempt {
			late := in.Now.Sub(c.p.Scheduled)
			if prev.State == store.Failed {
				// A retry: no longer worth it if the policy would skip the
				// period now, but its failure stays recorded as it is.
				if (in.Policy.Window > 0 && late > in.Policy.Window) ||
					(in.Policy.Max > 0 && newer(c.p.Scheduled) >= in.Policy.Max) ||
					(policy == CatchUpLatest && (plan.More || c.p.Key != newest)) ||
					(policy == CatchUpNone && (plan.More || !c.p.Scheduled.Equal(current))) {
					continue
				}
			}
			// A period without a row comes due at its instant plus its
			// jitter.
			at := c.p.Scheduled
			if prev.Version == 0 && in.Policy.Jitter > 0 {
				at = at.Add(JitterOf(in.Job, c.p.Key, in.Policy.Jitter))
			}
			switch {
			case in.Policy.Window > 0 && late > in.Policy.Window:
				a.Step, a.Reason = Skip, WindowReason(late, in.Policy.Window)
			case capped(c):
				a.Step, a.Reason = Skip, CapReason(in.Policy.Max)
			case policy == CatchUpLatest && (plan.More || c.p.Key != newest):
				a.Step, a.Reason = Skip, "skipped: catch-up policy latest, a newer period is due"
			case policy == CatchUpNone && (plan.More || !c.p.Scheduled.Equal(current)):
				a.Step, a.Reason = Skip, "skipped: catch-up policy none, not the current period"
			case in.Policy.Overlap == OverlapSkip && prev.Version == 0 && !in.BusyTo.IsZero() &&
				at.After(in.BusyFrom) && !at.After(in.BusyTo):
				a.Step, a.Reason = Skip, "skipped: overlap: the previous run was still going when it came due (overlap skip)"
			case at.After(in.Now):
				// Its jitter has not passed: it and every later period
				// wait, so that periods still run in order.
				if plan.Wake.IsZero() || at.Before(plan.Wake) {
					plan.Wake = at
				}
				break moves
			}
			if in.Policy.Max > 0 && prev.Version == 0 {
				a.Newer = newer(c.p.Scheduled)
			}
			if plan.More || c.p.Scheduled.Before(current) {
				plan.Overdue++
				if a.Step == Skip {
					plan.OverdueSkipped++
				}
			}
		}
		if plan.Moves == nil { // sized once: a move is large to copy as the slice grows
			plan.Moves = make([]Move, 0, len(cands)-i)
		}
		plan.Moves = append(plan.Moves, a)
	}
	if !retryWake.IsZero() && (plan.Wake.IsZero() || retryWake.Before(plan.Wake)) {
		plan.Wake = retryWake
	}
	return plan
}

// cand is a period Decide may move, with the index of its row in
// Input.Rows (-1: none, a row of Version 0).
type cand struct {
	p   Period
	row int
}

// Swap returns the fenced ledger write that applies m: a Claim makes the
// row running under token and node with Attempt one more than before and
// Started = now; a Skip makes it skipped with Finished = now and the reason
// as Output.
func (m Move) Swap(job string, token uint64, node string, now time.Time) store.RunSwap {
	r := store.Run{
		Job: job, Period: m.Period.Key, Scheduled: m.Period.Scheduled,
		Token: token, Holder: node, Attempt: m.Prev.Attempt, Manual: m.Period.Manual,
	}
	switch m.Step {
	case Claim:
		r.State = store.Running
		r.Attempt++
		r.Started = now
	case Skip:
		r.State = store.Skipped
		r.Finished = now
		r.Output = m.Reason
	}
	return store.RunSwap{Expect: m.Prev.Version, Run: r, Fenced: true}
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

// CompleteSeen returns the ledger write that records the outcome of the
// claimed row as seen by the process that ran it: Complete's write, and
// when inTerm (the run was seen to end before its term's deadline, on
// that process's own clock: it ended inside the term) fenced by the row
// alone (its version, unchanged since the claim) instead of the election
// token, so that it still counts after the term ended, as long as no
// newer term took the row over; a newer term waits Config.TakeoverGrace
// before it does. An outcome not seen inside the term is fenced by the
// token, as Complete's: refused once a newer term exists. baton run's
// supervisor records with it.
func CompleteSeen(claimed store.Run, exitCode int, output string, err error, now time.Time, inTerm bool) store.RunSwap {
	sw := Complete(claimed, exitCode, output, err, now)
	sw.Fenced = !inTerm
	return sw
}

// Release returns the ledger write that gives back the claimed row of a
// run cut short (its effect not started, or interrupted: ErrInterrupted)
// at the end of its term: pending again, so that the next term claims it
// at once instead of waiting Config.TakeoverGrace for a record that will
// not come. The row keeps its Token, Holder, Attempt and Started (the
// next claim is Attempt + 1, as a takeover's is, and retries count it);
// why is its Output. The write is fenced by the row alone (its version,
// unchanged since the claim), not by the election token: it still lands
// after a newer term began, as long as that term has not taken the row
// over; a refused release (a conflict: the row moved on) changes nothing.
// It must never be written for an effect that ran to its end, which would
// then run twice.
func Release(claimed store.Run, why string) store.RunSwap {
	r := claimed
	r.State, r.ExitCode, r.Output, r.Finished = store.Pending, 0, why, time.Time{}
	return store.RunSwap{Expect: claimed.Version, Run: r}
}

// ReleaseTimeout bounds how long a runtime waits for the Release write
// of a term's run cut short before it gives the term up anyway: the
// takeover grace, which covers a release that does not land, and at most
// a second (a second when the grace is zero).
func ReleaseTimeout(grace time.Duration) time.Duration {
	if grace <= 0 || grace > time.Second {
		return time.Second
	}
	return grace
}

// finalPrefix returns the key of the last non-manual row of the longest
// prefix of rows (in period order) whose rows are all final for good (p
// retries no failure among them), or "".
func finalPrefix(rows []store.Run, p *Policy) string {
	c := ""
	for i := range rows {
		r := &rows[i]
		if !p.final(r) {
			break
		}
		if !r.Manual {
			c = r.Period
		}
	}
	return c
}

// TakeoverRead is how often a term whose plan waits for the takeover grace
// (Plan.HeldByGrace) reads the ledger again: a tenth of the grace, between
// 10ms and 250ms (baton run's grace is its renew interval, 5s at the
// default lease: twenty reads of a few rows, once, at the start of a term
// that found a run of an older one). A run cut short by a graceful stop is given back (Release)
// by the ending term, which may land just after this term's first read
// (baton transfer, baton resign: the term ends before its run is
// stopped); read again this soon, it is claimed at once rather than when
// the grace has passed.
func TakeoverRead(grace time.Duration) time.Duration {
	return min(max(grace/10, 10*time.Millisecond), 250*time.Millisecond)
}
