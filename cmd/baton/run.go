package main

import (
	"context"
	"errors"
	"flag"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// Backoff of a supervised singleton that keeps exiting.
const (
	restartMin = time.Second
	restartMax = 30 * time.Second
)

const runSynopsis = `run [FLAGS] JOB -- COMMAND [ARGS...]

Runs COMMAND on the node that leads JOB, nowhere else. Three modes:

  --every D or --cron EXPR   scheduled: COMMAND runs once per period while
      this node leads; every period is recorded in the run ledger (see
      'baton runs') and at most one run per period is recorded as done.
      Periods missed while nobody led are caught up by the next leader,
      oldest first, at most the newest --catch-up-max (100) of them; older
      ones are recorded skipped, "outside the catch-up window" (see
      Catch-up). --timeout stops a run that takes
      too long and records it failed; --retries runs a failed period
      again, --retry-backoff apart, each attempt counted in the ledger.
  --once   a lock, as flock or 'etcdctl lock': campaign (at most --wait),
      run COMMAND once while leading, release, and exit with COMMAND's
      status. Two --once runs of one job run COMMAND one after the other,
      unless the second gives up (--wait).
  neither  a supervised singleton: COMMAND is started when this node
      becomes leader and restarted with backoff when it exits
      (--restart), stopped when leadership is lost.

COMMAND runs in its own process group under a small supervisor process,
and never outlives baton: whatever ends baton (a signal, SIGKILL, the OOM
killer), the group gets SIGTERM, and SIGKILL --grace later. Nor does it
outlive the lease: baton hands the supervisor every new lease deadline,
and the supervisor, on its own clock, sends the group SIGTERM --grace
before the deadline and SIGKILL at it when no renewal came in time,
whatever baton is doing (stopped, frozen, starved). The next node starts
its copy lease + 2e after the last renewal it saw, once the group is gone.
COMMAND is also stopped when leadership is lost. SIGINT, SIGTERM, SIGHUP
and SIGQUIT to baton stop COMMAND, release the lease so that another node
takes over at once, and exit. Every signal sent to COMMAND is logged.

Job control never stops baton run: SIGTSTP (Ctrl-Z) is logged and
ignored, because a paused leader renews nothing, so its command would be
stopped at the deadline and the job taken over anyway (Ctrl-C hands it
over at once instead); SIGTTIN and SIGTTOU are ignored. The supervisor
ignores all three too; COMMAND keeps their default. What no supervisor
covers: a SIGSTOP of the supervisor itself, or the whole host (or baton
and its supervisor both) frozen: COMMAND then runs on past the lease, and
only a resource that checks BATON_TOKEN (a fence) refuses its late work.

COMMAND gets BATON_NAME, BATON_TOKEN (the fencing token), BATON_NODE and,
for a scheduled run, BATON_PERIOD, on top of baton's environment. A
resource that checks BATON_TOKEN refuses a deposed leader's late work:
without that check a period's effect can happen twice if a leader is
deposed mid-run (the ledger still records one done run).

Standard input: with --once COMMAND reads baton's own (echo x | baton run
--once J -- CMD passes x, as flock does); a singleton and scheduled runs get
/dev/null, since they start whenever this node leads, with nobody to type.

The leader prunes the ledger in small fenced batches while no period is due:
done and skipped runs older than --keep or beyond the newest --keep-rows
(default 30 days or 10,000 rows, whichever comes first); failed runs stay
until they are re-run or pruned by hand ('baton prune --failed').

Catch-up: after an outage a daily job runs every missed day (stopped for 3
days, the 3 days once each) and a 10s job at most 100 periods, not a flood
of every one. systemd's Persistent= runs a missed timer once (a billing day
lost); a Kubernetes CronJob stops for good after 100 missed starts; Temporal
catches up a year. --catch-up-max 0 removes the cap, --catch-up-window D
adds a limit in time, --catch-up latest runs only the newest. A period due
while the previous run still goes waits for it (--overlap queue) or is
recorded skipped (--overlap skip). --jitter D delays each period by up to D,
the same delay on every node (from JOB and the period key), recorded in the
run's delay.

A job has one schedule and catch-up policy, stored when it first runs.
A node started with another one refuses (exit 2) and names both, unless
--reschedule replaces the stored one: the change is recorded in the
election log ('baton history'), and the leader still running the old
schedule loses its lease at its next renewal; a node with the old schedule
stops with an error when it would lead again.

` + cronRuleHelp + `

Before campaigning, COMMAND is checked: found, a regular file this user
may execute, and a program (a "#!" script whose interpreter exists, or an
executable binary); otherwise exit 2 and no token is taken.

Logs go to standard error, COMMAND's output to baton's, line by line.

Exit status:
  0    stopped by a signal after releasing the lease (singleton,
       scheduled); COMMAND exited 0 (--once, --restart never|on-failure)
  1    runtime failure: the store failed for good, COMMAND could not
       start; --once stopped by a signal before COMMAND ran
  2    usage error: bad flags, arguments, store URL; nothing was changed
  N    --once, or a singleton that is not restarted: COMMAND's status
       (128+S when signal S killed it)
  75   --once: leadership not obtained within --wait (EX_TEMPFAIL); the
       message names the holder and its token
  76   --once: leadership lost while COMMAND ran; COMMAND was stopped`

// Exit codes of 'baton run --once' beyond COMMAND's own.
const (
	exitNotLeader = 75 // EX_TEMPFAIL: leadership not obtained within --wait
	exitLost      = 76 // leadership lost while COMMAND ran
)

// restartPolicy says when a singleton's command is started again.
type restartPolicy string

const (
	restartAlways    restartPolicy = "always"
	restartOnFailure restartPolicy = "on-failure"
	restartNever     restartPolicy = "never"
)

// runConfig is the validated configuration of 'baton run'.
type runConfig struct {
	storeURL string
	node     string
	lease    time.Duration
	renew    time.Duration
	margin   time.Duration
	grace    time.Duration
	job      schedule.Job
	argv     []string
	key      *fenceKeyFlag // signs BATON_TOKEN (fencekey.go)
	once     bool
	wait     time.Duration // --once: < 0 waits as long as it takes
	restart  restartPolicy
	timeout  time.Duration // scheduled runs; 0: none
	// clockTolerance is the wall-clock guard's tolerance for scheduled
	// runs; 0 turns the guard off.
	clockTolerance time.Duration
	keep           schedule.Retention
	logs           logConfig
	reschedule     bool   // --reschedule: replace the stored schedule
	metricsAddr    string // --metrics-addr; empty: no metrics server
}

// runFlags is what 'baton run' was given, as typed: every flag's value,
// which flags were set, JOB and COMMAND. parseRun fills it and checks
// only its shape; check turns it into a runConfig.
type runFlags struct {
	set            map[string]bool // the flags given on the command line
	storeURL       string
	fenceKey       string // --fence-key-file
	node           string
	lease, renew   time.Duration
	margin, grace  time.Duration
	sched          scheduleFlags
	catchUp        string
	window         time.Duration
	catchUpMax     int
	overlap        string
	jitter         time.Duration
	timeout        time.Duration
	clockTolerance time.Duration
	retries        int
	retryBackoff   time.Duration
	once           bool
	wait           time.Duration
	restart        string
	reschedule     bool
	keep           string
	keepRows       int
	logs           logConfig
	metricsAddr    string
	job            string   // JOB
	argv           []string // COMMAND [ARGS...]
}

// runRun is 'baton run': parse the arguments, validate them, execute.
func runRun(ctx context.Context, e *env, args []string) int {
	f, done, code := parseRun(e, args)
	if done {
		return code
	}
	c, err := f.check()
	if err != nil {
		return e.fail("run", err)
	}
	return executeRun(ctx, e, c)
}

// parseRun parses the arguments of 'baton run' into runFlags: flags, then
// JOB -- COMMAND [ARGS...]. done and code are as for env.parse; a bad
// argument is printed as one line, exit 2.
func parseRun(e *env, args []string) (f runFlags, done bool, code int) {
	fs := e.newFlagSet("run", runSynopsis)
	key, metricsAddr := f.register(fs)
	if done, code := e.parse(fs, args); done {
		return f, true, code
	}
	f.set, f.fenceKey, f.metricsAddr = flagsSet(fs), key.path, *metricsAddr
	if err := f.positional(fs.Args()); err != nil {
		return f, true, e.fail("run", err)
	}
	return f, false, exitOK
}

// register registers the flags of 'baton run' on fs, with their defaults,
// into f; the fence key and metrics address are read from what it returns.
func (f *runFlags) register(fs *flag.FlagSet) (*fenceKeyFlag, *string) {
	storeFlagVar(fs, &f.storeURL)
	key := registerFenceKey(fs)
	fs.StringVar(&f.node, "node", "", "this node's id (default: host name and process id)")
	fs.DurationVar(&f.lease, "lease", baton.DefaultLease, "lease duration")
	fs.DurationVar(&f.renew, "renew", 0, "renew interval, shorter than the lease (default: a third of the lease)")
	fs.DurationVar(&f.margin, "clock-margin", baton.DefaultMargin, "clock uncertainty e; a takeover waits lease + 2e")
	fs.DurationVar(&f.sched.every, "every", 0, "run once per interval, aligned to the Unix epoch (whole seconds)")
	fs.DurationVar(&f.sched.offset, "offset", 0, "with --every: shift the periods by this much, in [0, interval)")
	fs.StringVar(&f.sched.cron, "cron", "", "run at the instants of this cron expression: 5 fields or @hourly, @daily, @weekly, @monthly, @yearly")
	fs.StringVar(&f.sched.tz, "tz", "UTC", "with --cron: the IANA time zone the expression is read in")
	fs.StringVar(&f.catchUp, "catch-up", "all", "which periods missed while nobody led to run: all (oldest first), latest, none")
	fs.DurationVar(&f.window, "catch-up-window", 0, "skip periods more than this late (0: no limit); manual triggers are never skipped")
	fs.IntVar(&f.catchUpMax, "catch-up-max", schedule.DefaultCatchUpMax, "run at most the newest N missed periods after an outage, recording older ones skipped (\"outside the catch-up window\"); 0: no cap")
	fs.StringVar(&f.overlap, "overlap", string(schedule.OverlapQueue), "a period that comes due while the previous run is still going: queue (run it after) or skip (record it skipped, reason overlap)")
	fs.DurationVar(&f.jitter, "jitter", 0, "delay each period by up to this much, derived from JOB and the period key (the same on every node; recorded in the run's delay), so that jobs on one cron minute do not all start at once; 0: none")
	fs.DurationVar(&f.timeout, "timeout", 0, "with --every or --cron: stop a run still going after this long and record it failed (reason \"timeout\"); 0: no limit")
	fs.DurationVar(&f.clockTolerance, "clock-tolerance", schedule.DefaultClockTolerance, "with --every or --cron: claim and skip no period while this node's wall clock differs from the reference (PostgreSQL's server clock; elsewhere the wall clock at start carried forward by the monotonic clock) by more than this; 0 turns the guard off")
	fs.IntVar(&f.retries, "retries", 0, "with --every or --cron: run a failed period (non-zero exit, timeout) again up to N times; each attempt is counted in the ledger ('baton runs')")
	fs.DurationVar(&f.retryBackoff, "retry-backoff", 10*time.Second, "with --retries: the wait between a failed attempt and the next")
	fs.BoolVar(&f.once, "once", false, "run COMMAND once while leading, release, and exit with its status (see Exit status)")
	f.wait = -1
	fs.Var(waitFlag{&f.wait}, "wait", "with --once: give up after waiting `duration` for leadership, exit 75 (0: do not wait; default: wait as long as it takes)")
	fs.StringVar(&f.restart, "restart", string(restartAlways), "singleton: when to start COMMAND again after it exits: always (default: a singleton is a service that must run somewhere, and restarting here needs no failover), on-failure (a non-zero status), never; when not restarted, baton releases the lease and exits with COMMAND's status")
	fs.BoolVar(&f.reschedule, "reschedule", false, "replace the job's stored schedule and catch-up policy with this node's (recorded in the election log)")
	fs.StringVar(&f.keep, "keep", schedule.FormatAge(schedule.DefaultRetention.Age), "the leader prunes done and skipped runs older than this: days (30d) or a duration (72h); 0: no bound by age")
	fs.IntVar(&f.keepRows, "keep-rows", schedule.DefaultRetention.Rows, "the leader prunes done and skipped runs beyond the newest N; 0: no bound by count")
	fs.DurationVar(&f.grace, "grace", 5*time.Second, "time between SIGTERM and SIGKILL when stopping COMMAND; shorter than lease minus renew (when not given: 5s, or half of lease minus renew if that is shorter)")
	f.logs.flags(fs)
	return key, addMetricsFlag(fs)
}

// positional reads JOB -- COMMAND [ARGS...] from the arguments left after
// the flags.
func (f *runFlags) positional(rest []string) error {
	switch {
	case len(rest) == 0:
		return usagef("missing JOB; want JOB -- COMMAND [ARGS...]")
	case len(rest) >= 2 && rest[1] != "--" && rest[1][0] == '-':
		return usagef("unexpected %q after JOB; flags go before JOB", rest[1])
	case len(rest) < 2 || rest[1] != "--":
		return usagef("missing COMMAND; want JOB -- COMMAND [ARGS...] (the -- is required)")
	case len(rest) < 3:
		return usagef("missing COMMAND after --")
	}
	f.job, f.argv = rest[0], rest[2:]
	if f.job == "" {
		return usagef("JOB must not be empty")
	}
	return nil
}

// check validates f and returns the configuration to run. Every bound of
// the election's timing and of the schedule is the machines' own
// (election.Config.Validate through baton.CheckOptions,
// scheduler.Config.Validate through schedule.CheckOptions), reported as
// the flag to fix; check itself only adds the CLI's rules: which flags go
// together, --grace, --timeout, --wait, and COMMAND's existence.
func (f runFlags) check() (runConfig, error) {
	c := runConfig{storeURL: f.storeURL, node: f.node, lease: f.lease, renew: f.lease / 3, margin: f.margin,
		grace: f.grace, job: schedule.Job{Name: f.job}, argv: f.argv, key: &fenceKeyFlag{path: f.fenceKey},
		once: f.once, wait: f.wait, timeout: f.timeout, clockTolerance: f.clockTolerance, logs: f.logs,
		keep: schedule.Retention{Rows: f.keepRows}, reschedule: f.reschedule, metricsAddr: f.metricsAddr}
	if f.set["renew"] {
		c.renew = f.renew
	}
	if f.set["node"] && c.node == "" {
		return c, usagef("invalid --node \"\": the node id must not be empty; leave --node out for the host name and process id")
	}
	if err := c.logs.check(); err != nil {
		return c, err
	}
	// The election machine's bounds (lease, renew interval, margin below
	// the lease, a printable node id), reported as flags.
	if err := baton.CheckOptions(baton.WithLease(c.lease), baton.WithRenew(c.renew), baton.WithClockMargin(c.margin), baton.WithNode(c.node)); err != nil {
		return c, asUsage(err)
	}
	if err := checkName("JOB", c.job.Name); err != nil {
		return c, err
	}
	if err := c.key.load(); err != nil {
		return c, err
	}
	if !f.set["grace"] {
		c.grace = min(c.grace, (c.lease-c.renew)/2)
	}
	if c.grace <= 0 || c.grace >= c.lease-c.renew {
		return c, usagef("invalid --grace %v; want a positive duration shorter than the lease minus the renew interval (%v - %v = %v), so that COMMAND is stopped before the lease could expire",
			c.grace, c.lease, c.renew, c.lease-c.renew)
	}
	if err := f.checkSchedule(&c); err != nil {
		return c, err
	}
	if err := f.checkMode(&c); err != nil {
		return c, err
	}
	// The scheduler machine's bounds (catch-up policy, retries, jitter,
	// retention, clock tolerance), before any store is opened.
	if err := schedule.CheckOptions(c.job, c.runnerOptions(schedule.StepReference())...); err != nil {
		return c, asUsage(err)
	}
	return c, checkCommand(c.argv[0]) // before campaigning: no token for a command that cannot start
}

// checkSchedule sets c's schedule, catch-up policy and retention from f,
// refusing the policy's flags without a schedule.
func (f runFlags) checkSchedule(c *runConfig) error {
	s, err := f.sched.parse(f.set)
	if err != nil {
		return err
	}
	c.job.Schedule = s
	cu, err := schedule.ParseCatchUp(f.catchUp)
	if err != nil {
		return usagef("invalid --catch-up %q; want all, latest or none", f.catchUp)
	}
	if s == nil && (f.set["catch-up"] || f.set["catch-up-window"] || f.set["catch-up-max"] || f.set["overlap"] || f.set["jitter"]) {
		return usagef("--catch-up, --catch-up-window, --catch-up-max, --overlap and --jitter need a schedule (--every or --cron)")
	}
	ov, err := schedule.ParseOverlap(f.overlap)
	if err != nil {
		return usagef("invalid --overlap %q; want queue or skip", f.overlap)
	}
	c.job.Policy = schedule.Policy{CatchUp: cu, Window: f.window, Retries: f.retries, RetryBackoff: f.retryBackoff,
		Overlap: ov, Jitter: f.jitter}
	if s != nil {
		c.job.Policy.Max = f.catchUpMax
	}
	if f.keep != "0" {
		age, err := schedule.ParseAge(f.keep)
		if err != nil {
			return usagef("invalid --keep: %v; or 0 for no bound by age", err)
		}
		c.keep.Age = age
	}
	if s == nil && (f.set["keep"] || f.set["keep-rows"]) {
		return usagef("--keep and --keep-rows need a schedule (--every or --cron): a singleton has no ledger")
	}
	return nil
}

// checkMode checks the flags that belong to one mode (scheduled, --once,
// singleton) and sets c's restart policy.
func (f runFlags) checkMode(c *runConfig) error {
	scheduled := c.job.Schedule != nil
	switch {
	case c.timeout < 0:
		return usagef("invalid --timeout %v; want 0 (no limit) or more", c.timeout)
	case f.set["timeout"] && !scheduled:
		return usagef("--timeout needs a schedule (--every or --cron)")
	case f.set["retries"] && !scheduled:
		return usagef("--retries needs a schedule (--every or --cron); a singleton restarts by --restart")
	case f.set["retry-backoff"] && !f.set["retries"]:
		return usagef("--retry-backoff needs --retries")
	case c.once && scheduled:
		return usagef("--once excludes --every and --cron: a scheduled job already runs once per period")
	case f.set["wait"] && !c.once:
		return usagef("--wait needs --once")
	case f.set["wait"] && c.wait < 0:
		return usagef("invalid --wait %v; want 0 (do not wait) or more", c.wait)
	case f.set["restart"] && (c.once || scheduled):
		return usagef("--restart is for a singleton (no --once, --every or --cron)")
	}
	switch p := restartPolicy(f.restart); p {
	case restartAlways, restartOnFailure, restartNever:
		c.restart = p
	default:
		return usagef("invalid --restart %q; want always, on-failure or never", f.restart)
	}
	return nil
}

// runnerOptions are the schedule.Runner options c asks for: the retention
// and, unless --clock-tolerance is 0, the wall-clock guard against ref.
func (c runConfig) runnerOptions(ref schedule.Reference) []schedule.Option {
	opts := []schedule.Option{schedule.WithRetention(c.keep)}
	if c.clockTolerance != 0 {
		opts = append(opts, schedule.WithClockGuard(ref, c.clockTolerance))
	}
	return opts
}

// executeRun runs c: it opens the store, makes the Elector, registers a
// scheduled job's schedule, and campaigns (once, or for as long as ctx
// lasts). It returns the exit code.
func executeRun(ctx context.Context, e *env, c runConfig) int {
	st, err := e.openStore(ctx, c.storeURL)
	if err != nil {
		return e.fail("run", err)
	}
	defer st.Close()

	var outMu sync.Mutex
	stderr := lockedWriter{&outMu, e.stderr}
	logger := c.logs.logger(stderr)
	defer holdJobControl(logger)() // jobcontrol.go
	inc, err := incarnation()
	if err != nil {
		return e.fail("run", err)
	}
	opts := []baton.Option{baton.WithLease(c.lease), baton.WithRenew(c.renew), baton.WithClockMargin(c.margin),
		baton.WithLogger(logger), baton.WithIncarnation(inc)}
	if c.node != "" {
		opts = append(opts, baton.WithNode(c.node))
	}
	ops, err := startMetrics(c.metricsAddr, c.job.Name, c.job.Schedule != nil, logger)
	if err != nil {
		return e.fail("run", err)
	}
	defer ops.close()
	opts = append(opts, ops.electorOptions()...)
	el, err := baton.New(st, c.job.Name, opts...)
	if err != nil {
		return e.fail("run", usagef("%v", err))
	}
	r := &runner{cfg: c, el: el, inc: inc, stdout: lockedWriter{&outMu, e.stdout}, stderr: stderr, logger: logger}
	if c.job.Schedule != nil {
		if err := register(ctx, st, c.job, c.reschedule); err != nil {
			return e.fail("run", err)
		}
	}
	r.logStart()
	if c.once {
		r.stdin = e.stdin
		return r.once(ctx, e)
	}
	return r.lead(ctx, e, st, ops)
}

// lead campaigns for the job until ctx ends, running a scheduled job's
// periods or supervising a singleton's command while this node leads,
// and returns the exit code.
func (r *runner) lead(ctx context.Context, e *env, st store.Store, ops *opsServer) int {
	c := r.cfg
	// One reference for the process: a step detector's base is the wall
	// clock when baton started.
	ref := schedule.ClockReference(st)
	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	if c.job.Schedule != nil {
		if j, err := st.GetJob(ctx, c.job.Name); err == nil {
			ops.jobSuspended(c.job.Name, j.Suspension.Active()) // exported from the start
		}
		go watchSchedule(runCtx, st, c.job, c.lease, stopRun, ops.jobSuspended)
	}
	octx, stopObserving := context.WithCancel(runCtx)
	defer stopObserving()
	go r.observe(octx, r.poll(), nil)
	err := r.el.Run(runCtx, func(ctx context.Context, t *baton.Term) error {
		r.leading.Store(true)
		defer r.leading.Store(false)
		if c.job.Schedule == nil {
			return r.supervise(ctx, t)
		}
		// Another node may have rescheduled the job since this one
		// started: never run the old schedule.
		if err := register(ctx, st, c.job, false); err != nil {
			return err
		}
		sopts := append([]schedule.Option{schedule.WithLogger(r.logger)}, c.runnerOptions(ref)...)
		sr, err := schedule.New(st, c.job, r.periodExec(t), append(sopts, ops.runnerOptions()...)...)
		if err != nil {
			return err
		}
		return sr.Run(ctx, t)
	})
	stopObserving()
	if cause := context.Cause(runCtx); errors.Is(cause, schedule.ErrScheduleMismatch) {
		return e.fail("run", usagef("%v", cause))
	}
	var ex *exitedError
	switch {
	case ctx.Err() != nil:
		r.logger.Info("stopped; leadership released")
		return exitOK
	case errors.As(err, &ex):
		r.logger.Info("command exited; not restarting; leadership released", "status", ex.status.String(), "restart", string(c.restart))
		return ex.status.ExitCode()
	}
	return e.fail("run", err)
}

// waitFlag is --wait: a duration, negative (the default, shown as
// nothing) for no limit.
type waitFlag struct{ d *time.Duration }

func (w waitFlag) String() string {
	if w.d == nil || *w.d < 0 {
		return ""
	}
	return w.d.String()
}

func (w waitFlag) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*w.d = d
	return nil
}

// register registers job with its schedule and catch-up policy, or checks
// that the stored ones are the same (schedule.Register). A mismatch is a
// usage error naming both.
func register(ctx context.Context, st store.Store, job schedule.Job, reschedule bool) error {
	got, err := schedule.Register(ctx, st, job, reschedule)
	if errors.Is(err, schedule.ErrScheduleMismatch) {
		// A job stored by a baton without the catch-up cap differs from
		// this node only by the new default: say how to keep it.
		if p := job.Policy; p.Max > 0 {
			p.Max = 0
			if schedule.SameSpec(got.Schedule, schedule.Describe(job.Schedule, p)) {
				return usagef("%v; the stored one has no catch-up cap (the default of an older baton): give --catch-up-max 0 to keep it", err)
			}
		}
		return usagef("%v", err)
	}
	return err
}

// watchSchedule reads the job's stored schedule every interval and stops
// the node (stop, with the mismatch as the cause) once another node has
// rescheduled it: a node never leads, nor waits to lead, with an old
// schedule. Failed reads are ignored: the next one decides.
//
// It reports the job's suspension to seen at every read, so that every
// node's baton_job_suspended follows it, not only the leader's.
func watchSchedule(ctx context.Context, st store.Store, job schedule.Job, every time.Duration, stop context.CancelCauseFunc, seen func(string, bool)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, every)
		j, err := st.GetJob(cctx, job.Name) // a read: Register would write
		if err == nil {
			seen(job.Name, j.Suspension.Active())
		}
		if err == nil && !schedule.SameSpec(j.Schedule, job.Spec()) {
			_, err = schedule.Register(cctx, st, job, false)
		}
		cancel()
		if errors.Is(err, schedule.ErrScheduleMismatch) {
			stop(err)
			return
		}
	}
}
