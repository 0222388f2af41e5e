package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strconv"
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

Runs COMMAND on the node that leads JOB, nowhere else.

With --every or --cron, COMMAND runs once per period while this node
leads; every period is recorded in the run ledger (see 'baton runs') and
at most one run per period is recorded as done. Periods missed while nobody
led are caught up by the next leader (--catch-up, --catch-up-window).

Without a schedule, COMMAND runs as a supervised singleton: started when
this node becomes leader, restarted with backoff if it exits, stopped when
leadership is lost.

COMMAND is stopped (SIGTERM to its process group, SIGKILL --grace later)
when leadership is lost, and at the latest --grace before the lease could
expire without a renewal. SIGINT or SIGTERM to baton stops COMMAND, releases
the lease so that another node takes over at once, and exits 0.

COMMAND gets BATON_NAME, BATON_TOKEN (the fencing token), BATON_NODE and,
for a scheduled run, BATON_PERIOD, on top of baton's environment. A
resource that checks BATON_TOKEN refuses a deposed leader's late work:
without that check a period's effect can happen twice if a leader is
deposed mid-run (the ledger still records one done run).

The leader prunes the ledger in small fenced batches while no period is due:
done and skipped runs older than --keep or beyond the newest --keep-rows
(default 30 days or 10,000 rows, whichever comes first); failed runs stay
until they are re-run or pruned by hand ('baton prune --failed').

A job has one schedule and catch-up policy, stored when it first runs.
A node started with another one refuses (exit 2) and names both, unless
--reschedule replaces the stored one: the change is recorded in the
election log ('baton history'), and the leader still running the old
schedule loses its lease at its next renewal; a node with the old schedule
stops with an error when it would lead again.

` + cronRuleHelp

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
	keep     schedule.Retention
}

func runRun(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("run", runSynopsis)
	var (
		c                 runConfig
		every, offset     time.Duration
		cronExpr, tz      string
		catchUp           string
		window            time.Duration
		renew             time.Duration
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
	reschedule := fs.Bool("reschedule", false, "replace the job's stored schedule and catch-up policy with this node's (recorded in the election log)")
	keep := fs.String("keep", schedule.FormatAge(schedule.DefaultRetention.Age), "the leader prunes done and skipped runs older than this: days (30d) or a duration (72h); 0: no bound by age")
	fs.IntVar(&c.keep.Rows, "keep-rows", schedule.DefaultRetention.Rows, "the leader prunes done and skipped runs beyond the newest N; 0: no bound by count")
	fs.DurationVar(&c.grace, "grace", 5*time.Second, "time between SIGTERM and SIGKILL when stopping COMMAND; shorter than lease minus renew (default 5s, or half of lease minus renew when that is shorter)")
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
		if err := baton.CheckOptions(baton.WithLease(c.lease), baton.WithRenew(c.renew), baton.WithClockMargin(c.margin)); err != nil {
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
			c.job.Schedule = s
		}
		cu, err := schedule.ParseCatchUp(catchUp)
		if err != nil {
			return usagef("invalid --catch-up %q; want all, latest or none", catchUp)
		}
		if window < 0 {
			return usagef("invalid --catch-up-window %v; want 0 (no limit) or more", window)
		}
		if c.job.Schedule == nil && (set["catch-up"] || set["catch-up-window"]) {
			return usagef("--catch-up and --catch-up-window need a schedule (--every or --cron)")
		}
		c.job.Policy = schedule.Policy{CatchUp: cu, Window: window}
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

		if _, err := exec.LookPath(c.argv[0]); err != nil {
			return usagef("command %q not found: %v", c.argv[0], errors.Unwrap(err))
		}
		return nil
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
	stdout, stderr := lockedWriter{&outMu, e.stdout}, lockedWriter{&outMu, e.stderr}
	logger := slog.New(slog.NewTextHandler(stderr, nil)).With("cmd", "baton run")
	opts := []baton.Option{baton.WithLease(c.lease), baton.WithRenew(c.renew), baton.WithClockMargin(c.margin), baton.WithLogger(logger)}
	if c.node != "" {
		opts = append(opts, baton.WithNode(c.node))
	}
	el, err := baton.New(st, c.job.Name, opts...)
	if err != nil {
		return e.fail("run", usagef("%v", err))
	}
	r := &runner{cfg: c, el: el, stdout: stdout, stderr: stderr, logger: logger}
	if c.job.Schedule != nil {
		// Validate the Runner's configuration before campaigning.
		if _, err := schedule.New(st, c.job, r.periodExec(nil), schedule.WithRetention(c.keep)); err != nil {
			return e.fail("run", usagef("%v", err))
		}
		if err := register(ctx, st, c.job, *reschedule); err != nil {
			return e.fail("run", err)
		}
	}
	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	if c.job.Schedule != nil {
		go watchSchedule(runCtx, st, c.job, c.lease, stopRun)
	}
	err = el.Run(runCtx, func(ctx context.Context, t *baton.Term) error {
		if c.job.Schedule == nil {
			return r.supervise(ctx, t)
		}
		// Another node may have rescheduled the job since this one
		// started: never run the old schedule.
		if err := register(ctx, st, c.job, false); err != nil {
			return err
		}
		sr, err := schedule.New(st, c.job, r.periodExec(t), schedule.WithLogger(logger), schedule.WithRetention(c.keep))
		if err != nil {
			return err
		}
		return sr.Run(ctx, t)
	})
	if cause := context.Cause(runCtx); errors.Is(cause, schedule.ErrScheduleMismatch) {
		return e.fail("run", usagef("%v", cause))
	}
	if ctx.Err() != nil {
		logger.Info("stopped; leadership released")
		return exitOK
	}
	return e.fail("run", err)
}

// runner holds what the term callbacks of 'baton run' need.
type runner struct {
	cfg            runConfig
	el             *baton.Elector
	stdout, stderr lockedWriter
	logger         *slog.Logger
}

func (r *runner) env(t *baton.Term) []string {
	return append([]string{"BATON_NAME=" + r.cfg.job.Name, "BATON_TOKEN=" + strconv.FormatUint(t.Token(), 10), "BATON_NODE=" + t.Node()},
		r.cfg.key.env(r.cfg.job.Name, t.Token())...)
}

// periodExec returns the executor of scheduled runs under t.
func (r *runner) periodExec(t *baton.Term) schedule.Executor {
	return func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
		ctx, cancel := stopBefore(ctx, t, r.cfg.grace)
		defer cancel(nil)
		env := append(r.env(t), "BATON_PERIOD="+p.Key)
		code, out, err := runCommand(ctx, r.cfg.argv, env, r.stdout, r.stderr, r.cfg.grace)
		if errors.Is(err, errInterrupted) {
			// Stopped by baton (the term ended or its lease is about to):
			// not a failure of the period, which runs again.
			err = fmt.Errorf("%w: %w", schedule.ErrInterrupted, err)
		}
		return code, out, err
	}
}

// supervise runs the command as a singleton while t lasts, restarting it
// with capped exponential backoff when it exits.
func (r *runner) supervise(ctx context.Context, t *baton.Term) error {
	backoff := restartMin
	for {
		cctx, cancel := stopBefore(ctx, t, r.cfg.grace)
		began := time.Now()
		code, _, err := runCommand(cctx, r.cfg.argv, r.env(t), r.stdout, r.stderr, r.cfg.grace)
		cancel(nil)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err != nil && !errors.Is(err, errInterrupted) {
			r.logger.Warn("command could not start", "err", err)
		}
		if time.Since(began) > restartMax {
			backoff = restartMin // it ran for a while: start again quickly
		}
		r.logger.Info("command exited; restarting", "exit", code, "in", backoff)
		tm := time.NewTimer(backoff)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return context.Cause(ctx)
		}
		backoff = min(2*backoff, restartMax)
	}
}

// errLeaseEnding is the cause when a command is stopped because the lease
// could expire within the grace period without a renewal.
var errLeaseEnding = errors.New("lease about to expire without a renewal")

// stopBefore returns a context that ends with ctx, and at the latest grace
// before t's deadline (re-read after every renewal). With t nil it is ctx.
func stopBefore(ctx context.Context, t *baton.Term, grace time.Duration) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if t == nil {
		return ctx, cancel
	}
	go func() {
		for {
			at := t.Deadline().Add(-grace)
			d := time.Until(at)
			if d <= 0 {
				cancel(errLeaseEnding)
				return
			}
			tm := time.NewTimer(d)
			select {
			case <-tm.C:
			case <-ctx.Done():
				tm.Stop()
				return
			}
		}
	}()
	return ctx, cancel
}

// register registers job with its schedule and catch-up policy, or checks
// that the stored ones are the same (schedule.Register). A mismatch is a
// usage error naming both.
func register(ctx context.Context, st store.Store, job schedule.Job, reschedule bool) error {
	_, err := schedule.Register(ctx, st, job, reschedule)
	if errors.Is(err, schedule.ErrScheduleMismatch) {
		return usagef("%v", err)
	}
	return err
}

// watchSchedule reads the job's stored schedule every interval and stops
// the node (stop, with the mismatch as the cause) once another node has
// rescheduled it: a node never leads, nor waits to lead, with an old
// schedule. Failed reads are ignored: the next one decides.
func watchSchedule(ctx context.Context, st store.Store, job schedule.Job, every time.Duration, stop context.CancelCauseFunc) {
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
