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
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/vcluster"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

// NodeMain is one node of a drill in process mode (Config.Procs): the
// program a node process runs. The baton command runs it as the hidden
// subcommand "baton drill node"; it is exported for that and for tests that
// re-execute their own binary. It is not a stable API.
//
// The node campaigns with a baton.Elector on the SQLite store shared by all
// nodes and, while it leads, runs the drill's batches with the scheduler's
// planner (schedule.Decide) and fenced writes (fence.CheckTx) into the
// shared resource file, as the in-process drill's nodes do. It reads
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
	fs.StringVar(&storePath, "store", "", "SQLite file of the election and the ledger")
	fs.StringVar(&resPath, "resource", "", "SQLite file of the invoices and the fence")
	fs.StringVar(&n.id, "node", "", "node id")
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
		return fmt.Errorf("--column %q: want plain, fencing or fencing+trigger", col)
	}
	if storePath == "" || resPath == "" || n.id == "" || n.round <= 0 || n.lines <= 0 || pol <= 0 {
		return errors.New("--store, --resource, --node, --round, --poll and --invoice-lines are required")
	}
	n.poll = pol
	n.out = &lineWriter{w: stdout}
	n.clock = newDriftClock()
	n.wake = make(chan struct{}, 1)
	n.started = make(chan struct{})

	st, err := sqlite.Open(ctx, storePath, sqlite.WithTime(n.business))
	if err != nil {
		return err
	}
	defer st.Close()
	n.st = &gatedStore{Store: st, g: &n.gate}
	n.res, err = openResourceDB(resPath)
	if err != nil {
		return err
	}
	defer n.res.Close()
	el, err := baton.New(n.st, vcluster.Job, baton.WithNode(n.id), baton.WithLease(lease), baton.WithRenew(renew),
		baton.WithClockMargin(margin), baton.WithPoll(pol), baton.WithRetry(pol), baton.WithClock(n.clock))
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		n.commands(stdin)
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
	wake    chan struct{}

	mu    sync.Mutex
	term  *baton.Term
	inbox []string // momentary triggers not yet claimed
}

// business maps real time to the business calendar, 24h per round from the
// origin, like vcluster.Config.Wall.
func (n *procNode) business() time.Time {
	return businessAt(time.Unix(0, n.origin.Load()), time.Now(), n.round)
}

func businessAt(origin, now time.Time, round time.Duration) time.Time {
	d := now.Sub(origin)
	days, frac := d/round, d%round
	return vcluster.Epoch.Add(days*24*time.Hour + time.Duration(float64(frac)/float64(round)*float64(24*time.Hour)))
}

// commands reads the parent's commands until stdin ends.
func (n *procNode) commands(stdin io.Reader) {
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
				n.inbox = append(n.inbox, f[1])
				n.poke()
			}
			n.mu.Unlock()
		case "wake":
			n.poke()
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

func (n *procNode) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// lead runs while this node holds t: it reports the term's validity, raises
// the fence and runs the scheduler until the term ends.
func (n *procNode) lead(ctx context.Context, t *baton.Term) error {
	n.out.say("elected %d %d", t.Token(), n.clock.realAt(t.Deadline()).UnixNano())
	n.mu.Lock()
	n.term, n.inbox = t, nil
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.term, n.inbox = nil, nil
		n.mu.Unlock()
		n.out.say("lost %d", t.Token())
	}()
	go n.watchDeadline(ctx, t)
	select {
	case <-n.started:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	s := &termScheduler{n: n, t: t}
	s.run(ctx)
	return context.Cause(ctx)
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
		}
	}
}

// termScheduler is one term's scheduler, the real-time counterpart of the
// in-process drill's (vcluster): momentary triggers first, then a pass of
// the planner, which also takes over a running row of a deposed leader.
type termScheduler struct {
	n       *procNode
	t       *baton.Term
	fenced  bool
	claimed *store.Run
	landed  bool
}

func (s *termScheduler) run(ctx context.Context) {
	n := s.n
	for ctx.Err() == nil {
		next := n.poll
		if again, wake := s.pass(ctx); again {
			next = 0
		} else if !wake.IsZero() {
			next = min(next, max(time.Until(wake), 0))
		}
		if next == 0 {
			continue
		}
		tm := time.NewTimer(next)
		select {
		case <-ctx.Done():
		case <-n.wake:
		case <-tm.C:
		}
		tm.Stop()
	}
}

// pass is one pass of the scheduler. again asks for another pass at once;
// wake is when a period comes due, if known.
func (s *termScheduler) pass(ctx context.Context) (again bool, wake time.Time) {
	n, t := s.n, s.t
	if !t.Valid() {
		return false, time.Time{}
	}
	token := t.Token()
	if n.col != Plain && !s.fenced {
		// A new leader fences the old one before it acts.
		switch err := n.raiseFence(ctx, token); {
		case errors.Is(err, fence.ErrStaleToken):
			n.out.say("rejected fence %d", token)
			<-ctx.Done() // a newer leader exists: act no more in this term
			return false, time.Time{}
		case err != nil:
			n.out.say("retry fence %d %s", token, strings.ReplaceAll(err.Error(), "\n", " "))
			return false, time.Time{}
		}
		s.fenced = true
		n.out.say("fenced %d", token)
	}
	if s.claimed != nil {
		if s.landed {
			return s.complete(ctx), time.Time{}
		}
		return false, time.Time{}
	}
	fenced := n.col != Plain
	if n.col != FencingTrigger {
		n.mu.Lock()
		var key string
		if len(n.inbox) > 0 {
			key = n.inbox[0]
		}
		n.mu.Unlock()
		if key != "" {
			at, err := schedule.ParseKey(key)
			if err != nil {
				n.dropInbox()
				return true, time.Time{}
			}
			run := store.Run{Job: vcluster.Job, Period: key, Scheduled: at, State: store.Running,
				Token: token, Holder: n.id, Attempt: 1, Started: n.business()}
			run, err = n.st.SwapRun(ctx, store.RunSwap{Run: run, Fenced: fenced})
			switch {
			case err == nil:
				n.dropInbox()
				s.claimed = &run
				n.out.say("claimed %s %d", run.Period, token)
				return s.effect(ctx), time.Time{}
			case errors.Is(err, store.ErrConflict):
				n.dropInbox() // it has a row: the planner decides
			case errors.Is(err, fence.ErrStaleToken):
				n.out.say("rejected claim %d", token)
				n.dropInbox()
				return false, time.Time{}
			default:
				return false, time.Time{} // unreachable: try again at the next pass
			}
		}
	}
	rows, err := n.st.Runs(ctx, vcluster.Job, "", 0)
	if err != nil {
		return false, time.Time{}
	}
	now := n.business()
	plan := schedule.Decide(schedule.Input{Now: now, Created: vcluster.Epoch, Token: token, Rows: rows})
	for _, a := range plan.Actions {
		sw := a.Swap(vcluster.Job, token, n.id, now)
		sw.Fenced = fenced
		r, err := n.st.SwapRun(ctx, sw)
		if errors.Is(err, fence.ErrStaleToken) {
			n.out.say("rejected %s %d", a.Step, token)
		}
		if err != nil {
			return false, time.Time{}
		}
		if a.Step == schedule.Claim {
			s.claimed = &r
			n.out.say("claimed %s %d", r.Period, token)
			return s.effect(ctx), time.Time{}
		}
	}
	if !plan.Wake.IsZero() {
		wake = time.Unix(0, n.origin.Load()).Add(time.Duration(float64(plan.Wake.Sub(vcluster.Epoch)) / float64(24*time.Hour) * float64(n.round)))
	}
	return false, wake
}

func (n *procNode) dropInbox() {
	n.mu.Lock()
	if len(n.inbox) > 0 {
		n.inbox = n.inbox[1:]
	}
	n.mu.Unlock()
}

// effect checks Valid() and writes; an armed node stops itself in between
// (SIGSTOP), and writes when the parent lets it go on (SIGCONT).
func (s *termScheduler) effect(ctx context.Context) bool {
	n := s.n
	if !s.t.Valid() {
		s.claimed = nil
		return false
	}
	if n.armed.Load() {
		n.gate.stop(n.out, fmt.Sprintf("freezing %s %d", s.claimed.Period, s.claimed.Token))
	}
	// The write was under way when the node froze: the end of the term
	// while it was stopped does not call it back.
	return s.write(context.WithoutCancel(ctx))
}

// write is the batch: the period's invoice lines in one transaction,
// through the fence unless plain, then the ledger completion.
func (s *termScheduler) write(ctx context.Context) bool {
	n, run := s.n, s.claimed
	landed, err := n.writeBatch(ctx, run.Period, run.Token)
	switch {
	case errors.Is(err, fence.ErrStaleToken):
		n.out.say("rejected write %d", run.Token)
		s.claimed = nil
		return false
	case err != nil:
		n.out.say("error write %v", strings.ReplaceAll(err.Error(), "\n", " "))
		s.claimed = nil
		return false
	}
	if landed {
		n.out.say("wrote %s %d", run.Period, run.Token)
	}
	s.landed = true
	return s.complete(ctx)
}

func (s *termScheduler) complete(ctx context.Context) bool {
	n := s.n
	sw := schedule.Complete(*s.claimed, 0, "", nil, n.business())
	sw.Fenced = n.col != Plain
	_, err := n.st.SwapRun(ctx, sw)
	switch {
	case err == nil:
		s.claimed, s.landed = nil, false
		return true // plan again at once: more periods may be due
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrInvalid):
		s.claimed, s.landed = nil, false // finished by another attempt
	case errors.Is(err, fence.ErrStaleToken):
		n.out.say("rejected complete %d", sw.Run.Token)
		s.claimed, s.landed = nil, false
	}
	// Unavailable: the next pass retries the completion, not the batch.
	return false
}

func (n *procNode) raiseFence(ctx context.Context, token uint64) error {
	n.gate.mu.RLock() // the resource is reachable when the store is not
	defer n.gate.mu.RUnlock()
	tx, err := n.res.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fence.CheckTx(ctx, tx, fence.SQLite, vcluster.Job, token); err != nil {
		return err
	}
	return tx.Commit()
}

// writeBatch writes one batch and records its landing (period, token, node
// and time) in the same transaction.
func (n *procNode) writeBatch(ctx context.Context, period string, token uint64) (bool, error) {
	n.gate.mu.RLock() // the resource is reachable when the store is not
	defer n.gate.mu.RUnlock()
	tx, err := n.res.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	landed, err := vcluster.WriteBatch(ctx, tx, vcluster.Batch{Period: period, Node: n.id, Token: token,
		Lines: n.lines, Fence: n.col != Plain, Idempotent: n.col == FencingTrigger})
	if err != nil || !landed {
		return false, errors.Join(err, tx.Commit())
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO landings (period, token, node, at) VALUES (?, ?, ?, ?)`,
		period, int64(token), n.id, time.Now().UnixNano()); err != nil {
		return false, err
	}
	return true, tx.Commit()
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

// gate lets a node stop itself (SIGSTOP) at a point where none of its
// goroutines is inside a store or resource call, and cuts it off from the
// store (the unreachable fault).
//
// Why not SIGSTOP at any instant: a process stopped inside an SQLite write
// transaction keeps the file's write lock, and every other node's writes
// wait for it for the whole pause. That is a property of one shared SQLite
// file, not of the protocol the drill measures, so a pause waits for the
// calls in flight (a few milliseconds) before the node stops.
type gate struct {
	mu  sync.RWMutex
	cut atomic.Bool
}

func (g *gate) enter() error {
	g.mu.RLock()
	if g.cut.Load() {
		g.mu.RUnlock()
		return fmt.Errorf("%w: cut off from the store (injected fault)", store.ErrUnavailable)
	}
	return nil
}

func (g *gate) leave() { g.mu.RUnlock() }

// stop reports line and stops the process until it gets SIGCONT. The gate
// stays shut until then: a signal a process sends itself is not delivered
// at once to every thread, and a store call let in before it lands would
// stop holding the file's lock.
func (g *gate) stop(out *lineWriter, line string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	out.say("%s", line)
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	<-cont
}

// gatedStore passes every call through the gate.
type gatedStore struct {
	store.Store
	g *gate
}

func (s *gatedStore) Get(ctx context.Context, name string) (store.Record, error) {
	if err := s.g.enter(); err != nil {
		return store.Record{}, err
	}
	defer s.g.leave()
	return s.Store.Get(ctx, name)
}

func (s *gatedStore) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	if err := s.g.enter(); err != nil {
		return store.Record{}, err
	}
	defer s.g.leave()
	return s.Store.Swap(ctx, sw)
}

func (s *gatedStore) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	if err := s.g.enter(); err != nil {
		return nil, err
	}
	defer s.g.leave()
	return s.Store.History(ctx, name, after, limit)
}

func (s *gatedStore) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	if err := s.g.enter(); err != nil {
		return store.Job{}, err
	}
	defer s.g.leave()
	return s.Store.EnsureJob(ctx, j)
}

func (s *gatedStore) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	if err := s.g.enter(); err != nil {
		return store.Run{}, err
	}
	defer s.g.leave()
	return s.Store.GetRun(ctx, job, period)
}

func (s *gatedStore) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	if err := s.g.enter(); err != nil {
		return store.Run{}, err
	}
	defer s.g.leave()
	return s.Store.SwapRun(ctx, sw)
}

func (s *gatedStore) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	if err := s.g.enter(); err != nil {
		return nil, err
	}
	defer s.g.leave()
	return s.Store.Runs(ctx, job, after, limit)
}

// lineWriter writes timestamped event lines, one at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) say(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%d %s\n", time.Now().UnixNano(), fmt.Sprintf(format, a...))
}

// driftClock is a baton.Clock that runs at a rate that can change (the
// drift fault). At rate 1 it is the real clock.
type driftClock struct {
	mu      sync.Mutex
	t0, l0  time.Time // real and local time at the last rate change
	rate    float64
	changed chan struct{} // closed and replaced at every rate change
}

var _ baton.Clock = (*driftClock)(nil)

func newDriftClock() *driftClock {
	now := time.Now()
	return &driftClock{t0: now, l0: now, rate: 1, changed: make(chan struct{})}
}

func (c *driftClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.localLocked(time.Now())
}

func (c *driftClock) localLocked(real time.Time) time.Time {
	return c.l0.Add(time.Duration(float64(real.Sub(c.t0)) * c.rate))
}

// realAt returns the real time at which the clock will read local, at the
// current rate.
func (c *driftClock) realAt(local time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t0.Add(time.Duration(float64(local.Sub(c.l0)) / c.rate))
}

func (c *driftClock) setRate(r float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.l0, c.t0, c.rate = c.localLocked(now), now, r
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *driftClock) NewTimer(d time.Duration) baton.Timer {
	t := &driftTimer{c: make(chan time.Time, 1), stop: make(chan struct{})}
	target := c.Now().Add(d)
	go func() {
		for {
			c.mu.Lock()
			wait := time.Duration(float64(target.Sub(c.localLocked(time.Now()))) / c.rate)
			changed := c.changed
			c.mu.Unlock()
			if wait <= 0 {
				if t.fired.CompareAndSwap(false, true) {
					t.c <- c.Now()
				}
				return
			}
			tm := time.NewTimer(wait)
			select {
			case <-tm.C:
			case <-changed:
				tm.Stop()
			case <-t.stop:
				tm.Stop()
				return
			}
		}
	}()
	return t
}

type driftTimer struct {
	c     chan time.Time
	stop  chan struct{}
	once  sync.Once
	fired atomic.Bool
}

func (t *driftTimer) C() <-chan time.Time { return t.c }

func (t *driftTimer) Stop() bool {
	stopped := t.fired.CompareAndSwap(false, true)
	t.once.Do(func() { close(t.stop) })
	return stopped
}
