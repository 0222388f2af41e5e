package drill

import (
	"container/heap"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
	"github.com/batonhq/baton/store/sqlite"
)

// Result is what one column of a drill measured. The first nine fields are
// the lesson's measures, counted on the real run; the rest are measured
// times and the invoice lines counted from the data.
type Result struct {
	Started          int `json:"started"`
	Missed           int `json:"missed"`
	DelayedRounds    int `json:"delayedRounds"`
	DoubleStarts     int `json:"doubleStarts"`
	Rejected         int `json:"rejected"`
	TwoLeaderRounds  int `json:"twoLeaderRounds"`
	LeaderlessRounds int `json:"leaderlessRounds"`
	HandoverRounds   int `json:"handoverRounds"`
	Handovers        int `json:"handovers"`
	DuplicateLines   int `json:"duplicateLines"`
	MissingLines     int `json:"missingLines"`

	HandoverSeconds   float64 `json:"handoverSeconds"`
	LeaderlessSeconds float64 `json:"leaderlessSeconds"`
	TwoLeaderSeconds  float64 `json:"twoLeaderSeconds"`
}

// Config says where a drill keeps its data.
type Config struct {
	// Store is "sqlite" (the default: a file in Dir) or "mem".
	Store string
	// Dir holds the SQLite files; empty: a temporary directory, removed
	// afterwards.
	Dir string
}

// Run runs the scenario p once for column col on a virtual clock and
// returns its measures. The same p and col always give the same Result.
func Run(ctx context.Context, p Params, col Column, cfg Config) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "baton-drill-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	e := &engine{
		p: p, col: col, ctx: ctx,
		end:          time.Duration(p.Rounds+1) * p.Round,
		leaderlessR:  map[int]bool{},
		twoLeaderR:   map[int]bool{},
		landings:     map[int]int{},
		firstLanding: map[int]time.Duration{},
		faultStart:   time.Duration(p.Start) * p.Round,
	}
	name := fmt.Sprintf("%s-%s", p.Fault, col)
	switch cfg.Store {
	case "", "sqlite":
		path := filepath.Join(dir, name+".baton.db")
		os.Remove(path)
		st, err := sqlite.Open(ctx, path, sqlite.WithTime(func() time.Time { return e.wall(e.now) }))
		if err != nil {
			return Result{}, err
		}
		defer st.Close()
		e.st = st
	case "mem":
		e.st = memstore.New(memstore.WithTime(func() time.Time { return e.wall(e.now) }))
	default:
		return Result{}, fmt.Errorf("drill store %q: want sqlite or mem", cfg.Store)
	}
	res, err := openInvoices(ctx, filepath.Join(dir, name+".invoices.db"))
	if err != nil {
		return Result{}, err
	}
	defer res.Close()
	e.res = res

	var at triggers
	for _, r := range p.Triggers {
		at = append(at, e.wall(time.Duration(r)*p.Round))
	}
	sortTimes(at)
	e.sched = at
	if _, err := e.st.EnsureJob(ctx, store.Job{Name: job, Schedule: "drill"}); err != nil {
		return Result{}, err
	}
	for i := 0; i < p.Nodes; i++ {
		n := &node{idx: i, id: fmt.Sprintf("node-%d", i), up: true, rate: 1}
		e.newMachine(n)
		e.nodes = append(e.nodes, n)
	}
	if p.Outage > 0 {
		e.push(event{at: e.faultStart, kind: evFaultBegin})
		e.push(event{at: time.Duration(p.Start+p.Outage) * p.Round, kind: evFaultEnd})
	}
	for _, r := range p.Triggers {
		e.push(event{at: time.Duration(r) * p.Round, kind: evTrigger, r: r})
	}
	for _, n := range e.nodes {
		e.step(n, startEvent)
	}
	for e.q.Len() > 0 && e.err == nil {
		ev := heap.Pop(&e.q).(event)
		if ev.at > e.end {
			break
		}
		e.now = ev.at
		e.dispatch(ev)
		e.observe()
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
	}
	if e.err != nil {
		return Result{}, e.err
	}
	e.now = e.end
	e.account(e.lastAt, e.end, e.leaders)
	return e.result(ctx)
}

func sortTimes(t []time.Time) {
	for i := 1; i < len(t); i++ {
		for j := i; j > 0 && t[j].Before(t[j-1]); j-- {
			t[j], t[j-1] = t[j-1], t[j]
		}
	}
}

func openInvoices(ctx context.Context, path string) (*sql.DB, error) {
	os.Remove(path)
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := fence.CreateTable(ctx, db, fence.SQLite); err != nil {
		db.Close()
		return nil, err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE invoices (day INTEGER NOT NULL, line INTEGER NOT NULL, token INTEGER NOT NULL, node TEXT NOT NULL)`); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func (e *engine) result(ctx context.Context) (Result, error) {
	var r Result
	for _, t := range e.p.Triggers {
		n := e.landings[t]
		if n == 0 {
			r.Missed++
			continue
		}
		r.Started++
		r.DoubleStarts += n - 1
		r.DelayedRounds += int((e.firstLanding[t] - time.Duration(t)*e.p.Round) / e.p.Round)
	}
	r.Rejected = e.rejected
	r.TwoLeaderRounds, r.LeaderlessRounds = len(e.twoLeaderR), len(e.leaderlessR)
	r.LeaderlessSeconds, r.TwoLeaderSeconds = e.leaderlessS.Seconds(), e.twoLeaderS.Seconds()
	if len(e.elections) > 0 {
		r.Handovers = len(e.elections) - 1
	}
	for _, el := range e.elections[min(1, len(e.elections)):] {
		if el.at >= e.faultStart {
			d := el.at - e.faultStart
			r.HandoverSeconds = d.Seconds()
			r.HandoverRounds = int((d + e.p.Round - 1) / e.p.Round)
			break
		}
	}
	var total, distinct int
	if err := e.res.QueryRowContext(ctx, `SELECT COUNT(*) FROM invoices`).Scan(&total); err != nil {
		return r, err
	}
	if err := e.res.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT DISTINCT day, line FROM invoices)`).Scan(&distinct); err != nil {
		return r, err
	}
	r.DuplicateLines = total - distinct
	for _, t := range e.p.Triggers {
		var have int
		if err := e.res.QueryRowContext(ctx, `SELECT COUNT(DISTINCT line) FROM invoices WHERE day = ?`, t).Scan(&have); err != nil {
			return r, err
		}
		r.MissingLines += e.p.InvoiceLines - have
	}
	return r, nil
}
