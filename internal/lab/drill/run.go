package drill

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/history"
	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/schedule"
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

	// PendingAtEnd counts batches whose period was still open in the run
	// ledger (pending or running) when the drill stopped its nodes, after
	// waiting a bounded time for it: not lost, since the durable row stays
	// for the next leader, and not counted in MissingLines. Only process
	// modes can end with one (a loaded machine); the virtual clock runs
	// every due period.
	PendingAtEnd int `json:"pendingAtEnd"`

	// Job is the job and election name the column ran under on an
	// external store (Config.StoreURL); empty otherwise ("billing").
	Job string `json:"job,omitempty"`

	// History is the history checker's verdict over the nodes' records
	// (net mode only).
	History *history.Result `json:"history,omitempty"`

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

	// Procs runs the drill with real OS processes on real time instead of
	// on a virtual clock: one process per node, all on one SQLite store
	// file, writing into one SQLite resource file; faults by signals
	// (SIGSTOP/SIGCONT, SIGKILL and a restart) and by switches sent to the
	// node (store cut off, clock rate). Params.Latency does not apply: the
	// store's latency is real. Store must be "" or "sqlite"; StoreURL
	// names an external store instead of the file.
	Procs bool
	// Node is the command that starts one node process (Procs): a program
	// that calls NodeMain with the arguments the drill appends, such as
	// {"/path/to/baton", "drill", "node"}.
	Node []string
	// StoreURL runs the process mode (Procs) on an external store instead
	// of an SQLite file: a URL of a networked scheme that storeurl opens
	// (postgres://, etcd://, kube://), reachable from this process and
	// from the nodes. The store is not emptied: each column runs a job
	// and election of its own, named "billing-" and a number drawn from
	// the clock (Result.Job), and leaves its rows behind.
	StoreURL string
	// NodeEnv is added to the node processes' environment (Procs).
	NodeEnv []string
	// Progress, when set, gets progress reports while a process-mode run
	// goes (Procs): plain lines, or with Live one line rewritten every
	// round, for a terminal.
	Progress io.Writer
	// Live rewrites one progress line per round (carriage return).
	Live bool

	// Net runs the process mode on test hosts in network namespaces
	// (Lab; needs root and nft): one host per node and the
	// store on hosts of its own, "etcd3" or "etcd5" (that many etcd
	// member processes) or "postgres" (one server). The unreachable
	// fault is the leader's link cut, and the net faults (NetFaults)
	// apply. Every node records its history and the result carries the
	// history checker's verdict (Result.History).
	Net string
	// Lab makes net mode's test hosts and checks its histories (package
	// netdrill); required with Net.
	Lab Lab
	// Member is the command that runs one etcd member
	// (netns.EtcdMemberMain, in the lab build), such as {"/path/to/baton", "drill",
	// "etcd-member"} (Net etcd3 or etcd5); MemberEnv is added to its
	// environment.
	Member    []string
	MemberEnv []string
	// UnsafeNoFence makes the nodes write without the fence, and record
	// those writes as accepted (Net): to show the history checker fails.
	UnsafeNoFence bool
	// ThawAfterRetake is a deterministic fault seam for the negative
	// controls (Procs or Net): a node armed to freeze between its Valid()
	// check and its write (PauseBeforeEffect) stays armed past the end of
	// its fault until it has frozen before a write, stays frozen until
	// another node has written the same period under a newer token, and
	// the run waits for the late write's outcome before it
	// ends. Its write then certainly comes after the takeover's, instead
	// of when the machine's scheduling happens to put it. It is an error
	// if no other node writes that period (within 30 s of the end).
	ThawAfterRetake bool
	// HealAfterTakeover is a deterministic fault seam for the negative
	// controls (Net): the end of a network fault (the skew's isolation, a
	// cut link) waits until a node other than the faulted one has won a
	// newer term, so that the faulted node hears of the takeover only
	// after it happened; the drill's later actions wait as long. It is an
	// error if no node takes over within 30 s.
	HealAfterTakeover bool
}

// Run runs the scenario p once for column col and returns its measures. On
// a virtual clock (the default) the same p and col always give the same
// Result; with cfg.Procs it runs real processes on real time, and the
// measured times vary from run to run while the guarantees do not.
func Run(ctx context.Context, p Params, col Column, cfg Config) (Result, error) {
	r, _, err := run(ctx, p, col, cfg)
	return r, err
}

// run is Run, and returns the column's timeline too (nil with cfg.Procs).
func run(ctx context.Context, p Params, col Column, cfg Config) (Result, []Event, error) {
	if err := p.Validate(); err != nil {
		return Result{}, nil, err
	}
	if isNetFault(p.Fault) && cfg.Net == "" {
		return Result{}, nil, fmt.Errorf("fault %q is a network fault: it needs net mode (--net)", p.Fault)
	}
	if cfg.Procs || cfg.Net != "" {
		if err := procsSupported(); err != nil {
			return Result{}, nil, err
		}
		r, err := runProcs(ctx, p, col, cfg)
		return r, nil, err
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "baton-drill-")
		if err != nil {
			return Result{}, nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	vc := vcluster.Config{
		Nodes: p.Nodes, Lease: time.Duration(p.Lease) * p.Round, Renew: time.Duration(p.Renew) * p.Round,
		Margin: p.Margin, Poll: p.poll(), Latency: p.Latency, Day: p.Round,
		Fence: col != Plain, Persistent: col == FencingTrigger, Idempotent: col == FencingTrigger,
		InvoiceLines: p.InvoiceLines, End: time.Duration(p.Rounds+1) * p.Round,
		Timeline: true,
	}
	var due triggers
	for _, r := range p.Triggers {
		t := time.Duration(r) * p.Round
		vc.Triggers = append(vc.Triggers, t)
		due = append(due, vc.Wall(t))
	}
	slices.SortFunc(due, time.Time.Compare)
	vc.Schedule = due
	vc.Clock = vcluster.NewClock(p.Round)
	storeTime := vc.Clock.Now
	name := fmt.Sprintf("%s-%s", p.Fault, col)
	switch cfg.Store {
	case "", "sqlite":
		path := filepath.Join(dir, name+".baton.db")
		os.Remove(path)
		st, err := sqlite.Open(ctx, path, sqlite.WithTime(storeTime))
		if err != nil {
			return Result{}, nil, err
		}
		defer st.Close()
		vc.Store = st
	case "mem":
		vc.Store = memstore.New(memstore.WithTime(storeTime))
	default:
		return Result{}, nil, fmt.Errorf("drill store %q: want sqlite or mem", cfg.Store)
	}
	res, err := openInvoices(ctx, filepath.Join(dir, name+".invoices.db"))
	if err != nil {
		return Result{}, nil, err
	}
	defer res.Close()
	vc.Resource = vcluster.SQLResource{DB: res}
	vc.Faults = faultEvents(p)
	out, err := vcluster.Run(ctx, vc)
	if err != nil {
		return Result{}, nil, err
	}
	r, err := result(ctx, p, vc, out, res)
	return r, timelineOf(out.Timeline), err
}

// faultEvents turns the drill's fault into begin and end events on node 0.
func faultEvents(p Params) []vcluster.Fault {
	if p.Outage == 0 {
		return nil
	}
	begin, end := time.Duration(p.Start)*p.Round, time.Duration(p.Start+p.Outage)*p.Round
	pair := func(b, e vcluster.FaultKind) []vcluster.Fault {
		return []vcluster.Fault{{At: begin, Kind: b}, {At: end, Kind: e}}
	}
	switch p.Fault {
	case Unreachable:
		return pair(vcluster.Cut, vcluster.Reconnect)
	case Pause:
		return pair(vcluster.Freeze, vcluster.Thaw)
	case PauseBeforeEffect:
		return pair(vcluster.ArmFreeze, vcluster.Disarm)
	case Crash:
		return pair(vcluster.Crash, vcluster.Restart)
	case Drift:
		return []vcluster.Fault{{At: begin, Kind: vcluster.SetRate, Rate: 1 + p.DriftRate}, {At: end, Kind: vcluster.SetRate, Rate: 1}}
	}
	return nil
}

// triggers is the drill's schedule: the batch of round r is due at the
// start of business day r.
type triggers []time.Time

func (t triggers) Next(after time.Time) time.Time {
	for _, x := range t {
		if x.After(after) {
			return x
		}
	}
	return time.Time{}
}

func (t triggers) String() string { return fmt.Sprintf("%d drill batches", len(t)) }

func openInvoices(ctx context.Context, path string) (*sql.DB, error) {
	os.Remove(path)
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := vcluster.CreateResource(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func result(ctx context.Context, p Params, vc vcluster.Config, out vcluster.Outcome, res *sql.DB) (Result, error) {
	var r Result
	keys := make([]string, len(p.Triggers))
	for i, t := range p.Triggers {
		keys[i] = schedule.Key(vc.Wall(time.Duration(t) * p.Round))
		n := out.Landings[keys[i]]
		if n == 0 {
			r.Missed++
			continue
		}
		r.Started++
		r.DoubleStarts += n - 1
		r.DelayedRounds += int((out.FirstLanding[keys[i]] - time.Duration(t)*p.Round) / p.Round)
	}
	r.Rejected = out.Rejected
	r.TwoLeaderRounds, r.LeaderlessRounds = len(out.TwoLeaderDays), len(out.LeaderlessDays)
	r.LeaderlessSeconds, r.TwoLeaderSeconds = out.Leaderless.Seconds(), out.TwoLeaders.Seconds()
	faultStart := time.Duration(p.Start) * p.Round
	if len(out.Elections) > 0 {
		r.Handovers = len(out.Elections) - 1
		for _, el := range out.Elections[1:] {
			if el.At >= faultStart {
				d := el.At - faultStart
				r.HandoverSeconds = d.Seconds()
				r.HandoverRounds = int((d + p.Round - 1) / p.Round)
				break
			}
		}
	}
	var err error
	r.DuplicateLines, r.MissingLines, err = countLines(ctx, res, keys, p.InvoiceLines)
	return r, err
}

// countLines counts the invoice lines written more than once, and those of
// the periods keys that are missing, from the rows.
func countLines(ctx context.Context, res *sql.DB, keys []string, lines int) (duplicate, missing int, err error) {
	var total, distinct int
	if err := res.QueryRowContext(ctx, `SELECT COUNT(*) FROM invoices`).Scan(&total); err != nil {
		return 0, 0, err
	}
	if err := res.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT DISTINCT period, line FROM invoices)`).Scan(&distinct); err != nil {
		return 0, 0, err
	}
	duplicate = total - distinct
	for _, k := range keys {
		var have int
		if err := res.QueryRowContext(ctx, `SELECT COUNT(DISTINCT line) FROM invoices WHERE period = ?`, k).Scan(&have); err != nil {
			return 0, 0, err
		}
		missing += lines - have
	}
	return duplicate, missing, nil
}
