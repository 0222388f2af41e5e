package postgres_test

// Elector-level fault tests on a real PostgreSQL server: the whole stack
// (baton.Elector, schedule.Runner, pgfence) on a dedicated server that the
// tests stop, restart, and whose sessions they kill. Real time is needed, so
// the leases are short and the assertions leave slack for a loaded machine.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/postgres"
)

// Election timing of the fault tests: short, so that a test lasts seconds.
const (
	fLease  = time.Second
	fRenew  = 250 * time.Millisecond
	fMargin = 50 * time.Millisecond
	fPoll   = 50 * time.Millisecond
	// fTick is how often a leader makes a fenced write while it is valid.
	fTick = 50 * time.Millisecond
	// fSlack is how late a deadline may be noticed on a busy machine (the
	// race detector, two cores shared with other jobs).
	fSlack = 150 * time.Millisecond
	// linesPerPeriod is how many invoice lines one period writes.
	linesPerPeriod = 3
)

// job is the election and job name of the fault tests.
const job = "billing"

// appSchema creates the application's tables: the fence, a log of every
// fenced write in commit order, and the invoice of each period, whose
// "billed" marker is unique per period.
const appSchema = `
CREATE TABLE ticks (id bigserial PRIMARY KEY, node text NOT NULL, token bigint NOT NULL);
CREATE TABLE billed (period text PRIMARY KEY, token bigint NOT NULL, node text NOT NULL);
CREATE TABLE invoice_line (period text NOT NULL, line int NOT NULL, token bigint NOT NULL);`

// tick is a leader's fenced write: the token check and the effect in one
// transaction of the application's own, so that a stale leader's write is
// rolled back whole.
func tick(ctx context.Context, pool *pgxpool.Pool, node string, token uint64) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := pgfence.Check(ctx, tx, job, token); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO ticks (node, token) VALUES ($1, $2)`, node, int64(token))
		return err
	})
}

// billPeriod is the pattern that makes a period's effect exactly-once: in
// one transaction, the fence check, a marker unique per period, and the
// effect. A period re-run by a new leader after the old one committed its
// lines but lost its ledger completion finds the marker and writes nothing;
// a deposed leader's transaction is refused by the fence and rolled back.
func billPeriod(ctx context.Context, pool *pgxpool.Pool, node string, p schedule.Period, token uint64) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := pgfence.Check(ctx, tx, job, token); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO billed (period, token, node) VALUES ($1, $2, $3) ON CONFLICT (period) DO NOTHING`,
			p.Key, int64(token), node)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil // billed before, by an earlier term: nothing to do
		}
		for line := 1; line <= linesPerPeriod; line++ {
			if _, err := tx.Exec(ctx, `INSERT INTO invoice_line (period, line, token) VALUES ($1, $2, $3)`, p.Key, line, int64(token)); err != nil {
				return err
			}
		}
		return nil
	})
}

// executor runs billPeriod for a schedule.Runner: a refused (stale) write
// is a failure that the fenced ledger refuses to record as well; any other
// error (the server is down) interrupts the run, which is claimed again.
func executor(pool *pgxpool.Pool, node string) schedule.Executor {
	return func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
		err := billPeriod(ctx, pool, node, p, token)
		switch {
		case err == nil:
			return 0, "", nil
		case errors.Is(err, fence.ErrStaleToken):
			return 1, "", err
		default:
			return 0, "", fmt.Errorf("%w: %w", schedule.ErrInterrupted, err)
		}
	}
}

// termInfo is what a node saw of one of its terms.
type termInfo struct {
	node     string
	token    uint64
	won      time.Time
	ended    time.Time // zero while it lasts
	cause    error
	deadline time.Time // the deadline when it ended
}

// tickInfo is one fenced write acknowledged to its leader.
type tickInfo struct {
	node  string
	token uint64
	at    time.Time
}

// node is one elector over its own store handle and its own application
// pool, both connecting with application_name baton_node_<id> so that a
// test can kill its sessions.
type node struct {
	id   string
	st   *postgres.Store
	app  *pgxpool.Pool
	el   *baton.Elector
	term atomic.Pointer[baton.Term] // the latest term
}

// cluster runs nodes that campaign, tick and run the billing job while
// they lead, and a sampler that counts the valid terms every millisecond
// or so.
type cluster struct {
	t      *testing.T
	srv    *pgtest.Server
	url    string
	nodes  []*node
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	terms   []*termInfo
	ticks   []tickInfo
	samples []sample
	errs    []string // invariant violations seen by goroutines
}

// sample is one reading of every node's Valid().
type sample struct {
	at    time.Time
	valid []string
}

// newCluster starts a dedicated server and n nodes on it.
func newCluster(t *testing.T, n int, runner bool) *cluster {
	t.Helper()
	srv := pgtest.NewServer(t)
	ctx := testCtx(t)
	if err := srv.Exec(ctx, "CREATE DATABASE app"); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, srv: srv, url: srv.URL("app")}
	admin, err := pgx.Connect(ctx, c.url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if err := pgfence.CreateTable(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, appSchema); err != nil {
		t.Fatal(err)
	}

	every, _ := schedule.Every(time.Second, 0)
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		u := withParam(t, withParam(t, c.url, "application_name", "baton_node_"+id), "connect_timeout", "2")
		nd := &node{id: id, st: open(t, u)}
		nd.app, err = pgxpool.New(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		nd.el, err = baton.New(nd.st, job, baton.WithNode(id), baton.WithLease(fLease), baton.WithRenew(fRenew),
			baton.WithClockMargin(fMargin), baton.WithPoll(fPoll))
		if err != nil {
			t.Fatal(err)
		}
		var sr *schedule.Runner
		if runner {
			sr, err = schedule.New(nd.st, schedule.Job{Name: job, Schedule: every}, executor(nd.app, id),
				schedule.WithPoll(100*time.Millisecond), schedule.WithRetry(50*time.Millisecond),
				schedule.WithCallTimeout(fRenew))
			if err != nil {
				t.Fatal(err)
			}
		}
		c.nodes = append(c.nodes, nd)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.lead(runCtx, nd, sr)
		}()
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.sample(runCtx)
	}()
	t.Cleanup(c.stop)
	return c
}

// lead campaigns for nd until ctx ends; while it leads, it makes a fenced
// write every fTick while its term is valid, and runs the job if sr is set.
func (c *cluster) lead(ctx context.Context, nd *node, sr *schedule.Runner) {
	nd.el.Run(ctx, func(ctx context.Context, t *baton.Term) error {
		ti := &termInfo{node: nd.id, token: t.Token(), won: time.Now()}
		c.mu.Lock()
		c.terms = append(c.terms, ti)
		c.mu.Unlock()
		nd.term.Store(t)
		c.wg.Add(1) // lead's own count keeps the group above zero
		go func() {
			defer c.wg.Done()
			<-t.Done() // at the latest when Run resigns
			now := time.Now()
			c.mu.Lock()
			ti.ended, ti.cause, ti.deadline = now, t.Err(), t.Deadline()
			c.mu.Unlock()
		}()

		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := time.NewTicker(fTick)
			defer tk.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tk.C:
				}
				if !t.Valid() {
					continue
				}
				wctx, cancel := context.WithTimeout(ctx, fRenew)
				err := tick(wctx, nd.app, nd.id, t.Token())
				cancel()
				if err == nil {
					c.mu.Lock()
					c.ticks = append(c.ticks, tickInfo{node: nd.id, token: t.Token(), at: time.Now()})
					c.mu.Unlock()
				}
			}
		}()
		if sr != nil {
			sr.Run(ctx, t)
		}
		<-ctx.Done()
		wg.Wait()
		return context.Cause(ctx)
	})
}

// sample reads every node's Valid() about every millisecond and records
// any reading with two valid terms as a violation.
func (c *cluster) sample(ctx context.Context) {
	for ctx.Err() == nil {
		s := sample{at: time.Now()}
		for _, nd := range c.nodes {
			if t := nd.term.Load(); t != nil && t.Valid() {
				s.valid = append(s.valid, fmt.Sprintf("%s/%d", nd.id, t.Token()))
			}
		}
		c.mu.Lock()
		c.samples = append(c.samples, s)
		if len(s.valid) > 1 {
			c.errs = append(c.errs, fmt.Sprintf("%s: two valid leaders %v", s.at.Format("15:04:05.000"), s.valid))
		}
		c.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
}

// stop ends the nodes (each resigns), then closes their stores and pools.
func (c *cluster) stop() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	c.cancel = nil
	c.wg.Wait()
	for _, nd := range c.nodes {
		nd.st.Close()
		nd.app.Close()
	}
}

// leader waits until exactly one node holds a valid term whose token is
// above after, and returns it.
func (c *cluster) leader(within time.Duration, after uint64) (*node, *baton.Term) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		var found []*node
		for _, nd := range c.nodes {
			if t := nd.term.Load(); t != nil && t.Valid() && t.Token() > after {
				found = append(found, nd)
			}
		}
		if len(found) == 1 {
			return found[0], found[0].term.Load()
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("no single leader with a token above %d within %v", after, within)
	return nil, nil
}

// check verifies, after stop, what must hold whatever the faults were:
// never two valid terms; fenced writes committed in token order; tokens
// rising with every new term; terms ended only for a known cause; and the
// billing job's ledger and invoice each with at most one run per period.
func (c *cluster) check() {
	t := c.t
	t.Helper()
	c.stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.errs {
		t.Error(e)
	}

	// Terms: tokens rise in the order the terms were won, never reused.
	terms := slices.Clone(c.terms)
	sort.Slice(terms, func(i, j int) bool { return terms[i].won.Before(terms[j].won) })
	causes := map[string]int{}
	for i, ti := range terms {
		if i > 0 && ti.token <= terms[i-1].token {
			t.Errorf("term %s/%d won after %s/%d: tokens must rise", ti.node, ti.token, terms[i-1].node, terms[i-1].token)
		}
		switch {
		case errors.Is(ti.cause, baton.ErrLeaseExpired), errors.Is(ti.cause, baton.ErrDeposed), errors.Is(ti.cause, baton.ErrResigned):
			causes[ti.cause.Error()]++
		default:
			t.Errorf("term %s/%d ended with cause %v", ti.node, ti.token, ti.cause)
		}
	}
	t.Logf("%d terms; causes: %v", len(terms), causes)

	ctx := testCtx(t)
	db, err := pgx.Connect(ctx, c.url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)

	// Fenced writes: in commit order (the fence's row lock serialises them,
	// so ids follow commits) tokens never go back.
	rows, _ := db.Query(ctx, `SELECT node, token FROM ticks ORDER BY id`)
	type row struct {
		Node  string
		Token int64
	}
	ticks, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(ticks); i++ {
		if ticks[i].Token < ticks[i-1].Token {
			t.Errorf("fenced write %d by %s with token %d committed after one with token %d", i, ticks[i].Node, ticks[i].Token, ticks[i-1].Token)
		}
	}
	if len(ticks) != len(c.ticks) {
		// A write whose acknowledgement was lost (session killed at
		// commit) may have committed; the reverse must not happen.
		t.Logf("%d fenced writes committed, %d acknowledged", len(ticks), len(c.ticks))
	}
	t.Logf("%d fenced writes committed", len(ticks))

	// The election log: tokens rise with every acquisition.
	st := open(t, c.url)
	defer st.Close()
	evs, err := st.History(ctx, job, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for _, ev := range evs {
		if ev.Kind == store.Acquired || ev.Kind == store.TakenOver || ev.Kind == store.Transferred {
			if ev.Token <= last {
				t.Errorf("election log: %s by %s at token %d after token %d", ev.Kind, ev.Holder, ev.Token, last)
			}
			last = ev.Token
		}
	}
	c.checkLedger(ctx, db, st)
}

// checkLedger verifies the billing job: the ledger's periods follow each
// other without a gap, every done period was billed exactly once (one
// marker, linesPerPeriod lines, by a term no newer than the ledger's), and
// nothing was billed that the ledger does not know of.
func (c *cluster) checkLedger(ctx context.Context, db *pgx.Conn, st *postgres.Store) {
	t := c.t
	runs, err := st.Runs(ctx, job, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) == 0 {
		return // the test ran no job
	}
	type billing struct {
		Period string
		Token  int64
		Lines  int64
	}
	rows, _ := db.Query(ctx, `SELECT b.period, b.token, (SELECT count(*) FROM invoice_line l WHERE l.period = b.period)
		FROM billed b ORDER BY b.period`)
	bills, err := pgx.CollectRows(rows, pgx.RowToStructByPos[billing])
	if err != nil {
		t.Fatal(err)
	}
	billed := map[string]billing{}
	for _, b := range bills {
		billed[b.Period] = b
		if b.Lines != linesPerPeriod {
			t.Errorf("period %s has %d invoice lines, want %d", b.Period, b.Lines, linesPerPeriod)
		}
	}
	var lines int64
	db.QueryRow(ctx, `SELECT count(*) FROM invoice_line`).Scan(&lines)
	if lines != int64(len(bills))*linesPerPeriod {
		t.Errorf("%d invoice lines for %d billed periods", lines, len(bills))
	}

	var prev time.Time
	reruns := 0
	for i, r := range runs {
		at, err := schedule.ParseKey(r.Period)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && at.Sub(prev) != time.Second {
			t.Errorf("ledger: period %s follows %s: a period is missing", r.Period, schedule.Key(prev))
		}
		prev = at
		b, ok := billed[r.Period]
		switch r.State {
		case store.Done:
			if !ok {
				t.Errorf("period %s done under token %d but not billed", r.Period, r.Token)
			} else if uint64(b.Token) > r.Token {
				t.Errorf("period %s billed under token %d, done under older token %d", r.Period, b.Token, r.Token)
			}
		case store.Running, store.Pending:
			if i < len(runs)-2 {
				t.Errorf("period %s still %s with later periods run: %+v", r.Period, r.State, r)
			}
		default:
			t.Errorf("period %s is %s: %q", r.Period, r.State, r.Output)
		}
		if d := schedule.Delay(r); d > 500*time.Millisecond {
			t.Logf("period %s started %v late (came due while nobody could lead), by %s under token %d", r.Period, d.Round(time.Millisecond), r.Holder, r.Token)
		}
		if r.Attempt > 1 {
			reruns++
			t.Logf("period %s run %d times, done under token %d (billed under %d), %v late", r.Period, r.Attempt, r.Token, b.Token, schedule.Delay(r))
		}
	}
	for p := range billed {
		if !slices.ContainsFunc(runs, func(r store.Run) bool { return r.Period == p }) {
			t.Errorf("period %s billed but not in the ledger", p)
		}
	}
	t.Logf("ledger: %d periods, %d billed, %d taken over by a later term", len(runs), len(bills), reruns)
}

// The server stops while a leader holds the lease. The leader steps down
// by itself at its deadline, the start of its last successful renewal plus
// the lease; nobody is valid or writes while the server is down; after the
// restart exactly one node leads, with a higher token, and catches up the
// periods that came due meanwhile, each billed once.
func TestElectorServerDown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a PostgreSQL server for seconds")
	}
	c := newCluster(t, 3, true)
	first, term := c.leader(10*time.Second, 0)
	t.Logf("%s leads with token %d", first.id, term.Token())
	time.Sleep(2200 * time.Millisecond) // a few periods and fenced writes

	if err := c.srv.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	select {
	case <-term.Done():
	case <-time.After(fLease + time.Second):
		t.Fatalf("%s still leads %v after the server stopped", first.id, time.Since(stopped))
	}
	noticed := time.Now()
	deadline := term.Deadline()
	if !errors.Is(term.Err(), baton.ErrLeaseExpired) || term.Valid() {
		t.Fatalf("after the server stopped: cause %v, valid %v; want ErrLeaseExpired, false", term.Err(), term.Valid())
	}
	// The deadline is the start of the last renewal that succeeded, which
	// was before the server stopped, plus the lease.
	if deadline.After(stopped.Add(fLease)) {
		t.Errorf("deadline %v after the server stopped, more than the lease", deadline.Sub(stopped))
	}
	if late := noticed.Sub(deadline); late > fSlack {
		t.Errorf("the term ended %v after its deadline, want at most %v", late, fSlack)
	}
	t.Logf("server stopped; %s stepped down %v later, %v after its deadline (last renewal started %v before the stop)",
		first.id, noticed.Sub(stopped), noticed.Sub(deadline), stopped.Sub(deadline.Add(-fLease)))

	// Keep the server down well past lease + 2e + poll: a store that let
	// anybody take over now would be caught.
	time.Sleep(2*fLease - time.Since(stopped))
	restarting := time.Now()
	if err := c.srv.Start(); err != nil {
		t.Fatal(err)
	}
	next, nterm := c.leader(10*time.Second, term.Token())
	t.Logf("server restarted after %v down; %s leads with token %d %v after the restart",
		restarting.Sub(stopped), next.id, nterm.Token(), time.Since(restarting))
	time.Sleep(2500 * time.Millisecond) // catch up, and a few periods more

	c.mu.Lock()
	for _, s := range c.samples {
		if s.at.After(deadline.Add(fSlack)) && s.at.Before(restarting) && len(s.valid) > 0 {
			t.Errorf("%v after the stop, with the server down: valid terms %v", s.at.Sub(stopped), s.valid)
			break
		}
	}
	for _, tk := range c.ticks {
		if tk.at.After(stopped) && tk.at.Before(restarting) {
			t.Errorf("a fenced write by %s/%d acknowledged %v after the stop, with the server down", tk.node, tk.token, tk.at.Sub(stopped))
		}
	}
	c.mu.Unlock()
	c.check()
}

// The server kills the nodes' sessions, idle or in the middle of a renewal,
// again and again for a few seconds: leaders keep leading or step down for
// a known cause, tokens only rise, no two terms are ever valid at once,
// fenced writes commit in token order, and one node leads afterwards.
func TestElectorSessionsKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a PostgreSQL server for seconds")
	}
	c := newCluster(t, 3, true)
	c.leader(10*time.Second, 0)
	ctx := testCtx(t)
	killer, err := pgx.Connect(ctx, c.url)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)

	// kill terminates the sessions of the nodes matching pattern that
	// also match cond, and returns how many.
	kill := func(pattern, cond string) int {
		var n int
		err := killer.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name LIKE $1 AND pid <> pg_backend_pid() AND `+cond, pattern).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	leaderPattern := func() string {
		for _, nd := range c.nodes {
			if tm := nd.term.Load(); tm != nil && tm.Valid() {
				return "baton_node_" + nd.id
			}
		}
		return "baton_node_%"
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var idle, midRenewal, rounds int
	end := time.Now().Add(4 * time.Second)
	for time.Now().Before(end) {
		rounds++
		if rounds%2 == 0 {
			// Mid-renewal: hold the record's row lock so that the next
			// renewal waits in the server, then kill that session.
			tx, err := killer.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `SELECT 1 FROM baton.election WHERE name = $1 FOR UPDATE`, job); err != nil {
				t.Fatal(err)
			}
			for wait := time.Now().Add(fRenew); time.Now().Before(wait); time.Sleep(2 * time.Millisecond) {
				if n := kill("baton_node_%", `wait_event_type = 'Lock'`); n > 0 {
					midRenewal += n
					break
				}
			}
			tx.Rollback(ctx)
		} else {
			idle += kill(leaderPattern(), "true")
		}
		time.Sleep(time.Duration(20+rng.IntN(130)) * time.Millisecond)
	}
	t.Logf("%d rounds: %d sessions killed mid-renewal (waiting on the record's lock), %d killed at random moments", rounds, midRenewal, idle)
	if midRenewal == 0 {
		t.Error("no renewal was caught in the server: the test did not test what it says")
	}
	// A storm: the leader's sessions killed every few milliseconds for
	// longer than the lease, so that its renewals may fail until its
	// deadline (or squeeze through on fresh connections).
	storm := 0
	for end := time.Now().Add(fLease + fLease/2); time.Now().Before(end); time.Sleep(3 * time.Millisecond) {
		storm += kill(leaderPattern(), "true")
	}
	t.Logf("storm: %d sessions killed in %v", storm, fLease+fLease/2)
	nd, tm := c.leader(3*(fLease+2*fMargin), 0)
	t.Logf("afterwards %s leads with token %d", nd.id, tm.Token())
	time.Sleep(1500 * time.Millisecond)
	c.check()
}

// A leader resigns and a contender that polls only every 5s is elected at
// once: the release's notification (LISTEN/NOTIFY) wakes it.
func TestElectorHandoverByNotification(t *testing.T) {
	const (
		lease = 10 * time.Second
		poll  = 5 * time.Second
		turns = 6
	)
	u := pgtest.Start(t)
	ctx := testCtx(t)
	els := make([]*baton.Elector, 2)
	for i := range els {
		st := open(t, withParam(t, u, "application_name", "baton_handover"))
		defer st.Close()
		var err error
		els[i], err = baton.New(st, job, baton.WithNode(fmt.Sprintf("n%d", i+1)), baton.WithLease(lease), baton.WithPoll(poll))
		if err != nil {
			t.Fatal(err)
		}
		defer els[i].Close(context.Background())
	}
	cur, err := els[0].Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)

	var took []time.Duration
	for i := range turns {
		next := els[(i+1)%2]
		won := make(chan *baton.Term, 1)
		go func() {
			nt, err := next.Campaign(ctx)
			if err != nil {
				nt = nil
			}
			won <- nt
		}()
		// Resign once both electors' stores listen.
		for {
			var n int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'baton_handover' AND query LIKE 'LISTEN%'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 2 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // let the contender read the held record first
		start := time.Now()
		if err := cur.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		var nt *baton.Term
		select {
		case nt = <-won:
		case <-time.After(poll):
			t.Fatalf("turn %d: no handover within the poll interval %v", i, poll)
		}
		if nt == nil {
			t.Fatalf("turn %d: campaign failed", i)
		}
		d := time.Since(start)
		took = append(took, d)
		if nt.Token() != cur.Token()+1 {
			t.Errorf("turn %d: token %d after %d", i, nt.Token(), cur.Token())
		}
		cur = nt
	}
	slices.Sort(took)
	median := took[len(took)/2]
	t.Logf("handover with a %v poll interval over %d turns (resign to elected): min %v, median %v, max %v", poll, turns, took[0], median, took[len(took)-1])
	if median > 200*time.Millisecond || took[len(took)-1] > time.Second {
		t.Errorf("handover took %v (median %v); want a median within 200ms and every one within 1s", took, median)
	}
	if err := cur.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
