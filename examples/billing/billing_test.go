package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Election timing of the tests: short, so that a takeover takes a second.
const (
	lease  = time.Second
	renew  = 250 * time.Millisecond
	margin = 50 * time.Millisecond
	poll   = 50 * time.Millisecond
)

var sellers = []string{"acme", "globex", "initech"}

// setup returns a fresh database with the tables, and its URL.
func setup(t *testing.T) (context.Context, string, *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	u := pgtest.Start(t)
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for range 2 { // idempotent: every node runs it at start
		if err := migrate(ctx, pool); err != nil {
			t.Fatal(err)
		}
	}
	return ctx, u, pool
}

// sell records sales of every seller at each of the instants.
func sell(t *testing.T, ctx context.Context, pool *pgxpool.Pool, at ...time.Time) {
	t.Helper()
	for _, ts := range at {
		for i, s := range sellers {
			_, err := pool.Exec(ctx, `INSERT INTO sales (seller, amount_cents, sold_at) VALUES ($1, $2, $3)`, s, int64(1000*(i+1)), ts)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

func openStore(t *testing.T, ctx context.Context, u string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newElector(t *testing.T, st store.Store, node string) *baton.Elector {
	t.Helper()
	el, err := baton.New(st, jobName, baton.WithNode(node), baton.WithLease(lease), baton.WithRenew(renew),
		baton.WithClockMargin(margin), baton.WithPoll(poll))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { el.Close(context.Background()) })
	return el
}

// line is one invoice line as stored.
type line struct {
	Seller string
	Day    string
	Line   int32
	Amount int64
	Token  int64
}

func invoice(t *testing.T, ctx context.Context, pool *pgxpool.Pool) []line {
	t.Helper()
	rows, _ := pool.Query(ctx, `SELECT seller, day, line, amount_cents, token FROM invoice_line ORDER BY day, seller, line`)
	lines, err := pgx.CollectRows(rows, pgx.RowToStructByPos[line])
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// byDay groups lines by day.
func byDay(lines []line) map[string][]line {
	m := map[string][]line{}
	for _, l := range lines {
		m[l.Day] = append(m[l.Day], l)
	}
	return m
}

// A leader is deposed (an operator asks it to resign; it could as well be
// cut off and taken over) and the next leader bills a day. The old leader,
// like a process that paused after checking that it led, then tries to
// bill: its transactions are refused with fence.ErrStaleToken and rolled
// back, and none of its lines land, for a day the new leader billed or
// for one it has not reached yet.
func TestDeposedLeaderLinesNeverLand(t *testing.T) {
	ctx, u, pool := setup(t)
	day := 24 * time.Hour
	close1 := time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)
	period := func(k int) schedule.Period {
		at := close1.Add(time.Duration(k) * day)
		return schedule.Period{Key: schedule.Key(at), Scheduled: at}
	}
	sell(t, ctx, pool, close1.Add(-time.Hour), close1.Add(day-time.Hour), close1.Add(2*day-time.Hour))
	b := &biller{pool: pool, every: day}

	st := openStore(t, ctx, u)
	a, bn := newElector(t, openStore(t, ctx, u), "a"), newElector(t, openStore(t, ctx, u), "b")
	ta, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.execute(ctx, period(0), ta.Token()); err != nil {
		t.Fatal(err)
	}

	won := make(chan *baton.Term, 1)
	go func() {
		tb, err := bn.Campaign(ctx)
		if err != nil {
			tb = nil
		}
		won <- tb
	}()
	if err := baton.RequestResign(ctx, st, jobName, ta.Token()); err != nil {
		t.Fatal(err)
	}
	tb := <-won
	if tb == nil {
		t.Fatal("b was not elected")
	}
	<-ta.Done()
	if !errors.Is(ta.Err(), baton.ErrDeposed) || ta.Valid() {
		t.Fatalf("a after the resign request: cause %v, valid %v", ta.Err(), ta.Valid())
	}
	if code, out, err := b.execute(ctx, period(1), tb.Token()); err != nil || code != 0 {
		t.Fatalf("b bills day 2: exit %d %q %v", code, out, err)
	}
	before := invoice(t, ctx, pool)

	// The deposed leader's late work.
	for k := range 3 {
		code, _, err := b.execute(ctx, period(k), ta.Token())
		if !errors.Is(err, fence.ErrStaleToken) || code == 0 {
			t.Errorf("a (token %d) bills day %d after b (token %d) wrote: exit %d, %v; want ErrStaleToken", ta.Token(), k+1, tb.Token(), code, err)
		} else {
			t.Logf("a bills day %d: %v", k+1, err)
		}
	}
	after := invoice(t, ctx, pool)
	if len(after) != len(before) {
		t.Fatalf("the deposed leader's lines landed: %d lines before, %d after", len(before), len(after))
	}
	days := byDay(after)
	for k, want := range []int64{int64(ta.Token()), int64(tb.Token()), 0} {
		ls := days[period(k).Key]
		if want == 0 {
			if len(ls) != 0 {
				t.Errorf("day 3, billed by nobody valid: %+v", ls)
			}
			continue
		}
		if len(ls) != 2*len(sellers) {
			t.Errorf("day %d: %d lines, want %d", k+1, len(ls), 2*len(sellers))
		}
		for _, l := range ls {
			if l.Token != want {
				t.Errorf("day %d: line %+v, want token %d", k+1, l, want)
			}
		}
	}
	tb.Resign(ctx)
}

// Leader a bills a day and dies before the run ledger records the run:
// its store goes away right after the invoice transaction committed. Its
// lease runs out, b takes over with the next token and runs the day again
// (the ledger row is still "running" under a's token); the unique key
// makes that re-run write nothing. Every seller-day has its lines exactly
// once, and every sale of a billed day is billed once.
func TestRerunAfterLostCompletion(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an election for seconds")
	}
	ctx, u, pool := setup(t)
	// Sales in the coming seconds, each at 0.3s into its one-second day,
	// far from the day's edges.
	base := time.Now().Truncate(time.Second)
	var at []time.Time
	for k := range 12 {
		at = append(at, base.Add(time.Duration(k)*time.Second+300*time.Millisecond))
	}
	sell(t, ctx, pool, at...)
	b := &biller{pool: pool, every: time.Second}
	days, _ := schedule.Every(time.Second, 0)
	opts := []schedule.Option{schedule.WithPoll(100 * time.Millisecond), schedule.WithRetry(50 * time.Millisecond), schedule.WithCallTimeout(renew)}

	// a: dies right after its first day's lines committed.
	stA := openStore(t, ctx, u)
	a := newElector(t, stA, "a")
	var (
		mu      sync.Mutex
		lost    string // the day whose completion was lost
		billedA int64
	)
	crash := func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
		code, out, err := b.execute(ctx, p, token)
		mu.Lock()
		defer mu.Unlock()
		if lost == "" && err == nil {
			lost = p.Key
			billedA, _ = parseLines(out)
			stA.Close() // the ledger write that records the run fails
		}
		return code, out, err
	}
	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	adone := make(chan struct{})
	go func() {
		defer close(adone)
		serve(actx, stA, a, days, crash, opts...)
	}()
	ta := waitLeader(t, openStore(t, ctx, u), "a")

	// b: campaigns all along; takes over once a's lease ran out.
	stB := openStore(t, ctx, u)
	bn := newElector(t, stB, "b")
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	bdone := make(chan struct{})
	go func() {
		defer close(bdone)
		serve(bctx, stB, bn, days, b.execute, opts...)
	}()
	tb := waitLeader(t, stB, "b")
	if tb.Token != ta.Token+1 {
		t.Fatalf("b's token %d after a's %d", tb.Token, ta.Token)
	}
	// b took over only after a's lease ran out.
	evs, err := stB.History(ctx, jobName, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Kind != store.TakenOver || last.Holder != "b" {
		t.Errorf("last election event %+v, want b's takeover after expiry", last)
	}
	acancel()
	<-adone
	time.Sleep(2500 * time.Millisecond) // b re-runs the lost day and bills a few more
	bcancel()
	<-bdone

	mu.Lock()
	defer mu.Unlock()
	if lost == "" {
		t.Fatal("a billed no day")
	}
	runs, err := stB.Runs(ctx, jobName, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	lines := byDay(invoice(t, ctx, pool))
	reran := false
	doneDays := 0
	for _, r := range runs {
		if r.Period == lost {
			reran = true
			if r.State != store.Done || r.Token != tb.Token || r.Attempt != 2 {
				t.Errorf("the lost day's ledger row %+v, want done by b (token %d) at attempt 2", r, tb.Token)
			}
			t.Logf("day %s: billed by a (token %d, %d lines), completion lost; re-run by b (token %d): %q",
				lost, ta.Token, billedA, tb.Token, r.Output)
			for _, l := range lines[lost] {
				if l.Token != int64(ta.Token) {
					t.Errorf("the lost day's line %+v, want a's token %d: the re-run wrote", l, ta.Token)
				}
			}
		}
		if r.State != store.Done {
			continue
		}
		doneDays++
		checkDay(t, ctx, pool, r.Period, lines[r.Period])
	}
	if !reran {
		t.Errorf("the lost day %s is not in the ledger: %+v", lost, runs)
	}
	if doneDays < 3 {
		t.Errorf("%d days done: %+v", doneDays, runs)
	}
	for d := range lines {
		if !strings.Contains(ledgerKeys(runs), d) {
			t.Errorf("day %s has invoice lines but no ledger row", d)
		}
	}
	t.Logf("%d days done, each seller-day billed once", doneDays)
}

// checkDay verifies one billed day: per seller with sales in the day, one
// sales line with the day's total and one commission line, nothing else.
func checkDay(t *testing.T, ctx context.Context, pool *pgxpool.Pool, key string, ls []line) {
	t.Helper()
	end, _ := schedule.ParseKey(key)
	rows, _ := pool.Query(ctx, `SELECT seller, sum(amount_cents)::bigint FROM sales WHERE sold_at >= $1 AND sold_at < $2 GROUP BY seller`,
		end.Add(-time.Second), end)
	type total struct {
		Seller string
		Total  int64
	}
	totals, err := pgx.CollectRows(rows, pgx.RowToStructByPos[total])
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2*len(totals) {
		t.Errorf("day %s: %d lines for %d sellers with sales: %+v", key, len(ls), len(totals), ls)
		return
	}
	got := map[string]int64{}
	for _, l := range ls {
		if l.Line == 1 {
			got[l.Seller] += l.Amount
		}
	}
	for _, tot := range totals {
		if got[tot.Seller] != tot.Total {
			t.Errorf("day %s, %s: billed %d, sold %d", key, tot.Seller, got[tot.Seller], tot.Total)
		}
	}
}

func ledgerKeys(runs []store.Run) string {
	var b strings.Builder
	for _, r := range runs {
		b.WriteString(r.Period + " ")
	}
	return b.String()
}

// parseLines reads the count from an executor's output "N invoice lines
// written".
func parseLines(out string) (int64, bool) {
	var n int64
	_, err := fmt.Sscanf(out, "%d invoice lines written", &n)
	return n, err == nil
}

// waitLeader waits until node holds the election in st and returns the
// record, with the token of its term.
func waitLeader(t *testing.T, st store.Store, node string) store.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		rec, err := st.Get(context.Background(), jobName)
		if err == nil && rec.Holder == node {
			return rec
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s not elected within 10s", node)
	return store.Record{}
}

func TestFlags(t *testing.T) {
	var errb bytes.Buffer
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "--store is required"},
		{[]string{"--store", "postgres://h/db", "--every", "1500ms"}, "--every"},
		{[]string{"--store", "postgres://h/db", "--lease", "0s"}, "--lease"},
		{[]string{"--store", "postgres://h/db", "extra"}, "unexpected argument"},
	} {
		t.Setenv("BATON_STORE", "")
		errb.Reset()
		if code := realMain(context.Background(), tt.args, &errb); code != 2 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("billing %v: exit %d, stderr %q; want 2 and %q", tt.args, code, errb.String(), tt.want)
		}
	}
	cfg, err := parseFlags([]string{"--store", "postgres://u@h/db?sslmode=disable&schema=jobs"}, &errb)
	if err != nil || cfg.db != "postgres://u@h/db?sslmode=disable" {
		t.Errorf("default --db: %q, %v; want the store URL without its schema parameter", cfg.db, err)
	}
}
