package explore

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// This file is a node's runtime for the scheduler machine (package
// scheduler), the explorer's counterpart of schedule.Runner and of the
// simulator's (internal/lab/vcluster): the machine is started when its
// node's election machine wins a term and ended when it loses it; its
// store calls travel like the election machine's (applied, failed,
// answered or lost, in every order); the effect runs until an event ends
// it (it succeeds, or fails when Work.Failures allows); the ledger is a
// value in the state, whose swaps the store's own rules decide
// (storedriver.CheckRunSwap and CheckRunSuspended, as memstore applies
// them); the checks of every committed write are the simulator's
// (vcluster.WorkRules).

// Work gives every node the scheduler machine of the job named as the
// election, on a schedule of one period every Period from the epoch.
type Work struct {
	Period time.Duration
	Policy scheduler.Policy
	// Poll is the machine's poll and retry interval; it rescans the
	// whole ledger every ten.
	Poll time.Duration
	// Created is when the job was registered, in true time from the
	// start (negative: before the nodes start, its periods since then
	// missed: a leaderless stretch to catch up).
	Created time.Duration
	// Damaged are ledger rows in states no baton writes, handed out with
	// every read of the rows after them (as the simulator's
	// vcluster.Config.DamagedRows).
	Damaged []store.Run
	// Suspend lets an operator suspend the job once, at any instant.
	Suspend bool
	// Resume, with Suspend, lets the operator resume the job once, at
	// any instant after the suspension.
	Resume bool
	// Live checks that every due period is finished once faults stop
	// (periodlive.go): in every state at the horizon, every period due
	// by the bound Config.PeriodLimit derives is finished (done, failed
	// or skipped: vcluster.Finishes), unless the job is suspended then.
	// The faults, the suspension and the resume come only before that
	// bound, and the suspension spends the fault budget (Config.Faults):
	// a path has a crash or a suspension, not both, which keeps the
	// exploration to its budget. It needs Config.Prompt and an
	// exploration to completion.
	Live bool
	// Failures lets a run end failed as well as done.
	Failures bool
	// Rows are the job's ledger rows before the nodes start (its
	// history, or an operator's manual trigger), in period order.
	Rows []store.Run
	// Retention, when on, has the machine prune the ledger (a round
	// every Period, batches of up to 10 rows).
	Retention scheduler.Retention
	// Supervisor has every run's own process record its success the
	// moment it ends, before its machine is told, as baton run's
	// supervisor does (scheduler.CompleteSeen; the simulator's
	// --supervisor-records).
	Supervisor bool
	// LateRecords, with Supervisor, has the supervisor's record land
	// later (late.go): in flight from the run's end, applied at any later
	// event, and, for a run whose end it saw inside its term, before a
	// newer term's TakeoverGrace has passed on its node's wall clock, the
	// bound baton run's supervisor is held to (package scheduler's doc: a
	// writer frozen, or blocked behind a frozen process's write lock, for
	// less than the grace; the simulator's ArmFreezeLocked). A record of
	// a run not seen ending inside its term (fenced by the token) has no
	// bound. Its node's machine is told of the run's end once it lands.
	LateRecords bool
	// TakeoverGrace is every node's scheduler.Config.TakeoverGrace (baton
	// run's: its renew interval, at least a second).
	TakeoverGrace time.Duration
	// ClockTolerance and ClockStepDown turn the machine's wall-clock
	// guard on (scheduler.Config's, baton run --clock-tolerance and
	// --clock-step-down): the reference is the store's clock, true time,
	// read at once. The nodes' clock rates differ from it by less than
	// the tolerance within the horizon.
	ClockTolerance, ClockStepDown time.Duration
	// Step, when not zero, lets one node's wall clock step off the true
	// time by Step once in a path, at any instant (the simulator's
	// clock-step faults): at once outside a term, in a term at its
	// machine's next clock check or when the term ends, as the
	// simulator's lands it. It is not set right again within the
	// horizon, and the election's clock (the node's monotonic one) does
	// not move with it.
	Step time.Duration
}

// every is Work's schedule, the one baton run builds (schedule.Every).
func (wk *Work) every() scheduler.Schedule {
	s, err := schedule.Every(wk.Period, 0)
	if err != nil {
		panic("explore: " + err.Error()) // Validate refused it first
	}
	return s
}

// rules is the simulator's checker for the job's policy.
func (c *Config) rules() vcluster.WorkRules {
	return vcluster.WorkRules{Job: name, Schedule: c.Work.every(), Policy: c.Work.Policy}
}

// workConfig is node i's scheduler machine configuration, as the
// simulator's (vcluster.Config.work) with the poll as its retry and a
// tenth of its rescan.
func (c *Config) workConfig() scheduler.Config {
	wk := c.Work
	cfg := scheduler.Config{Job: name, Schedule: wk.every(), Policy: wk.Policy,
		Poll: wk.Poll, Retry: wk.Poll, Rescan: 10 * wk.Poll,
		Unfenced: c.Mutate.UnfencedLedger, Mutate: c.Mutate.Work}
	if wk.Retention.On() {
		cfg.Retention, cfg.PruneEvery, cfg.PruneBatch = wk.Retention, wk.Period, 10
	}
	cfg.ClockTolerance, cfg.ClockStepDown = wk.ClockTolerance, wk.ClockStepDown
	cfg.TakeoverGrace = wk.TakeoverGrace
	return cfg
}

// effect is a node's run in progress.
type effect struct {
	on       bool
	a        scheduler.StartEffect
	start    time.Duration // true time
	starts   int           // the node's term starts when it began (deliver only to that term)
	stopping bool          // its machine asked to stop it (StopEffect)
	froze    bool          // its node paused while it ran
}

// attempt names one attempt of a period.
type attempt struct {
	Period  string
	Token   uint64
	Attempt int
}

func attemptOf(r store.Run) attempt { return attempt{r.Period, r.Token, r.Attempt} }

// startWork starts node i's scheduler machine for the term won with
// token.
func (w *world) startWork(i int, token uint64, out *strings.Builder) error {
	n := &w.nodes[i]
	n.starts++
	w.boundRecords(i, token)
	return w.stepWork(i, scheduler.Start{Token: token, Node: fmt.Sprintf("node-%d", i)}, out)
}

// stepWork feeds node i's scheduler machine ev at its local now and
// executes the actions.
func (w *world) stepWork(i int, ev scheduler.Event, out *strings.Builder) error {
	n := &w.nodes[i]
	cp := *n.s // copy on write, as step does: moves is only re-sliced, inbox grows only with Momentary (not set)
	n.s = &cp
	n.shashd = false
	var verr error
	for _, a := range n.s.Step(w.wall(i), ev) {
		if err := w.doWork(i, a, out); err != nil && verr == nil {
			verr = err
		}
	}
	if w.c.Prefer != nil {
		if err := w.safePoint(i, out); err != nil && verr == nil {
			verr = err
		}
	}
	return verr
}

// tell records that a's machine was told its effect ran to its end.
func (w *world) tell(a attempt) {
	if !slices.Contains(w.told, a) {
		w.told = append(w.told, a)
		slices.SortFunc(w.told, func(x, y attempt) int {
			if c := strings.Compare(x.Period, y.Period); c != 0 {
				return c
			}
			if x.Token != y.Token {
				return int(x.Token) - int(y.Token)
			}
			return x.Attempt - y.Attempt
		})
	}
}

func (w *world) doWork(i int, a scheduler.Action, out *strings.Builder) error {
	n := &w.nodes[i]
	switch a := a.(type) {
	case scheduler.Register, scheduler.ReadJob, scheduler.ReadRuns, scheduler.SwapRun, scheduler.GetRun, scheduler.Prune:
		w.send(request{node: i, inc: n.inc, work: a})
		w.say(out, "node-%d: %s", i, workText(a))
		if sw, ok := a.(scheduler.SwapRun); ok {
			if v := vcluster.ClockGuard(fmt.Sprintf("node-%d", i), sw, n.checkedOff, w.c.Work.ClockTolerance); v != "" {
				return errors.New(v)
			}
		}
	case scheduler.CheckClock:
		// The reference is the store's clock, the true time, answered
		// at once (as the simulator's); a step waiting for the node's
		// clock lands first.
		w.landStep(i, out)
		n = &w.nodes[i]
		n.checkedOff = n.wallOff
		w.say(out, "node-%d: clock check: wall %v, reference %v", i, w.wall(i).Sub(t0), w.now)
		return w.stepWork(i, scheduler.ClockRead{Reference: t0.Add(w.now)}, out)
	case scheduler.ClockHeld:
		n.heldAt = -1
		if a.Held {
			n.heldAt = w.now
		}
		w.say(out, "node-%d: clock guard held=%v (skew %v)", i, a.Held, a.Skew)
	case scheduler.StepDown:
		// As baton run does: Run returns, and the Elector resigns (an
		// event of its own, before time moves on: evStepDown).
		n.stepDown = true
		w.say(out, "node-%d: steps down: %v", i, a.Err)
	case scheduler.StartEffect:
		if a.RequireValid && !w.valid(i) {
			w.say(out, "node-%d: run of %s not started: its term is not valid", i, a.Period.Key)
			return w.stepWork(i, scheduler.EffectDone{NotStarted: true}, out)
		}
		n.eff = effect{on: true, a: a, start: w.now, starts: n.starts}
		w.say(out, "node-%d: run of %s started (token %d, attempt %d)", i, a.Period.Key, a.Run.Token, a.Run.Attempt)
		if !w.valid(i) {
			return fmt.Errorf("node-%d started the effect of %s with token %d while its term was not valid on its own clock", i, a.Period.Key, a.Run.Token)
		}
	case scheduler.StopEffect:
		if n.eff.on {
			n.eff.stopping = true
		}
		w.say(out, "node-%d: stop the run: %v", i, a.Cause)
	case scheduler.Halt:
		w.say(out, "node-%d: work halts: %v", i, a.Cause)
	case scheduler.Fail:
		var dr *store.DamagedRowError
		if errors.As(a.Err, &dr) && slices.ContainsFunc(w.c.Work.Damaged, func(d store.Run) bool { return d.Period == dr.Period && d.State == dr.State }) {
			// As baton run does: the work ends with the error; the
			// term goes on.
			w.say(out, "node-%d: work ends: a damaged ledger row %s", i, dr.Period)
			return nil
		}
		return fmt.Errorf("node-%d's scheduler failed: %v", i, a.Err)
	case scheduler.Note:
		if a.Level >= slog.LevelWarn {
			w.say(out, "node-%d: note: %s %s", i, a.Msg, a.Period)
		}
		return w.checkOwnCompletion(i, a)
	default:
		return fmt.Errorf("explore: node-%d's scheduler asked for %T, which no configuration here sets up", i, a)
	}
	return nil
}

// endWork tells node i's scheduler machine that its term ended.
func (w *world) endWork(i int, out *strings.Builder) error {
	n := &w.nodes[i]
	n.heldAt, n.stepDown = -1, false
	if n.s == nil || !n.s.Working() && !n.s.Busy() {
		w.landStep(i, out)
		return nil
	}
	err := w.stepWork(i, scheduler.End{}, out)
	w.landStep(i, out)
	return err
}

// wall is node i's wall clock now: its clock plus the step it took
// (Work.Step). The scheduler machine runs on it; the election machine on
// the clock alone (a runtime's monotonic reading).
func (w *world) wall(i int) time.Time { return w.local(i, w.now).Add(w.nodes[i].wallOff) }

// landStep sets node i's wall clock to the step that waits for it, if
// any (vcluster's landStep): at a clock check of its machine or when its
// term ends. A step on a held-off leader restarts the step-down bound.
func (w *world) landStep(i int, out *strings.Builder) {
	n := &w.nodes[i]
	if !n.stepping {
		return
	}
	n.wallOff, n.stepping = n.stepTo, false
	w.say(out, "node-%d: its wall clock is now %v off", i, n.wallOff)
	if n.heldAt >= 0 {
		n.heldAt = w.now
	}
}

// applyWork executes a scheduler's store call on the ledger and returns
// the invariant a committed write broke.
func (w *world) applyWork(r *request) error {
	r.applied = true
	switch a := r.work.(type) {
	case scheduler.Register:
		r.ans = scheduler.Registered{Job: w.job}
	case scheduler.ReadJob:
		r.ans = scheduler.JobRead{Job: w.job}
	case scheduler.ReadRuns:
		var rows []store.Run
		for _, row := range w.rows {
			if row.Period > a.After {
				rows = append(rows, row)
			}
		}
		for _, d := range w.c.Work.Damaged {
			if d.Period > a.After {
				rows = append(rows, d)
			}
		}
		slices.SortFunc(rows, func(x, y store.Run) int { return strings.Compare(x.Period, y.Period) })
		r.ans = scheduler.RunsRead{Rows: rows}
	case scheduler.GetRun:
		k := slices.IndexFunc(w.rows, func(row store.Run) bool { return row.Period == a.Period })
		if k < 0 {
			r.ans = scheduler.ReadBack{Err: fmt.Errorf("run %s/%s: %w", name, a.Period, store.ErrNotFound)}
		} else {
			r.ans = scheduler.ReadBack{Run: w.rows[k]}
		}
	case scheduler.SwapRun:
		row, err, verr := w.swapRun(r.node, a)
		r.ans = scheduler.Swapped{Run: row, Err: err}
		return verr
	case scheduler.Prune:
		return w.prune(r, a)
	default:
		return fmt.Errorf("explore: no store call %T", a)
	}
	return nil
}

// swapRun applies node i's ledger write as memstore does, with the
// store's own rules, and checks it, if it commits, with the simulator's
// checks: it returns the row written or the store's error, and the
// invariant broken.
func (w *world) swapRun(i int, a scheduler.SwapRun) (store.Run, error, error) {
	node := fmt.Sprintf("node-%d", i)
	if v := vcluster.Damaged(node, a, w.c.Work.Damaged); v != "" {
		return store.Run{}, nil, errors.New(v)
	}
	sw := a.Swap
	k := slices.IndexFunc(w.rows, func(row store.Run) bool { return row.Period == sw.Run.Period })
	var cur store.Run
	if k >= 0 {
		cur = w.rows[k]
	}
	err := storedriver.CheckRunSwap(cur, sw, w.rec.Token)
	if err == nil && !w.c.Mutate.Work.IgnoreSuspension { // the mutation turns the store's check off too, as the simulator's does
		err = storedriver.CheckRunSuspended(sw, w.job, true)
	}
	if err != nil {
		return store.Run{}, err, nil
	}
	w.ledgerVer++
	if vcluster.Finishes(a) {
		w.finish(sw.Run.Period)
	}
	row := sw.Run
	row.Version = w.ledgerVer
	if k >= 0 {
		w.rows[k] = row
	} else {
		w.rows = append(w.rows, row)
		slices.SortFunc(w.rows, func(x, y store.Run) int { return strings.Compare(x.Period, y.Period) })
	}
	rules, busy := w.c.rules(), w.nodes[i].busy
	for _, v := range []string{
		rules.Cap(a), rules.Window(a), rules.Jitter(a), vcluster.Suspended(a, w.job),
		rules.Overlap(node, a, busy), rules.Retry(a, cur, k >= 0), rules.Skip(a),
		w.takeover(node, a, cur, k >= 0),
	} {
		if v != "" {
			return row, nil, errors.New(v)
		}
	}
	if a.Kind == scheduler.KindRelease {
		if v := vcluster.Release(node, a, slices.Contains(w.told, attemptOf(sw.Run))); v != "" {
			return row, nil, errors.New(v)
		}
	}
	// A release, and a supervisor's record of a run that ended inside its
	// term, are fenced by the row alone: they may commit after a newer
	// term began, as long as it has not taken the row over (the
	// simulator's lateRelease and lateInTermRecord). The explorer's
	// supervisor records at the instant its run ends, in the term's
	// token or refused by its fence, but with Work.LateRecords (late.go).
	byRow := (a.Kind == scheduler.KindRelease || a.Kind == scheduler.KindComplete && w.c.Work.Supervisor) && !sw.Fenced && sw.Expect != 0
	if !byRow {
		if v := vcluster.LedgerToken(node, a, w.rec.Token); v != "" {
			return row, nil, errors.New(v)
		}
	}
	return row, nil, nil
}

// prune applies a prune of the ledger as memstore does, with the store's
// own rules (storedriver.CheckPrune and PruneDeletes), and checks the
// rows it deleted with the simulator's check.
func (w *world) prune(r *request, a scheduler.Prune) error {
	if err := storedriver.CheckPrune(a.Prune, w.rec.Token); err != nil {
		r.ans = scheduler.Pruned{Err: err}
		return nil
	}
	keys := make([]string, len(w.rows))
	for k, row := range w.rows {
		keys[k] = row.Period
	}
	del := storedriver.PruneDeletes(keys, func(k string) store.Run {
		return w.rows[slices.Index(keys, k)]
	}, a.Prune)
	r.ans = scheduler.Pruned{N: len(del)}
	if len(del) == 0 {
		return nil
	}
	before := slices.Clone(w.rows)
	w.rows = slices.DeleteFunc(w.rows, func(row store.Run) bool { return slices.Contains(del, row.Period) })
	if v := vcluster.PruneCheck(fmt.Sprintf("node-%d", r.node), w.c.Work.Retention, w.c.Work.ClockTolerance, t0.Add(w.now), before, w.rows); v != "" {
		return errors.New(v)
	}
	return nil
}

// supervise is the run a's own process recording its success the moment
// it ends (scheduler.CompleteSeen), before node i's machine is told: fenced
// by the row when it saw the end inside its term (the node's term is the
// run's and valid on its clock), else by the token (vcluster's
// supervisorRecord). The row it wrote is kept as the node's own record of
// the period.
func (w *world) supervise(i int, a scheduler.StartEffect, out *strings.Builder) error {
	n := &w.nodes[i]
	inTerm := n.m.Token() == a.Run.Token && w.valid(i)
	return w.writeRecord(i, a, inTerm, w.wall(i), out)
}

// writeRecord writes node i's supervisor's record of the run a, whose end
// it saw at wall time seen, inside its term or not.
func (w *world) writeRecord(i int, a scheduler.StartEffect, inTerm bool, seen time.Time, out *strings.Builder) error {
	sw := scheduler.CompleteSeen(a.Run, 0, "", nil, seen, inTerm && !w.c.Mutate.TokenFencedRecord)
	if w.c.Mutate.UnfencedLedger {
		sw.Fenced = false
	}
	row, err, verr := w.swapRun(i, scheduler.SwapRun{Kind: scheduler.KindComplete, Swap: sw})
	if err != nil {
		w.say(out, "node-%d: its supervisor could not record %s: %s", i, a.Period.Key, errText(err))
		return verr
	}
	w.say(out, "node-%d: its supervisor recorded %s", i, rowText(row))
	n := &w.nodes[i]
	// A new slice: the parent state shares the old one.
	n.own = append(slices.DeleteFunc(slices.Clone(n.own), func(r store.Run) bool { return r.Period == row.Period }), row)
	return verr
}

// checkOwnCompletion checks a note of node i's machine with the
// simulator's check: a completion refused with a conflict must not be
// the one its own supervisor recorded for that attempt.
func (w *world) checkOwnCompletion(i int, a scheduler.Note) error {
	n := w.nodes[i]
	k := slices.IndexFunc(n.own, func(r store.Run) bool { return r.Period == a.Period })
	if k < 0 || a.Level < slog.LevelWarn || !errors.Is(a.Err, store.ErrConflict) {
		return nil
	}
	c := slices.IndexFunc(w.rows, func(r store.Run) bool { return r.Period == a.Period })
	if c < 0 {
		return nil
	}
	if v := vcluster.OwnCompletion(fmt.Sprintf("node-%d", i), a, n.own[k], w.rows[c], n.m.Token()); v != "" {
		return errors.New(v)
	}
	return nil
}

// endEffect ends node i's run: stopped (its machine asked), failed, or
// done. Its machine is told when the term that started it is still the
// node's (vcluster's effectEnded and finishEffect).
func (w *world) endEffect(i int, fail bool, out *strings.Builder) error {
	n := &w.nodes[i]
	e := n.eff
	n.eff = effect{}
	deliver := e.starts == n.starts
	busy := func() {
		if deliver && n.s.Working() {
			n.busy = vcluster.Busy{Token: e.a.Run.Token, From: e.a.Run.Started, To: w.wall(i)}
		}
	}
	key := e.a.Period.Key
	switch {
	case e.stopping:
		w.say(out, "node-%d: run of %s stopped", i, key)
		busy()
		if deliver {
			return w.stepWork(i, scheduler.EffectDone{ExitCode: 128 + 15, Output: "stopped", Err: scheduler.ErrInterrupted}, out)
		}
		return nil
	case fail:
		w.say(out, "node-%d: run of %s failed", i, key)
	default:
		w.say(out, "node-%d: run of %s done", i, key)
	}
	var verr error
	if t := w.c.Work.Policy.Timeout; deliver && n.s.Working() && !e.froze {
		if v := vcluster.Timeout(key, fmt.Sprintf("node-%d", i), w.now-e.start, t); v != "" {
			verr = errors.New(v)
		}
	}
	busy()
	if !deliver {
		return verr
	}
	if !fail && w.c.Work.Supervisor && w.c.Work.LateRecords {
		// Its machine is told once the record lands (landRecord).
		w.sendRecord(i, e, out)
		return verr
	}
	if !fail && w.c.Work.Supervisor {
		if err := w.supervise(i, e.a, out); err != nil && verr == nil {
			verr = err
		}
	}
	d := scheduler.EffectDone{}
	if fail {
		d = scheduler.EffectDone{ExitCode: 1, Output: "simulated failure"}
	} else {
		w.tell(attemptOf(e.a.Run)) // its machine is told that it ran to its end
	}
	err := w.stepWork(i, d, out)
	if verr == nil {
		verr = err
	}
	return verr
}

func workText(a scheduler.Action) string {
	switch a := a.(type) {
	case scheduler.Register:
		return "register the job"
	case scheduler.ReadJob:
		return "read the job"
	case scheduler.ReadRuns:
		if a.After == "" {
			return "read the ledger"
		}
		return "read the ledger after " + a.After
	case scheduler.SwapRun:
		return fmt.Sprintf("%s %s: %s token=%d attempt=%d expect=v%d", a.Kind, a.Swap.Run.Period, a.Swap.Run.State, a.Swap.Run.Token, a.Swap.Run.Attempt, a.Swap.Expect)
	case scheduler.GetRun:
		return "read back " + a.Period
	case scheduler.Prune:
		return fmt.Sprintf("prune %v before %q keep %d limit %d", a.Prune.States, a.Prune.Before, a.Prune.Keep, a.Prune.Limit)
	}
	return fmt.Sprintf("%T", a)
}

func workAnswerText(ev scheduler.Event) string {
	var err error
	var s string
	switch ev := ev.(type) {
	case scheduler.Registered:
		err, s = ev.Err, "registered, created "+ev.Job.Created.Format(time.RFC3339Nano)
	case scheduler.JobRead:
		err, s = ev.Err, "job read"
		if ev.Job.Suspension.Active() {
			s += ", suspended by " + ev.Job.Suspension.By
		}
	case scheduler.RunsRead:
		err = ev.Err
		var b strings.Builder
		b.WriteString("ledger read:")
		if len(ev.Rows) == 0 {
			b.WriteString(" no rows")
		}
		for _, r := range ev.Rows {
			fmt.Fprintf(&b, " %s", rowText(r))
		}
		s = b.String()
	case scheduler.Swapped:
		err, s = ev.Err, "written: "+rowText(ev.Run)
	case scheduler.ReadBack:
		err, s = ev.Err, "read back: "+rowText(ev.Run)
	case scheduler.Pruned:
		err, s = ev.Err, fmt.Sprintf("pruned %d rows", ev.N)
	}
	if err != nil {
		return errText(err)
	}
	return s
}

func rowText(r store.Run) string {
	st := string(r.State)
	if !r.State.Known() {
		st = fmt.Sprintf("%q", r.State)
	}
	return fmt.Sprintf("%s=%s/t%d/a%d/v%d", strings.TrimPrefix(strings.TrimSuffix(r.Period, "Z"), "2026-01-01T"), st, r.Token, r.Attempt, r.Version)
}

// doWorkRequest executes an event on the scheduler's store call at index
// j of w.reqs; cur says whether its process is still the node's.
func (w *world) doWorkRequest(ev Event, j int, cur bool, out *strings.Builder) error {
	i := int(ev.Node)
	r := &w.reqs[j]
	switch ev.Kind {
	case evApply:
		verr := w.applyWork(r)
		w.say(out, "store: node-%d's %s: %s", i, workText(r.work), workAnswerText(r.ans))
		if !cur {
			w.reqs = slices.Delete(w.reqs, j, j+1) // its process is gone: nobody takes the answer
		}
		return verr
	case evFail:
		rq := *r
		w.reqs = slices.Delete(w.reqs, j, j+1)
		if !cur {
			w.say(out, "store: the request of a crashed process is lost")
			return nil
		}
		w.losses++
		w.say(out, "node-%d: told unavailable", i)
		return w.stepWork(i, scheduler.Failed(rq.work, store.ErrUnavailable), out)
	case evDeliver:
		rq := *r
		w.reqs = slices.Delete(w.reqs, j, j+1)
		w.say(out, "node-%d: told %s", i, workAnswerText(rq.ans))
		return w.stepWork(i, rq.ans, out)
	case evLose:
		rq := *r
		w.reqs = slices.Delete(w.reqs, j, j+1)
		w.losses++
		w.say(out, "node-%d: told unavailable", i)
		return w.stepWork(i, scheduler.Failed(rq.work, store.ErrUnavailable), out)
	}
	return fmt.Errorf("explore: %s: not a store event", ev.line())
}
