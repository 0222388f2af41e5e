package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backoff"
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
ignores all three too; COMMAND keeps their default. A SIGKILL of the
supervisor is covered: its orphans (also those that left the group) come
to baton, which kills them. What no supervisor covers: a SIGSTOP of the
supervisor itself, baton and its supervisor both killed (a process that
left the group then lives on), or the whole host (or baton and its
supervisor both) frozen: COMMAND then runs on past the lease, and only a
resource that checks BATON_TOKEN (a fence) refuses its late work.

COMMAND gets BATON_NAME, BATON_TOKEN (the fencing token), BATON_NODE and,
for a scheduled run, BATON_PERIOD, on top of baton's environment. A
resource that checks BATON_TOKEN refuses a deposed leader's late work:
without that check a period's effect can happen twice if a leader is
deposed mid-run (the ledger still records one done run).

A scheduled run's outcome is recorded by COMMAND's supervisor the moment
COMMAND exits by itself, before baton hears of it: a baton stopped or
frozen between the exit and its own record does not leave the period to
run again. An exit the supervisor saw before the lease deadline counts
even if its record lands after the term (a frozen baton holding the
SQLite write lock delays it), unless a newer leader took the period over
first; a newer leader waits the renew interval (at least 1s) before it
takes over a period still running. Only baton and its supervisor frozen
together between the exit and the record (milliseconds), a record held
up longer, or a store the supervisor cannot reach then, leave it to run
again.

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

` + preferHelp + `

A store that cannot be reached at start (a database that is down or
starting up, an etcd cluster without quorum) is waited for: one line says
so, a line a minute while it lasts, one when the store answers, and then
baton campaigns; it retries after a random delay below a ceiling that
doubles from 100ms up to half of --lease, so that a fleet started together does
not knock in step. --once does not wait (exit 1). A store that answers
but is wrong (a bad URL, password, database, schema or file, a path in a
directory that does not exist) is not waited for: exit 2 at once.

Under systemd with Type=notify ($NOTIFY_SOCKET), baton run says READY=1
once the store answered (not once it leads) and STATUS= what it does
(waiting for the store, following, leader, degraded); with WatchdogSec=
($WATCHDOG_USEC) it sends WATCHDOG=1 every half interval while it runs
and, while it leads, while its renew loop still extends the lease, so a
stopped baton, or a leader whose renew loop is wedged, is restarted.
COMMAND does not inherit these variables.

baton run runs Go code on one thread at a time (GOMAXPROCS 1): it mostly
waits, and an idle node wakes about a third less often so; set
$GOMAXPROCS to override it.

Before campaigning, COMMAND is checked: found, a regular file this user
may execute, and a program (a "#!" script whose interpreter exists, or an
executable binary); otherwise exit 2 and no token is taken.

Logs go to standard error; COMMAND's output goes to baton's standard output
and error byte for byte, as flock passes it (binary output included): a
log line may then follow a partial line of COMMAND's standard error.
--output-lines frames it in whole lines instead, never cut by a log line,
and so changes the bytes: an unterminated last line gets a newline, and a
line longer than ` + maxLineText + ` is split by a newline every ` + maxLineText + `.

Exit status:
  0    stopped by a signal after releasing the lease, or while waiting
       for the store (singleton, scheduled); COMMAND exited 0 (--once,
       --restart never|on-failure)
  1    runtime failure: the store failed for good (damaged, replaced),
       COMMAND could not start; --once: the store cannot be reached, or
       stopped by a signal before COMMAND ran
  2    usage error: bad flags, arguments, store URL, or a store that
       answers but is wrong; nothing was changed
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
	// clockStepDown is how long the guard may hold a leader off before it
	// gives its term up; 0 keeps the term.
	clockStepDown time.Duration
	keep          schedule.Retention
	logs          logConfig
	reschedule    bool   // --reschedule: replace the stored schedule
	metricsAddr   string // --metrics-addr; empty: no metrics server
	// outputLines is --output-lines: COMMAND's output framed in whole
	// lines (lineWriter) instead of passed through byte for byte.
	outputLines bool
	// cand is this node's candidacy (--weight, --candidate-label,
	// --candidate-version); prefer and preferHysteresis the policy a new
	// job is registered with (--prefer, --prefer-hysteresis).
	cand             baton.Candidacy
	prefer           string
	preferHysteresis time.Duration
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
	rest := fs.Args()
	if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
		// The flag package ate the "--" that ends the flags: what
		// follows it is COMMAND, and JOB was not given.
		return f, true, e.fail("run", usagef("missing JOB before --; want JOB -- COMMAND [ARGS...]"))
	}
	if err := f.positional(rest); err != nil {
		return f, true, e.fail("run", err)
	}
	return f, false, exitOK
}

// runnerOptions are the schedule.Runner options c asks for: the retention,
// the takeover grace (takeoverGrace) and, unless --clock-tolerance is 0,
// the wall-clock guard against ref, with its step-down unless
// --clock-step-down is 0.
func (c runConfig) runnerOptions(ref schedule.Reference) []schedule.Option {
	opts := []schedule.Option{schedule.WithRetention(c.keep), schedule.WithTakeoverGrace(takeoverGrace(c.renew))}
	if c.clockTolerance != 0 {
		opts = append(opts, schedule.WithClockGuard(ref, c.clockTolerance))
		if c.clockStepDown != 0 {
			opts = append(opts, schedule.WithClockStepDown(c.clockStepDown))
		}
	}
	return opts
}

// takeoverGrace is how long a new leader waits before it takes over a
// period still running under an older term: the renew interval, and at
// least a second. That is the time the old leader's supervisor has, from
// the new term's start, to record an outcome it saw inside the old term
// (outcome.go), for instance once the write lock a frozen baton held on
// a SQLite store is let go, which is also when the new term can begin.
func takeoverGrace(renew time.Duration) time.Duration { return max(renew, time.Second) }

// executeRun runs c: it opens the store (waiting for it while it is
// down, unless --once: openRunStore), tells a service manager that
// start-up is done (sdnotify.go), makes the Elector, registers a
// scheduled job's schedule, and campaigns (once, or for as long as ctx
// lasts). It returns the exit code.
func executeRun(ctx context.Context, e *env, c runConfig) int {
	var outMu sync.Mutex
	stderr := lockedWriter{&outMu, e.stderr}
	logger := c.logs.logger(stderr)
	sd := notifierFromEnv(logger) // sdnotify.go
	defer sd.stopping()
	defer context.AfterFunc(ctx, sd.stopping)() // the shutdown begins
	sdObs := &sdObserver{n: sd, job: c.job.Name, lease: c.lease}
	wdCtx, stopWatchdog := context.WithCancel(ctx)
	defer stopWatchdog()
	go sd.runWatchdog(wdCtx, sdObs.alive)
	st, err := openRunStore(ctx, e, c, logger, sd)
	if err != nil {
		if ctx.Err() != nil && !c.once {
			logger.Info("stopped while waiting for the store")
			return exitOK
		}
		return e.fail("run", err)
	}
	defer st.Close()
	sd.ready("store answered; campaigning for " + c.job.Name)

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
	if sd != nil {
		obs := observers{sdObs}
		if ops != nil {
			obs = append(obs, ops.metrics)
		}
		opts = append(opts, baton.WithObserver(obs))
	}
	opts = append(opts, baton.WithCandidate(c.cand))
	el, err := baton.New(st, c.job.Name, opts...)
	if err != nil {
		return e.fail("run", usagef("%v", err))
	}
	r := &runner{cfg: c, el: el, inc: inc, stdout: lockedWriter{&outMu, e.stdout}, stderr: stderr, logger: logger}
	if e.open == nil {
		// A store another process can open: a scheduled run's supervisor
		// records its outcome itself (outcome.go), as resolved here.
		if u, err := resolveStoreURL(c.storeURL); err == nil && !isInProcess(u) {
			r.recordStore = u
		}
	}
	if c.job.Schedule != nil {
		err := registerPreferred(ctx, st, c)
		if err != nil && !c.once && storeDown(err) {
			// The store answered the open but not this write (a
			// PostgreSQL restarting, an SQLite file another process
			// holds locked): wait for it as for a store that is down.
			_, err = runStoreWait(e, c, logger, sd, func(ctx context.Context) (store.Store, error) {
				return st, registerPreferred(ctx, st, c)
			}).wait(ctx, err)
		}
		if err != nil {
			return e.fail("run", err)
		}
		j, err := st.GetJob(ctx, c.job.Name)
		if err != nil {
			return e.fail("run", err)
		}
		if err := applyPreference(el, c, j, logger); err != nil {
			return e.fail("run", usagef("%v", err))
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
	r.idle = startIdleTrim(runCtx, idleSettle, trimIdle)
	if c.job.Schedule != nil {
		if j, err := st.GetJob(ctx, c.job.Name); err == nil {
			ops.jobSuspended(c.job.Name, j.Suspension.Active()) // exported from the start
		}
		go watchSchedule(runCtx, st, c.job, c.lease, stopRun, ops.jobSuspended, func(j store.Job) {
			applyPreference(r.el, c, j, r.logger) //nolint:errcheck // logged; the node keeps its policy
		})
	}
	// The holder is logged for people, within a renew interval of a
	// change: a poll a second would be a store read a second on every
	// waiting node, beside the elector's own.
	stopWatching := r.watch(runCtx, c.renew, nil)
	defer stopWatching()
	// heldAtStop: this node led when ctx ended, so el.Run resigned: only
	// then is the stop logged as releasing leadership.
	var heldAtStop atomic.Bool
	stopped := ctx
	work := func(ctx context.Context, t *baton.Term) error {
		r.leading.Store(true)
		defer r.leading.Store(false)
		defer func() {
			if stopped.Err() != nil {
				heldAtStop.Store(true)
			}
		}()
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
	}
	var err error
	for {
		err = r.el.Run(runCtx, work)
		if !errors.Is(err, schedule.ErrClockHeld) || runCtx.Err() != nil {
			break
		}
		// The term was given up (--clock-step-down): campaigning now
		// could win it back with the same clock.
		r.logger.Warn("not campaigning until the wall clock agrees with the reference clock")
		ops.clockHeld(c.job.Name, true)
		if err = schedule.AwaitClock(runCtx, ref, baton.RealClock{}, c.clockTolerance, schedule.DefaultPoll); err != nil {
			break
		}
		ops.clockHeld(c.job.Name, false)
		r.logger.Info("the wall clock agrees with the reference clock again; campaigning")
	}
	stopWatching()
	if cause := context.Cause(runCtx); errors.Is(cause, schedule.ErrScheduleMismatch) {
		return e.fail("run", usagef("%v", cause))
	}
	var ex *exitedError
	switch {
	case ctx.Err() != nil && heldAtStop.Load():
		r.logger.Info("stopped; leadership released")
		return exitOK
	case ctx.Err() != nil:
		r.logger.Info("stopped; this node was not leading")
		return exitOK
	case errors.As(err, &ex):
		r.logger.Info("command exited; not restarting; leadership released", "status", ex.status.String(), "restart", string(c.restart))
		return ex.status.ExitCode()
	}
	return e.fail("run", err)
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
//
// It hands the job's preference policy, as read, to prefer, so that a
// change made with 'baton prefer' reaches every node within an interval.
func watchSchedule(ctx context.Context, st store.Store, job schedule.Job, every time.Duration, stop context.CancelCauseFunc, seen func(string, bool), prefer func(store.Job)) {
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
			prefer(j)
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

// openRunStore opens the store of c. When it is down (storeDown) a
// singleton or scheduled job waits for it, retrying with capped
// exponential backoff and full jitter up to half the lease, for as long as it
// takes or until ctx ends (storeWait): a daemon started before its
// database, or with the whole fleet after an outage, neither exits nor
// retries in lockstep. --once does not wait: like flock, it fails at once
// (exit 1) and its caller decides. Any other error (a bad URL, store,
// credentials, database or file) is returned at once.
func openRunStore(ctx context.Context, e *env, c runConfig, logger *slog.Logger, sd *notifier) (store.Store, error) {
	st, err := e.openStore(ctx, c.storeURL) // notes the URL's secrets
	if err == nil || c.once || !storeDown(err) {
		return st, err
	}
	open := e.open
	if open == nil {
		open = openStore
	}
	return runStoreWait(e, c, logger, sd, func(ctx context.Context) (store.Store, error) { return open(ctx, c.storeURL) }).wait(ctx, err)
}

// runStoreWait returns how 'baton run' with c waits for its store: try,
// each attempt bounded by the lease (at least attemptMin), until it
// answers, with capped exponential backoff and full jitter up to half
// the lease.
func runStoreWait(e *env, c runConfig, logger *slog.Logger, sd *notifier, try func(context.Context) (store.Store, error)) *storeWait {
	return &storeWait{
		open:    try,
		attempt: max(c.lease, attemptMin),
		backoff: backoff.New(min(waitMin, c.lease/2), c.lease/2, nil),
		logger:  logger,
		shown:   describeStore(c.storeURL),
		secrets: e.secrets,
		sd:      sd,
	}
}
