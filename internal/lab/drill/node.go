package drill

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/history"
	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/internal/scheduler/runner"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
	"github.com/batonhq/baton/store/storeurl"
)

// NodeMain is one node of a drill in process mode (Config.Procs): the
// program a node process runs. The baton command runs it as the hidden
// subcommand "baton drill node"; it is exported for that and for tests that
// re-execute their own binary. It is not a stable API.
//
// The node campaigns with a baton.Elector on the SQLite store shared by all
// nodes and, while it leads, raises the resource's fence (unless plain) and
// runs the drill's batches with internal/scheduler/runner, the runtime users run
// through schedule.Runner, configured with the column's machine settings
// (momentary triggers, an unfenced ledger), whose executor writes the batch with fenced writes (fence.CheckTx) into
// the shared resource file. Its clock is the business calendar the virtual
// cluster uses (vcluster.Calendar), on real time. It reads
// commands from stdin, one a line (start ORIGIN, trigger KEY, wake, cut,
// reconnect, pause, arm, disarm, rate R), and reports on stdout, one line
// per event: the time in Unix nanoseconds, a verb (ready, elected, valid,
// lost, claimed, wrote, rejected, paused, freezing) and its arguments.
// It returns when ctx ends or stdin is closed.
func NodeMain(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("baton drill node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		n                         = &procNode{}
		storePath, resPath, col   string
		lease, renew, margin, pol time.Duration
	)
	fs.StringVar(&storePath, "store", "", "SQLite file of the election and the ledger, or an etcd:// or postgres:// URL (net mode)")
	histPath := fs.String("history", "", "append the node's history records (internal/history) to this file")
	fs.BoolVar(&n.noFence, "unsafe-no-fence", false, "write without the fence and record the writes as accepted: to show that the history checker fails")
	fs.StringVar(&resPath, "resource", "", "SQLite file of the invoices and the fence")
	fs.StringVar(&n.id, "node", "", "node id")
	fs.StringVar(&n.job, "job", vcluster.Job, "the job and election name (a run of its own on a shared store)")
	fs.StringVar(&col, "column", "", "plain, fencing or fencing+trigger")
	fs.DurationVar(&lease, "lease", 0, "lease")
	fs.DurationVar(&renew, "renew", 0, "renew interval")
	fs.DurationVar(&margin, "clock-margin", 0, "clock margin")
	fs.DurationVar(&pol, "poll", 0, "poll interval")
	fs.DurationVar(&n.round, "round", 0, "round length: one business day")
	fs.IntVar(&n.lines, "invoice-lines", 0, "invoice lines a batch writes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch Column(col) {
	case Plain, Fencing, FencingTrigger:
		n.col = Column(col)
	default:
		return fmt.Errorf("drill: --column %q: want plain, fencing or fencing+trigger", col)
	}
	if storePath == "" || resPath == "" || n.id == "" || n.round <= 0 || n.lines <= 0 || pol <= 0 {
		return errors.New("drill: --store, --resource, --node, --round, --poll and --invoice-lines are required")
	}
	n.poll = pol
	n.out = &lineWriter{w: stdout}
	n.clock = newDriftClock()
	n.started = make(chan struct{})

	st, err := openNodeStore(ctx, storePath, n.business)
	if err != nil {
		return err
	}
	defer st.Close()
	n.net = isStoreURL(storePath)
	if *histPath != "" {
		if n.hist, err = history.Create(*histPath); err != nil {
			return err
		}
		defer n.hist.Close()
	}
	n.holder = fmt.Sprintf("%s#%d", n.id, os.Getpid())
	n.st = &gatedStore{Store: st, g: &n.gate}
	n.res, err = openResourceDB(resPath)
	if err != nil {
		return err
	}
	defer n.res.Close()
	el, err := baton.New(n.st, n.job, baton.WithNode(n.id), baton.WithLease(lease), baton.WithRenew(renew),
		baton.WithClockMargin(margin), baton.WithPoll(pol), baton.WithRetry(pol), baton.WithClock(n.clock))
	if err != nil {
		return err
	}

	cal := vcluster.Calendar{Day: n.round}
	// The runtime schedule.Runner wraps, with the drill's own settings:
	// momentary triggers and an unfenced ledger for the plain and fencing
	// columns, which no user may configure.
	n.runner, err = runner.New(runner.Config{
		Machine: scheduler.Config{Job: n.job, Poll: cal.Business(pol), Retry: cal.Business(pol),
			Rescan: cal.Business(10 * pol), Momentary: n.col != FencingTrigger, Unfenced: n.col == Plain || n.noFence},
		Spec: schedule.Job{Name: n.job}.Spec(), Store: n.st, Exec: n.execute, Clock: businessClock{n},
		CallTimeout: lease})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if n.net {
		// Nobody else registers the job on a network store (the drill's
		// parent cannot reach it).
		for {
			if _, err := n.runner.Register(ctx); err == nil {
				break
			}
			if !sleepCtx(ctx, pol) {
				return nil
			}
		}
	}
	go func() {
		n.commands(ctx, stdin)
		cancel()
	}()
	n.out.say("ready")
	err = el.Run(ctx, n.lead)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// procNode is the state of one node process.
type procNode struct {
	id    string
	job   string // the job and election name: vcluster.Job, or a run's own on an external store
	col   Column
	round time.Duration
	poll  time.Duration
	lines int

	st    store.Store
	res   *sql.DB
	clock *driftClock
	gate  gate
	out   *lineWriter

	origin  atomic.Int64 // Unix nanoseconds of round 0, once started
	started chan struct{}
	armed   atomic.Bool

	runner *runner.Runner

	net     bool // on a network store (--store is a URL)
	noFence bool // --unsafe-no-fence
	hist    *history.Recorder
	holder  string // id#pid: the holder in the history

	mu   sync.Mutex
	term *baton.Term
}

// isStoreURL reports whether --store names a network store: a URL
// scheme://... whose scheme is registered as networked (etcd, PostgreSQL;
// storeurl.Lookup).
func isStoreURL(s string) bool {
	sch, ok := storeurl.Lookup(s)
	_, rest, _ := strings.Cut(s, ":")
	return ok && sch.Networked && strings.HasPrefix(rest, "//")
}

// openNodeStore opens the node's store: an SQLite file on the business
// clock, or a network store (an etcd cluster, a PostgreSQL server) by URL.
func openNodeStore(ctx context.Context, s string, business func() time.Time) (store.Store, error) {
	if isStoreURL(s) {
		return storeurl.Open(ctx, s)
	}
	return sqlite.Open(ctx, s, sqlite.WithTime(business))
}

// business maps real time to the business calendar, 24h per round from the
// origin: the calendar of the virtual cluster, on real time.
func (n *procNode) business() time.Time {
	return vcluster.Calendar{Day: n.round}.Wall(time.Since(time.Unix(0, n.origin.Load())))
}

// businessClock is the Runner's clock: business wall time, and timers of
// business durations.
type businessClock struct{ n *procNode }

func (c businessClock) Now() time.Time { return c.n.business() }

func (c businessClock) NewTimer(d time.Duration) baton.Timer {
	return baton.RealClock{}.NewTimer(vcluster.Calendar{Day: c.n.round}.Elapsed(d))
}

// commands reads the parent's commands until stdin ends.
func (n *procNode) commands(ctx context.Context, stdin io.Reader) {
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "start":
			if len(f) == 2 && n.origin.Load() == 0 {
				o, _ := strconv.ParseInt(f[1], 10, 64)
				n.origin.Store(o)
				close(n.started)
			}
		case "trigger":
			// A momentary trigger reaches a node only while it leads.
			n.mu.Lock()
			if n.term != nil && n.term.Valid() && len(f) == 2 {
				if at, err := schedule.ParseKey(f[1]); err == nil {
					n.runner.Trigger(scheduler.Trigger{Key: f[1], Scheduled: at})
				}
			}
			n.mu.Unlock()
		case "wake":
			n.runner.Wake()
		case "durable":
			// Net mode: the parent cannot reach the store, so every node
			// writes the durable pending row; the first write wins, the
			// others find it pending (schedule.Trigger).
			if len(f) == 2 {
				go n.durable(ctx, f[1])
			}
		case "ledger":
			go n.ledger(ctx, f[1:])
		case "cut":
			n.gate.cut.Store(true)
		case "reconnect":
			n.gate.cut.Store(false)
		case "pause":
			n.gate.stop(n.out, "paused")
		case "arm":
			n.armed.Store(true)
		case "disarm":
			n.armed.Store(false)
		case "rate":
			if len(f) == 2 {
				if r, err := strconv.ParseFloat(f[1], 64); err == nil && r > 0 {
					n.clock.setRate(r)
				}
			}
		}
	}
}

// durable writes the pending row of period key, retrying while the store
// is unreachable, and wakes the Runner.
func (n *procNode) durable(ctx context.Context, key string) {
	for {
		_, _, err := schedule.Trigger(ctx, n.st, n.job, key)
		if err == nil || errors.Is(err, schedule.ErrAlreadyDone) {
			n.runner.Wake()
			return
		}
		if !sleepCtx(ctx, n.poll) {
			return
		}
	}
}

// ledger reports the ledger state of each period key ("ledger KEY
// STATE"), for the parent's drain; unreachable rows are not reported.
func (n *procNode) ledger(ctx context.Context, keys []string) {
	for _, k := range keys {
		c, cancel := context.WithTimeout(ctx, 2*n.poll)
		run, err := n.st.GetRun(c, n.job, k)
		cancel()
		switch {
		case errors.Is(err, store.ErrNotFound):
			n.out.say("ledger %s none", k)
		case err == nil:
			n.out.say("ledger %s %s", k, run.State)
			n.hist.Add(history.Record{Kind: history.Ledger, Name: n.job, Holder: n.holder, Period: k,
				State: string(run.State), Token: run.Token, At: history.Now()})
		}
	}
}

// lead runs while this node holds t: it reports the term's validity, raises
// the fence and runs the scheduler until the term ends.
func (n *procNode) lead(ctx context.Context, t *baton.Term) error {
	n.out.say("elected %d %d", t.Token(), n.clock.realAt(t.Deadline()).UnixNano())
	n.hist.Add(history.Record{Kind: history.Elected, Name: n.job, Holder: n.holder, Token: t.Token(),
		At: history.Now(), Until: history.At(n.clock.realAt(t.Deadline()))})
	n.mu.Lock()
	n.term = t
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.term = nil
		n.mu.Unlock()
		n.out.say("lost %d", t.Token())
		n.hist.Add(history.Record{Kind: history.Lost, Name: n.job, Holder: n.holder, Token: t.Token(), At: history.Now()})
	}()
	go n.watchDeadline(ctx, t)
	select {
	case <-n.started:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if n.col != Plain {
		// A new leader fences the old one before it acts.
		for {
			err := n.raiseFence(ctx, t.Token())
			if err == nil {
				n.out.say("fenced %d", t.Token())
				break
			}
			if errors.Is(err, fence.ErrStaleToken) {
				n.out.say("rejected fence %d", t.Token())
				<-ctx.Done() // a newer leader exists: act no more in this term
				return context.Cause(ctx)
			}
			n.out.say("retry fence %d %s", t.Token(), strings.ReplaceAll(err.Error(), "\n", " "))
			if !sleepCtx(ctx, n.poll) {
				return context.Cause(ctx)
			}
		}
	}
	return n.runner.Run(ctx, t)
}

// watchDeadline reports every change of the term's deadline, in real time:
// renewals and clock-rate changes. The parent measures Valid() intervals
// from these lines.
func (n *procNode) watchDeadline(ctx context.Context, t *baton.Term) {
	last := n.clock.realAt(t.Deadline())
	tick := time.NewTicker(n.poll / 5)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if d := n.clock.realAt(t.Deadline()); d.Sub(last).Abs() > 100*time.Microsecond {
			last = d
			n.out.say("valid %d %d", t.Token(), d.UnixNano())
			n.hist.Add(history.Record{Kind: history.Until, Name: n.job, Holder: n.holder, Token: t.Token(),
				At: history.Now(), Until: history.At(d)})
		}
	}
}

// execute is the node's executor (runner.Executor): the batch. An armed node stops
// itself here (SIGSTOP), after the Runner's Valid() check and before the
// write, and writes when the parent lets it go on (SIGCONT).
func (n *procNode) execute(ctx context.Context, p scheduler.Period, token uint64) (int, string, error) {
	n.out.say("claimed %s %d", p.Key, token)
	n.hist.Add(history.Record{Kind: history.Ledger, Name: n.job, Holder: n.holder, Period: p.Key,
		State: string(store.Running), Token: token, At: history.Now()})
	if n.armed.Load() {
		n.gate.stop(n.out, fmt.Sprintf("freezing %s %d", p.Key, token))
	}
	// The write was under way when the node froze: the end of the term
	// while it was stopped does not call it back.
	landed, err := n.writeBatch(context.WithoutCancel(ctx), p.Key, token)
	switch {
	case errors.Is(err, fence.ErrStaleToken):
		n.out.say("rejected write %d", token)
		return 0, "", err
	case err != nil:
		n.out.say("error write %v", strings.ReplaceAll(err.Error(), "\n", " "))
		return 0, "", err
	}
	if landed {
		n.out.say("wrote %s %d", p.Key, token)
	}
	return 0, "", nil
}

func (n *procNode) raiseFence(ctx context.Context, token uint64) error {
	n.gate.mu.RLock() // the resource is reachable when the store is not
	defer n.gate.mu.RUnlock()
	call := history.Now()
	tx, err := n.res.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if !n.noFence {
		// The fence is the resource's, named as vcluster.WriteBatch names
		// it: the resource file is the run's own, whatever --job is.
		if err := fence.CheckTx(ctx, tx, vcluster.Fence, vcluster.Job, token); err != nil {
			if errors.Is(err, fence.ErrStaleToken) {
				n.recordWrite("", token, call, false)
			}
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	n.recordWrite("", token, call, true)
	return nil
}

// recordWrite records a fenced write in the history: period empty for
// the fence raised on taking office.
func (n *procNode) recordWrite(period string, token uint64, call int64, accepted bool) {
	ret := history.Now()
	n.hist.Add(history.Record{Kind: history.Write, Name: n.job, Holder: n.holder, Token: token, Period: period,
		Call: call, Return: ret, At: ret, Accepted: accepted})
}

// writeBatch writes one batch and records its landing (period, token, node
// and time) in the same transaction.
func (n *procNode) writeBatch(ctx context.Context, period string, token uint64) (bool, error) {
	n.gate.mu.RLock() // the resource is reachable when the store is not
	defer n.gate.mu.RUnlock()
	call := history.Now()
	tx, err := n.res.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	fenced := n.col != Plain && !n.noFence
	landed, err := vcluster.WriteBatch(ctx, tx, vcluster.Batch{Period: period, Node: n.id, Token: token,
		Lines: n.lines, Fence: fenced, Idempotent: n.col == FencingTrigger && !n.noFence})
	if err != nil || !landed {
		err = errors.Join(err, tx.Commit())
		switch {
		case errors.Is(err, fence.ErrStaleToken):
			n.recordWrite(period, token, call, false)
			err = errors.Join(err, fence.LogRefusal(ctx, n.res, vcluster.Fence, fence.Write{Name: vcluster.Job, Token: token, Period: period}, err))
		case err == nil && fenced:
			// The period had landed already: the fence accepted the
			// token (and committed it), the batch added nothing.
			n.recordWrite("", token, call, true)
		}
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO landings (period, token, node, at) VALUES (?, ?, ?, ?)`,
		period, int64(token), n.id, time.Now().UnixNano()); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	if fenced || n.noFence {
		n.recordWrite(period, token, call, true)
	}
	return true, nil
}

// openResourceDB opens the shared resource file of a process-mode drill.
func openResourceDB(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
}

// createResource creates the resource tables, and the landings table the
// process mode measures from.
func createResource(ctx context.Context, db *sql.DB) error {
	if err := vcluster.CreateResource(ctx, db); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS landings (period TEXT NOT NULL, token INTEGER NOT NULL, node TEXT NOT NULL, at INTEGER NOT NULL)`)
	return err
}
