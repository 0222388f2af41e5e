package postgres_test

// Elector-level fault tests on a real PostgreSQL server, through the shared
// real-time harness (internal/electortest): the whole stack (baton.Elector,
// schedule.Runner, pgfence) on a dedicated server that the tests stop,
// restart, and whose sessions they kill. The scenarios every backend shares
// run in TestElector. Real time is needed, so the leases are short and the
// assertions leave slack for a loaded machine.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/electortest"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/store"
)

// timing is the election timing of the elector tests: short, so that a
// test lasts seconds.
var timing = electortest.Timing{
	Lease:      time.Second,
	Renew:      250 * time.Millisecond,
	Margin:     50 * time.Millisecond,
	Poll:       50 * time.Millisecond,
	Slack:      150 * time.Millisecond, // how late a deadline may be noticed (race detector, two shared cores)
	WriteEvery: 50 * time.Millisecond,
}

// job is the election and job name of the elector tests.
const job = electortest.Name

// linesPerPeriod is how many invoice lines one period writes.
const linesPerPeriod = 3

// TestElector runs the shared real-time elector scenarios.
func TestElector(t *testing.T) {
	// Its scenarios run side by side (electortest.Run); so does it,
	// beside the package's other parallel tests (one at a time in CI).
	testenv.ParallelUnlessLong(t)
	electortest.Run(t, electortest.Backend{
		Timing: timing,
		Fresh: func(t *testing.T) electortest.Location {
			u := pgtest.Start(t)
			return electortest.Location{
				Open: func(node string) store.Store { return open(t, withParam(t, u, "application_name", "baton_node_"+node)) },
				// The schema dropped and created afresh by another process.
				Replace: func() {
					superExec(t, u, `DROP SCHEMA baton CASCADE`)
					open(t, u).Close()
				},
			}
		},
	})
}

// appSchema creates the application's tables: a log of every fenced write
// in commit order, and the invoice of each period, whose "billed" marker is
// unique per period.
const appSchema = `
CREATE TABLE ticks (id bigserial PRIMARY KEY, node text NOT NULL, token bigint NOT NULL, period text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE billed (period text PRIMARY KEY, token bigint NOT NULL, node text NOT NULL);
CREATE TABLE invoice_line (period text NOT NULL, line int NOT NULL, token bigint NOT NULL);`

// billing is the protected resource of the fault tests: an application
// database fenced with pgfence, written through one pool per node whose
// sessions carry the node's application_name, so that a test can kill
// them.
type billing struct {
	url string

	mu    sync.Mutex
	pools map[string]*pgxpool.Pool
}

func (b *billing) pool(ctx context.Context, node string) (*pgxpool.Pool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.pools[node]; ok {
		return p, nil
	}
	cfg, err := pgxpool.ParseConfig(b.url)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "baton_node_" + node
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	b.pools[node] = p
	return p, nil
}

func (b *billing) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.pools {
		p.Close()
	}
}

// Write is a leader's fenced write: the token check and the effect in one
// transaction of the application's own, so that a stale leader's write is
// rolled back whole. A period's write is the pattern that makes its effect
// exactly-once: the fence check, a marker unique per period, and the
// invoice lines. A period re-run by a new leader after the old one
// committed its lines but lost its ledger completion finds the marker and
// writes nothing; a deposed leader's transaction is refused by the fence.
func (b *billing) Write(ctx context.Context, node string, token uint64, period string) error {
	pool, err := b.pool(ctx, node)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := pgfence.Check(ctx, tx, job, token); err != nil {
			return err
		}
		if period != "" {
			tag, err := tx.Exec(ctx, `INSERT INTO billed (period, token, node) VALUES ($1, $2, $3) ON CONFLICT (period) DO NOTHING`,
				period, int64(token), node)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return nil // billed before, by an earlier term: nothing to do
			}
			for line := 1; line <= linesPerPeriod; line++ {
				if _, err := tx.Exec(ctx, `INSERT INTO invoice_line (period, line, token) VALUES ($1, $2, $3)`, period, line, int64(token)); err != nil {
					return err
				}
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO ticks (node, token, period) VALUES ($1, $2, $3)`, node, int64(token), period)
		return err
	})
}

// Applied implements electortest.Resource: the fenced writes in commit
// order (the fence's row lock serialises them, so ids follow commits).
func (b *billing) Applied(ctx context.Context) ([]electortest.Write, error) {
	db, err := pgx.Connect(ctx, b.url)
	if err != nil {
		return nil, err
	}
	defer db.Close(ctx)
	rows, _ := db.Query(ctx, `SELECT node, token, period, at FROM ticks ORDER BY id`)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (electortest.Write, error) {
		var w electortest.Write
		var token int64
		err := row.Scan(&w.Node, &token, &w.Period, &w.At)
		w.Token = uint64(token)
		return w, err
	})
}

// cluster is a harness cluster on a dedicated server.
type cluster struct {
	*electortest.Cluster
	t   *testing.T
	srv *pgtest.Server
	url string
	res *billing
}

// newCluster starts a dedicated server and n nodes on it, running the
// billing job.
func newCluster(t *testing.T, n int) *cluster {
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
	c.res = &billing{url: c.url, pools: map[string]*pgxpool.Pool{}}
	t.Cleanup(c.res.close)
	c.Cluster = electortest.New(t, timing, c.res)
	c.Runner = true
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		u := withParam(t, withParam(t, c.url, "application_name", "baton_node_"+id), "connect_timeout", "2")
		c.AddNode(id, open(t, u))
	}
	c.StartAll()
	return c
}

// leader waits until exactly one node holds a valid term whose token is
// above after, and returns it.
func (c *cluster) leader(within time.Duration, after uint64) (*electortest.Node, *baton.Term) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		var found []*electortest.Node
		var term *baton.Term
		for _, nd := range c.Nodes() {
			if tr, ok := nd.Valid(); ok && tr.Term.Token() > after {
				found, term = append(found, nd), tr.Term
			}
		}
		if len(found) == 1 {
			return found[0], term
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("no single leader with a token above %d within %v", after, within)
	return nil, nil
}

// check runs the harness's checks and the billing job's: every done period
// billed exactly once (one marker, linesPerPeriod lines, by a term no newer
// than the ledger's), and nothing billed that the ledger does not know of.
func (c *cluster) check() {
	t := c.t
	t.Helper()
	st := open(t, c.url)
	defer st.Close()
	c.Check(st)

	ctx := testCtx(t)
	db, err := pgx.Connect(ctx, c.url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	runs, err := st.Runs(ctx, job, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	type bill struct {
		Period string
		Token  int64
		Lines  int64
	}
	rows, _ := db.Query(ctx, `SELECT b.period, b.token, (SELECT count(*) FROM invoice_line l WHERE l.period = b.period)
		FROM billed b ORDER BY b.period`)
	bills, err := pgx.CollectRows(rows, pgx.RowToStructByPos[bill])
	if err != nil {
		t.Fatal(err)
	}
	billed := map[string]bill{}
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
	for _, r := range runs {
		b, ok := billed[r.Period]
		if r.State != store.Done {
			continue
		}
		if !ok {
			t.Errorf("period %s done under token %d but not billed", r.Period, r.Token)
		} else if uint64(b.Token) > r.Token {
			t.Errorf("period %s billed under token %d, done under older token %d", r.Period, b.Token, r.Token)
		}
	}
	for p := range billed {
		if !slices.ContainsFunc(runs, func(r store.Run) bool { return r.Period == p }) {
			t.Errorf("period %s billed but not in the ledger", p)
		}
	}
	t.Logf("billing: %d periods in the ledger, %d billed", len(runs), len(bills))
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
	testenv.ParallelUnlessLong(t)
	c := newCluster(t, 3)
	first, term := c.leader(10*time.Second, 0)
	t.Logf("%s leads with token %d", first.ID, term.Token())
	time.Sleep(2200 * time.Millisecond) // a few periods and fenced writes

	if err := c.srv.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	select {
	case <-term.Done():
	case <-time.After(timing.Lease + time.Minute): // how late it may be is bounded below, by the delay measured
		t.Fatalf("%s still leads %v after the server stopped", first.ID, time.Since(stopped))
	}
	noticed := time.Now()
	deadline := term.Deadline()
	if !errors.Is(term.Err(), baton.ErrLeaseExpired) || term.Valid() {
		t.Fatalf("after the server stopped: cause %v, valid %v; want ErrLeaseExpired, false", term.Err(), term.Valid())
	}
	// The deadline is the start of the last renewal that succeeded, which
	// was before the server stopped, plus the lease.
	if deadline.After(stopped.Add(timing.Lease)) {
		t.Errorf("deadline %v after the server stopped, more than the lease", deadline.Sub(stopped))
	}
	if late, slack := noticed.Sub(deadline), c.Slack(deadline, noticed); late > slack {
		t.Errorf("the term ended %v after its deadline, want at most %v (with the scheduling delay measured)", late, slack)
	}
	t.Logf("server stopped; %s stepped down %v later, %v after its deadline (last renewal started %v before the stop)",
		first.ID, noticed.Sub(stopped), noticed.Sub(deadline), stopped.Sub(deadline.Add(-timing.Lease)))

	// Keep the server down well past lease + 2e + poll: a store that let
	// anybody take over now would be caught.
	smp := electortest.Sample(c.Nodes(), time.Millisecond)
	time.Sleep(2*timing.Lease - time.Since(stopped))
	samples, valid := smp.Halt()
	restarting := time.Now()
	if len(valid) > 0 {
		t.Errorf("valid terms with the server down (%d samples): %v", samples, valid)
	}
	if err := c.srv.Start(); err != nil {
		t.Fatal(err)
	}
	next, nterm := c.leader(10*time.Second, term.Token())
	t.Logf("server restarted after %v down; %s leads with token %d %v after the restart",
		restarting.Sub(stopped), next.ID, nterm.Token(), time.Since(restarting))
	time.Sleep(2500 * time.Millisecond) // catch up, and a few periods more

	for _, w := range c.Acked() {
		if w.At.After(stopped) && w.At.Before(restarting) {
			t.Errorf("a fenced write by %s/%d acknowledged %v after the stop, with the server down", w.Node, w.Token, w.At.Sub(stopped))
		}
	}
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
	testenv.ParallelUnlessLong(t)
	c := newCluster(t, 3)
	c.leader(10*time.Second, 0)
	ctx := testCtx(t)
	// Two connections: the killer's statements must not run inside the
	// locker's transaction, where pg_stat_activity is one snapshot taken
	// at its first use (a renewal that began waiting later would never
	// be seen).
	killer, err := pgx.Connect(ctx, c.url)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)
	locker, err := pgx.Connect(ctx, c.url)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)

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
		for _, nd := range c.Nodes() {
			if _, ok := nd.Valid(); ok {
				return "baton_node_" + nd.ID
			}
		}
		return "baton_node_%"
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var idle, midRenewal, rounds int
	// Four seconds, and longer (up to twelve) until a renewal was caught
	// waiting (a round misses one when the leader's renewal found its
	// connection killed and is between attempts).
	end, last := time.Now().Add(4*time.Second), time.Now().Add(12*time.Second)
	for now := time.Now(); now.Before(end) || (midRenewal == 0 && now.Before(last)); now = time.Now() {
		rounds++
		if rounds%2 == 0 {
			// Mid-renewal: hold the record's row lock so that the next
			// renewal waits in the server, then kill that session.
			tx, err := locker.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `SELECT 1 FROM baton.election WHERE name = $1 FOR UPDATE`, job); err != nil {
				t.Fatal(err)
			}
			// Two renew intervals: a leader's next renewal comes within
			// one of its last, which may have just ended.
			for wait := time.Now().Add(2 * timing.Renew); time.Now().Before(wait); time.Sleep(2 * time.Millisecond) {
				// The renewal's UPDATE (statements.renew), not another
				// write that happens to wait on a lock (a fenced write).
				if n := kill("baton_node_%", `wait_event_type = 'Lock' AND query LIKE 'UPDATE %.election e SET version = nextval%'`); n > 0 {
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
	for end := time.Now().Add(timing.Lease + timing.Lease/2); time.Now().Before(end); time.Sleep(3 * time.Millisecond) {
		storm += kill(leaderPattern(), "true")
	}
	t.Logf("storm: %d sessions killed in %v", storm, timing.Lease+timing.Lease/2)
	nd, tm := c.leader(3*timing.Safe(), 0)
	t.Logf("afterwards %s leads with token %d", nd.ID, tm.Token())
	time.Sleep(1500 * time.Millisecond)
	c.check()
}

// A leader resigns and a contender that polls only every 5s is elected at
// once: the release's notification (LISTEN/NOTIFY) wakes it.
func TestElectorHandoverByNotification(t *testing.T) {
	testenv.ParallelUnlessLong(t)
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

	delay := testenv.MeasureDelay(t)
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
		// Resign once both electors' stores listen (and have read their
		// position in the change feed, the query after LISTEN).
		for {
			var n int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'baton_handover' AND query LIKE '%pg_current_snapshot()%'`).Scan(&n); err != nil {
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
		// Woken by the notification: within a second and the scheduling
		// delay measured meanwhile, far below the 5s poll. How fast a
		// handover is, BenchmarkHandoverResign measures.
		if bound := delay.Slack(time.Second, start, start.Add(d)); d > bound {
			t.Errorf("turn %d: handover took %v, over %v", i, d, bound)
		}
		cur = nt
	}
	slices.Sort(took)
	median := took[len(took)/2]
	t.Logf("handover with a %v poll interval over %d turns (resign to elected): min %v, median %v, max %v", poll, turns, took[0], median, took[len(took)-1])
	if err := cur.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
