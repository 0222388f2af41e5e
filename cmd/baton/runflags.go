package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/supervise"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store/storeurl"
)

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
	clockStepDown  time.Duration
	retries        int
	retryBackoff   time.Duration
	once           bool
	outputLines    bool // --output-lines
	wait           time.Duration
	restart        string
	reschedule     bool
	keep           string
	keepRows       int
	logs           logConfig
	metricsAddr    string
	pref           preferFlags
	job            string   // JOB
	argv           []string // COMMAND [ARGS...]
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
	fs.DurationVar(&f.clockStepDown, "clock-step-down", schedule.DefaultClockStepDown, "with --every or --cron and the clock guard: a leader held off by it this long gives its term up, so that a node whose clock agrees leads, and campaigns again once its own clock agrees; 0: keep the term (and run nothing) while held off")
	fs.IntVar(&f.retries, "retries", 0, "with --every or --cron: run a failed period (non-zero exit, timeout) again up to N times; each attempt is counted in the ledger ('baton runs')")
	fs.DurationVar(&f.retryBackoff, "retry-backoff", 10*time.Second, "with --retries: the wait between a failed attempt and the next")
	fs.BoolVar(&f.once, "once", false, "run COMMAND once while leading, release, and exit with its status (see Exit status)")
	fs.BoolVar(&f.outputLines, "output-lines", false, "frame COMMAND's output in whole lines, so that no log line cuts one: this CHANGES the bytes (a newline is added to an unterminated last line and every "+maxLineText+" of a longer line); default: passed through byte for byte")
	f.wait = -1
	fs.Var(waitFlag{&f.wait}, "wait", "with --once: give up after waiting `duration` for leadership, exit 75 (0: do not wait; default: wait as long as it takes)")
	fs.StringVar(&f.restart, "restart", string(restartAlways), "singleton: when to start COMMAND again after it exits: always (default: a singleton is a service that must run somewhere, and restarting here needs no failover), on-failure (a non-zero status), never; when not restarted, baton releases the lease and exits with COMMAND's status")
	fs.BoolVar(&f.reschedule, "reschedule", false, "replace the job's stored schedule and catch-up policy with this node's (recorded in the election log)")
	fs.StringVar(&f.keep, "keep", schedule.FormatAge(schedule.DefaultRetention.Age), "the leader prunes done and skipped runs older than this: days (30d) or a duration (72h); 0: no bound by age")
	fs.IntVar(&f.keepRows, "keep-rows", schedule.DefaultRetention.Rows, "the leader prunes done and skipped runs beyond the newest N; 0: no bound by count")
	f.pref.register(fs)
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
		once: f.once, outputLines: f.outputLines, wait: f.wait, timeout: f.timeout, clockTolerance: f.clockTolerance, clockStepDown: f.clockStepDown, logs: f.logs,
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
	if err := f.checkPrefer(&c); err != nil {
		return c, err
	}
	if f.set["clock-step-down"] && c.clockTolerance == 0 && c.clockStepDown != 0 {
		return c, usagef("--clock-step-down needs the clock guard; leave it out with --clock-tolerance 0")
	}
	// The scheduler machine's bounds (catch-up policy, retries, jitter,
	// retention, clock tolerance and step-down), before any store is opened.
	if err := schedule.CheckOptions(c.job, c.runnerOptions(schedule.StepReference())...); err != nil {
		return c, asUsage(err)
	}
	if err := checkLedgerRows(c); err != nil {
		return c, err
	}
	if err := supervise.Supported(); err != nil {
		return c, usagef("%v", err) // Windows: one line, exit 2
	}
	return c, checkCommand(c.argv[0]) // before campaigning: no token for a command that cannot start
}

// checkLedgerRows refuses a scheduled job whose retention keeps more run
// ledger rows than its store keeps a job (storedriver.Scheme.LedgerRows),
// before the store is opened: its ledger would fill up and its writes
// fail in the middle of its life. A store URL that does not resolve is
// left to the open, which says why.
func checkLedgerRows(c runConfig) error {
	if c.job.Schedule == nil {
		return nil
	}
	u, err := resolveStoreURL(c.storeURL)
	if err != nil {
		return nil
	}
	s, ok := lookupScheme(u)
	if !ok || s.LedgerRows <= 0 || (c.keep.Rows > 0 && c.keep.Rows <= s.LedgerRows) {
		return nil
	}
	keeps := "every row (--keep-rows 0)"
	if c.keep.Rows > 0 {
		keeps = fmt.Sprintf("%d rows (--keep-rows %d)", c.keep.Rows, c.keep.Rows)
	}
	return usagef("the %s store keeps at most %d run ledger rows a job, and the retention keeps %s: give --keep-rows %d or fewer", s.Names[0], s.LedgerRows, keeps, s.LedgerRows)
}

// lookupScheme is storeurl.Lookup; a test sets a scheme of its own.
var lookupScheme = storeurl.Lookup

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
		Overlap: ov, Jitter: f.jitter, Timeout: max(f.timeout, 0)} // a negative --timeout is refused below
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

// checkPrefer sets c's candidacy and the job's preference policy from f:
// the bounds are the election machine's (baton.CheckOptions), reported as
// the flag to fix; the policy needs a schedule.
func (f runFlags) checkPrefer(c *runConfig) error {
	cand, err := f.pref.candidacy()
	if err != nil {
		return err
	}
	c.cand = cand
	if err := baton.CheckOptions(baton.WithLease(c.lease), baton.WithRenew(c.renew), baton.WithCandidate(cand)); err != nil {
		return asUsage(err)
	}
	if f.set["prefer-hysteresis"] && !f.set["prefer"] {
		return usagef("--prefer-hysteresis needs --prefer")
	}
	if !f.set["prefer"] {
		return nil
	}
	if c.job.Schedule == nil {
		return usagef("--prefer needs a schedule (--every or --cron): a singleton's command has no point between runs to hand over at")
	}
	c.prefer, c.preferHysteresis = f.pref.prefer, f.pref.hysteresis
	opts := append([]baton.Option{baton.WithLease(c.lease), baton.WithRenew(c.renew)}, preferOptions(*c, c.prefer, c.preferHysteresis)...)
	if err := baton.CheckOptions(opts...); err != nil {
		return asUsage(err)
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
	case f.set["clock-step-down"] && !scheduled:
		return usagef("--clock-step-down needs a schedule (--every or --cron): only a scheduled job has a clock guard")
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
	d, err := bound.ParseDuration(s)
	if err != nil {
		return err
	}
	*w.d = d
	return nil
}
