package main

import (
	"context"
	"errors"
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
}

func runRun(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("run", runSynopsis)
	var (
		c                 runConfig
		every, offset     time.Duration
		cronExpr, tz      string
		catchUp           string
		window            time.Duration
		catchUpMax        int
		overlap           string
		jitter            time.Duration
		renew             time.Duration
		restart           string
		retries           int
		retryBackoff      time.Duration
		renewSet, hasCron bool
	)
	storeFlagVar(fs, &c.storeURL)
	c.key = registerFenceKey(fs)
	fs.StringVar(&c.node, "node", "", "this node's id (default: host name and process id)")
	fs.DurationVar(&c.lease, "lease", baton.DefaultLease, "lease duration")
	fs.DurationVar(&renew, "renew", 0, "renew interval, shorter than the lease (default: a third of the lease)")
	fs.DurationVar(&c.margin, "clock-margin", baton.DefaultMargin, "clock uncertainty e; a takeover waits lease + 2e")
	fs.DurationVar(&every, "every", 0, "run once per interval, aligned to the Unix epoch (whole seconds)")
	fs.DurationVar(&offset, "offset", 0, "with --every: shift the periods by this much, in [0, interval)")
	fs.StringVar(&cronExpr, "cron", "", "run at the instants of this cron expression: 5 fields or @hourly, @daily, @weekly, @monthly, @yearly")
	fs.StringVar(&tz, "tz", "UTC", "with --cron: the IANA time zone the expression is read in")
	fs.StringVar(&catchUp, "catch-up", "all", "which periods missed while nobody led to run: all (oldest first), latest, none")
	fs.DurationVar(&window, "catch-up-window", 0, "skip periods more than this late (0: no limit); manual triggers are never skipped")
	fs.IntVar(&catchUpMax, "catch-up-max", schedule.DefaultCatchUpMax, "run at most the newest N missed periods after an outage, recording older ones skipped (\"outside the catch-up window\"); 0: no cap")
	fs.StringVar(&overlap, "overlap", string(schedule.OverlapQueue), "a period that comes due while the previous run is still going: queue (run it after) or skip (record it skipped, reason overlap)")
	fs.DurationVar(&jitter, "jitter", 0, "delay each period by up to this much, derived from JOB and the period key (the same on every node; recorded in the run's delay), so that jobs on one cron minute do not all start at once; 0: none")
	fs.DurationVar(&c.timeout, "timeout", 0, "with --every or --cron: stop a run still going after this long and record it failed (reason \"timeout\"); 0: no limit")
	fs.DurationVar(&c.clockTolerance, "clock-tolerance", schedule.DefaultClockTolerance, "with --every or --cron: claim and skip no period while this node's wall clock differs from the reference (PostgreSQL's server clock; elsewhere the wall clock at start carried forward by the monotonic clock) by more than this; 0 turns the guard off")
	fs.IntVar(&retries, "retries", 0, "with --every or --cron: run a failed period (non-zero exit, timeout) again up to N times; each attempt is counted in the ledger ('baton runs')")
	fs.DurationVar(&retryBackoff, "retry-backoff", 10*time.Second, "with --retries: the wait between a failed attempt and the next")
	fs.BoolVar(&c.once, "once", false, "run COMMAND once while leading, release, and exit with its status (see Exit status)")
	c.wait = -1
	fs.Var(waitFlag{&c.wait}, "wait", "with --once: give up after waiting `duration` for leadership, exit 75 (0: do not wait; default: wait as long as it takes)")
	fs.StringVar(&restart, "restart", string(restartAlways), "singleton: when to start COMMAND again after it exits: always (default: a singleton is a service that must run somewhere, and restarting here needs no failover), on-failure (a non-zero status), never; when not restarted, baton releases the lease and exits with COMMAND's status")
	reschedule := fs.Bool("reschedule", false, "replace the job's stored schedule and catch-up policy with this node's (recorded in the election log)")
	keep := fs.String("keep", schedule.FormatAge(schedule.DefaultRetention.Age), "the leader prunes done and skipped runs older than this: days (30d) or a duration (72h); 0: no bound by age")
	fs.IntVar(&c.keep.Rows, "keep-rows", schedule.DefaultRetention.Rows, "the leader prunes done and skipped runs beyond the newest N; 0: no bound by count")
	fs.DurationVar(&c.grace, "grace", 5*time.Second, "time between SIGTERM and SIGKILL when stopping COMMAND; shorter than lease minus renew (when not given: 5s, or half of lease minus renew if that is shorter)")
	c.logs.flags(fs)
	metricsAddr := addMetricsFlag(fs)
	if done, code := e.parse(fs, args); done {
		return code
	}
	set := flagsSet(fs)
	renewSet, hasCron = set["renew"], set["cron"]

	err := func() error {
		rest := fs.Args()
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
		c.job.Name, c.argv = rest[0], rest[2:]
		if c.job.Name == "" {
			return usagef("JOB must not be empty")
		}
		if set["node"] && c.node == "" {
			return usagef("invalid --node \"\": the node id must not be empty; leave --node out for the host name and process id")
		}
		if err := c.logs.check(); err != nil {
			return err
		}

		if c.lease <= 0 {
			return usagef("invalid --lease %v; want a positive duration", c.lease)
		}
		c.renew = c.lease / 3
		if renewSet {
			c.renew = renew
		}
		if c.renew <= 0 || c.renew >= c.lease {
			return usagef("invalid --renew %v; want a positive duration shorter than --lease %v", c.renew, c.lease)
		}
		if c.margin < 0 {
			return usagef("invalid --clock-margin %v; want 0 or more", c.margin)
		}
		// The library's bounds (minimum lease and intervals, margin below
		// the lease, a printable job name), reported as flags.
		if err := baton.CheckOptions(baton.WithLease(c.lease), baton.WithRenew(c.renew), baton.WithClockMargin(c.margin), baton.WithNode(c.node)); err != nil {
			return asUsage(err)
		}
		if err := checkName("JOB", c.job.Name); err != nil {
			return err
		}
		if err := c.key.load(); err != nil {
			return err
		}
		if !set["grace"] {
			c.grace = min(c.grace, (c.lease-c.renew)/2)
		}
		if c.grace <= 0 || c.grace >= c.lease-c.renew {
			return usagef("invalid --grace %v; want a positive duration shorter than the lease minus the renew interval (%v - %v = %v), so that COMMAND is stopped before the lease could expire",
				c.grace, c.lease, c.renew, c.lease-c.renew)
		}

		switch {
		case set["every"] && hasCron:
			return usagef("--every and --cron exclude each other; give one")
		case set["offset"] && !set["every"]:
			return usagef("--offset needs --every")
		case set["tz"] && !hasCron:
			return usagef("--tz needs --cron")
		case set["every"]:
			s, err := schedule.Every(every, offset)
			if err != nil {
				return usagef("invalid --every/--offset: %v", err)
			}
			c.job.Schedule = s
		case hasCron:
			loc, err := time.LoadLocation(tz)
			if err != nil || tz == "" {
				return usagef("invalid --tz %q: unknown time zone; want an IANA name such as Europe/Paris or UTC", tz)
			}
			s, err := schedule.Cron(cronExpr, loc)
			if err != nil {
				return usagef("invalid --cron: %v", err)
			}
			if err := reachable(s, time.Now()); err != nil {
				return err
			}
			c.job.Schedule = s
		}
		cu, err := schedule.ParseCatchUp(catchUp)
		if err != nil {
			return usagef("invalid --catch-up %q; want all, latest or none", catchUp)
		}
		if window < 0 {
			return usagef("invalid --catch-up-window %v; want 0 (no limit) or more", window)
		}
		if c.job.Schedule == nil && (set["catch-up"] || set["catch-up-window"] || set["catch-up-max"] || set["overlap"] || set["jitter"]) {
			return usagef("--catch-up, --catch-up-window, --catch-up-max, --overlap and --jitter need a schedule (--every or --cron)")
		}
		if catchUpMax < 0 || catchUpMax > schedule.MaxCatchUp {
			return usagef("invalid --catch-up-max %d; want 0 (no cap) to %d", catchUpMax, schedule.MaxCatchUp)
		}
		ov, err := schedule.ParseOverlap(overlap)
		if err != nil {
			return usagef("invalid --overlap %q; want queue or skip", overlap)
		}
		if jitter < 0 || jitter > schedule.MaxJitter {
			return usagef("invalid --jitter %v; want 0 (none) to %v", jitter, schedule.MaxJitter)
		}
		c.job.Policy = schedule.Policy{CatchUp: cu, Window: window, Retries: retries, RetryBackoff: retryBackoff,
			Overlap: ov, Jitter: jitter}
		if c.job.Schedule != nil {
			c.job.Policy.Max = catchUpMax
		}
		if *keep != "0" {
			age, err := schedule.ParseAge(*keep)
			if err != nil {
				return usagef("invalid --keep: %v; or 0 for no bound by age", err)
			}
			c.keep.Age = age
		}
		if c.keep.Rows < 0 {
			return usagef("invalid --keep-rows %d; want 0 (no bound by count) or more", c.keep.Rows)
		}
		if c.job.Schedule == nil && (set["keep"] || set["keep-rows"]) {
			return usagef("--keep and --keep-rows need a schedule (--every or --cron): a singleton has no ledger")
		}

		switch {
		case c.timeout < 0:
			return usagef("invalid --timeout %v; want 0 (no limit) or more", c.timeout)
		case set["timeout"] && c.job.Schedule == nil:
			return usagef("--timeout needs a schedule (--every or --cron)")
		case c.clockTolerance != 0 && c.clockTolerance < schedule.MinClockTolerance:
			return usagef("invalid --clock-tolerance %v; want 0 (no guard) or at least %v", c.clockTolerance, schedule.MinClockTolerance)
		case retries < 0:
			return usagef("invalid --retries %d; want 0 (no retry) or more", retries)
		case set["retries"] && c.job.Schedule == nil:
			return usagef("--retries needs a schedule (--every or --cron); a singleton restarts by --restart")
		case set["retry-backoff"] && !set["retries"]:
			return usagef("--retry-backoff needs --retries")
		case retryBackoff <= 0:
			return usagef("invalid --retry-backoff %v; want a positive duration", retryBackoff)
		case c.once && c.job.Schedule != nil:
			return usagef("--once excludes --every and --cron: a scheduled job already runs once per period")
		case set["wait"] && !c.once:
			return usagef("--wait needs --once")
		case set["wait"] && c.wait < 0:
			return usagef("invalid --wait %v; want 0 (do not wait) or more", c.wait)
		case set["restart"] && (c.once || c.job.Schedule != nil):
			return usagef("--restart is for a singleton (no --once, --every or --cron)")
		}
		switch p := restartPolicy(restart); p {
		case restartAlways, restartOnFailure, restartNever:
			c.restart = p
		default:
			return usagef("invalid --restart %q; want always, on-failure or never", restart)
		}

		return checkCommand(c.argv[0]) // before campaigning: no token for a command that cannot start
	}()
	if err != nil {
		return e.fail("run", err)
	}

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
	ops, err := startMetrics(*metricsAddr, c.job.Name, c.job.Schedule != nil, logger)
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
		// Validate the Runner's configuration before campaigning.
		if _, err := schedule.New(st, c.job, r.periodExec(nil), schedule.WithRetention(c.keep)); err != nil {
			return e.fail("run", usagef("%v", err))
		}
		if err := register(ctx, st, c.job, *reschedule); err != nil {
			return e.fail("run", err)
		}
	}
	var guard []schedule.Option
	if c.clockTolerance > 0 {
		// One reference for the process: a step detector's base is the
		// wall clock when baton started.
		guard = append(guard, schedule.WithClockGuard(schedule.ClockReference(st), c.clockTolerance))
	}
	r.logStart()
	if c.once {
		r.stdin = e.stdin
		return r.once(ctx, e)
	}

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
	err = el.Run(runCtx, func(ctx context.Context, t *baton.Term) error {
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
		sopts := append([]schedule.Option{schedule.WithLogger(logger), schedule.WithRetention(c.keep)}, guard...)
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
		logger.Info("stopped; leadership released")
		return exitOK
	case errors.As(err, &ex):
		logger.Info("command exited; not restarting; leadership released", "status", ex.status.String(), "restart", string(c.restart))
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
