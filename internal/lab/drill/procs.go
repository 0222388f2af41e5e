package drill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/history"
	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
	"github.com/batonhq/baton/store/storeurl"
)

// startTimeout bounds how long the node processes may take to start and
// elect a first leader.
const startTimeout = 30 * time.Second

// drainRounds bounds, in rounds, how long a drill waits after its last
// round for the ledger's due periods to finish before it counts (the
// fencing+trigger column): a loaded machine may still be running one.
const drainRounds = 20

// runProcs runs the scenario p once for column col with real OS processes
// on real time (Config.Procs).
func runProcs(ctx context.Context, p Params, col Column, cfg Config) (Result, error) {
	return runEpisodes(ctx, p, col, cfg, nil, "")
}

// runEpisodes is runProcs with the faults eps (nil: p.Fault once, from
// round p.Start) and the run named label (empty: after the fault).
func runEpisodes(ctx context.Context, p Params, col Column, cfg Config, eps []Episode, label string) (Result, error) {
	if len(cfg.Node) == 0 {
		return Result{}, errors.New("drill: Config.Node must name the node command in process mode")
	}
	if cfg.Store != "" && cfg.Store != "sqlite" {
		return Result{}, fmt.Errorf("drill store %q: process mode runs on an SQLite file or Config.StoreURL", cfg.Store)
	}
	if cfg.StoreURL != "" && cfg.Net != "" {
		return Result{}, errors.New("drill: Config.StoreURL and Config.Net both name the store: give one")
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
	mode := "procs"
	if cfg.Net != "" {
		mode = "net-" + cfg.Net
	}
	if label == "" {
		label = string(p.Fault)
	}
	name := fmt.Sprintf("%s-%s-%s", mode, label, col)
	d := &procDrill{p: p, col: col, cfg: cfg, dir: dir, name: name, mode: "--procs", episodes: eps, label: label,
		storePath: filepath.Join(dir, name+".baton.db"), resPath: filepath.Join(dir, name+".invoices.db"), job: vcluster.Job}
	for _, f := range []string{d.storePath, d.resPath} {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(f + suffix)
		}
	}
	old, _ := filepath.Glob(filepath.Join(dir, name+".*.history"))
	for _, f := range old {
		os.Remove(f)
	}
	if cfg.Net != "" {
		d.mode = "--net"
		if cfg.Lab == nil {
			return Result{}, errors.New("drill: net mode needs Config.Lab (the lab build: -tags lab)")
		}
		nw, err := cfg.Lab.Start(cfg, p.Nodes, dir, name)
		if err != nil {
			return Result{}, err
		}
		defer nw.Close()
		d.net, d.storePath = nw, nw.URL()
		if d.parent, err = history.Create(filepath.Join(dir, name+".parent.history")); err != nil {
			return Result{}, err
		}
		defer d.parent.Close()
	} else if cfg.StoreURL != "" {
		// An external store, shared with whatever else it holds and not
		// emptied: the column runs a job of its own, which the nodes
		// register (as in net mode) and this process triggers and reads.
		if !isStoreURL(cfg.StoreURL) {
			return Result{}, fmt.Errorf("drill store %s: want a URL of a networked store (%s)", storeurl.Redact(cfg.StoreURL), storeurl.Forms())
		}
		st, err := storeurl.Open(ctx, cfg.StoreURL)
		if err != nil {
			return Result{}, err
		}
		defer st.Close()
		d.st, d.storePath = st, cfg.StoreURL
		d.job = fmt.Sprintf("%s-%d", vcluster.Job, time.Now().UnixNano())
	} else {
		st, err := sqlite.Open(ctx, d.storePath)
		if err != nil {
			return Result{}, err
		}
		defer st.Close()
		d.st = st
		if _, err := st.EnsureJob(ctx, store.Job{Name: vcluster.Job, Schedule: "drill triggers"}); err != nil {
			return Result{}, err
		}
	}
	res, err := openResourceDB(d.resPath)
	if err != nil {
		return Result{}, err
	}
	defer res.Close()
	if err := createResource(ctx, res); err != nil {
		return Result{}, err
	}
	defer d.stopAll()
	if err := d.run(ctx); err != nil {
		return Result{}, err
	}
	pending, err := d.drain(ctx)
	if err != nil {
		return Result{}, err
	}
	if cfg.ThawAfterRetake {
		if err := d.awaitLateWrites(ctx); err != nil {
			return Result{}, err
		}
	}
	d.stopAll()
	d.writeEvents()
	r, err := d.result(ctx, res, pending)
	if err != nil {
		return r, err
	}
	if cfg.StoreURL != "" {
		r.Job = d.job
	}
	if d.net != nil {
		if r.History, err = d.checkHistory(periodKeys(p), pending); err != nil {
			return r, err
		}
	}
	d.progressDone(r)
	return r, nil
}

// procDrill is one column's run in process mode.
type procDrill struct {
	p                  Params
	col                Column
	cfg                Config
	dir, name          string
	storePath, resPath string
	st                 store.Store       // nil in net mode: the parent cannot reach it
	job                string            // the job and election name (Config.StoreURL: the run's own)
	mode               string            // "--procs" or "--net", for progress lines
	label              string            // the fault, or the soak's seed, for progress lines
	net                Network           // net mode (Config.Net)
	parent             *history.Recorder // net mode: what the drill did to nodes (killed)
	ledger             map[string]string // net mode: period -> state, as the nodes read it
	episodes           []Episode         // the soak's faults; nil: p.Fault once

	procs   []*proc
	dead    []*exec.Cmd // killed, to be waited for
	readers sync.WaitGroup
	t0      time.Time // round 0
	began   time.Time

	mu     sync.Mutex
	events []procEvent
	ready  int
	failed error
	target int // the faulted node, -1 before the fault
}

func (d *procDrill) run(ctx context.Context) error {
	d.target = -1
	d.began = time.Now()
	d.progressf("drill %s: %s, %s: starting %d node processes", d.mode, d.label, d.col, d.p.Nodes)
	for i := 0; i < d.p.Nodes; i++ {
		d.procs = append(d.procs, &proc{idx: i, id: fmt.Sprintf("node-%d", i)})
		if err := d.start(d.procs[i]); err != nil {
			return err
		}
	}
	// Round 0 begins once every node runs and one of them leads.
	deadline := time.Now().Add(startTimeout)
	for {
		d.mu.Lock()
		ok, failed := d.ready == d.p.Nodes && d.leaderLocked() >= 0, d.failed
		d.mu.Unlock()
		if failed != nil {
			return failed
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("drill: the node processes did not start and elect a leader within %v%s", startTimeout, d.logTail())
		}
		if !sleepCtx(ctx, 5*time.Millisecond) {
			return ctx.Err()
		}
	}
	d.t0 = time.Now()
	for _, pr := range d.procs {
		d.send(pr, "start %d", d.t0.UnixNano())
	}

	var acts []action
	at := func(r int) time.Duration { return time.Duration(r) * d.p.Round }
	eps := d.episodes
	if eps == nil && d.p.Outage > 0 {
		eps = []Episode{{Fault: d.p.Fault, Start: d.p.Start, Outage: d.p.Outage}}
	}
	for _, ep := range eps {
		if isNetFault(ep.Fault) {
			acts = append(acts, d.netActs(ep.Fault, ep.Start, ep.Outage)...)
			continue
		}
		q := d.p
		q.Fault, q.Start, q.Outage = ep.Fault, ep.Start, ep.Outage
		if ep.Fault == Skew {
			// A slow clock, and the store out of reach from the second
			// round: the takeover comes while the skewed leader's own
			// deadline says it still leads.
			q.Fault = Drift
			acts = append(acts, d.netActs(Isolate, ep.Start+1, ep.Outage-1)...)
		}
		if ep.Rate != 0 {
			q.DriftRate = ep.Rate
		}
		for i, f := range faultEvents(q) { // the in-process drill's fault events
			first := i == 0
			acts = append(acts, action{f.At, true, func() error {
				if first && d.episodes != nil {
					d.mu.Lock()
					d.target = d.leaderLocked() // each of the soak's faults hits the leader of its time
					d.mu.Unlock()
				}
				return d.fault(f)
			}})
		}
	}
	for _, r := range d.p.Triggers {
		acts = append(acts, action{at: at(r), do: func() error { return d.trigger(ctx, r) }})
	}
	for r := 1; r <= d.p.Rounds+1; r++ {
		acts = append(acts, action{at: at(r), do: func() error { d.progressRound(r); return nil }})
	}
	slices.SortStableFunc(acts, func(a, b action) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		if a.fault != b.fault {
			if a.fault {
				return -1 // faults take effect first at their instant
			}
			return 1
		}
		return 0
	})
	for _, a := range acts {
		if !sleepCtx(ctx, time.Until(d.t0.Add(a.at))) {
			return ctx.Err()
		}
		if err := a.do(); err != nil {
			return err
		}
		d.mu.Lock()
		failed := d.failed
		d.mu.Unlock()
		if failed != nil {
			return failed
		}
	}
	return nil
}

// action is something the drill does at an instant after round 0.
type action struct {
	at    time.Duration
	fault bool
	do    func() error
}

// Episode is one fault of a soak (SoakResult), on the node that leads
// when it begins.
type Episode struct {
	Fault  Fault   `json:"fault"`
	Start  int     `json:"start"`          // round
	Outage int     `json:"outage"`         // rounds
	Rate   float64 `json:"rate,omitempty"` // drift: 1+Rate times as fast
}

// leaderLocked returns the node that won the newest term, or -1.
func (d *procDrill) leaderLocked() int {
	node, best := -1, uint64(0)
	for _, e := range d.events {
		if e.verb == "elected" && e.token() > best {
			node, best = e.node, e.token()
		}
	}
	return node
}

// fault applies one of the drill's fault events (the same events the
// in-process drill injects into the virtual cluster) to the node that led
// when the first of them came: in process mode the first leader is
// whichever node won, not always node-0.
func (d *procDrill) fault(f vcluster.Fault) error {
	d.mu.Lock()
	if d.target < 0 {
		d.target = d.leaderLocked()
	}
	d.mu.Unlock()
	pr := d.procs[d.target]
	switch f.Kind {
	case vcluster.Cut:
		if d.net != nil {
			return d.net.LinkDown(pr.idx) // a real link cut
		}
		d.send(pr, "cut")
	case vcluster.Reconnect:
		if d.net != nil {
			return d.net.LinkUp(pr.idx)
		}
		d.send(pr, "reconnect")
	case vcluster.Freeze:
		d.send(pr, "pause") // it stops itself (SIGSTOP) once no store call is in flight
	case vcluster.ArmFreeze:
		d.send(pr, "arm") // it stops itself after its next Valid() check, before its write
	case vcluster.Thaw, vcluster.Disarm:
		if f.Kind == vcluster.Disarm {
			d.mu.Lock()
			// ThawAfterRetake: a node that has not reached a write yet (a
			// loaded machine, a fault of one round) stays armed until it
			// freezes before one, so the late write the seam is for
			// always comes.
			later := d.cfg.ThawAfterRetake && !pr.stopped
			pr.disarmOnFreeze = later
			d.mu.Unlock()
			if later {
				return nil
			}
			d.send(pr, "disarm")
		}
		d.mu.Lock()
		pr.release = true
		d.contIfDue(pr)
		d.mu.Unlock()
	case vcluster.Crash:
		if pr.cmd == nil {
			return nil // killed already
		}
		d.recordKilled(pr)
		pr.cmd.Process.Kill()
		d.mu.Lock()
		d.events = append(d.events, procEvent{node: pr.idx, at: time.Now(), verb: "killed"})
		d.mu.Unlock()
		d.dead = append(d.dead, pr.cmd) // waited for once its report is read
		pr.stdin.Close()
		pr.cmd = nil
	case vcluster.Restart:
		if pr.cmd != nil {
			return nil // running
		}
		if err := d.start(pr); err != nil {
			return err
		}
		d.send(pr, "start %d", d.t0.UnixNano())
	case vcluster.SetRate:
		d.send(pr, "rate %g", f.Rate)
	default:
		return fmt.Errorf("drill: fault %v has no process-mode form", f.Kind)
	}
	return nil
}

// drain waits, at most drainRounds rounds (and at least a few seconds),
// for every period of the drill that the run ledger holds to reach a final
// state, with the nodes still running. It returns the periods still not
// final then, each of which the drill counts as pending at the end, never
// as lost: its durable row stays for the next leader. Only the
// fencing+trigger column keeps its batches in the ledger.
func (d *procDrill) drain(ctx context.Context) (map[string]bool, error) {
	if d.col != FencingTrigger {
		return nil, nil
	}
	bound := max(time.Duration(drainRounds)*d.p.Round, 5*time.Second)
	deadline := time.Now().Add(bound)
	for {
		pending := map[string]bool{}
		if d.net != nil {
			// The parent cannot reach the store: the nodes read the rows.
			keys := periodKeys(d.p)
			for _, pr := range d.procs {
				d.send(pr, "ledger %s", strings.Join(keys, " "))
			}
			if !sleepCtx(ctx, 2*d.p.poll()) {
				return nil, ctx.Err()
			}
			d.mu.Lock()
			for _, k := range keys {
				if st := store.RunState(d.ledger[k]); !st.Final() {
					pending[k] = true
				}
			}
			d.mu.Unlock()
		}
		for _, r := range d.p.Triggers {
			if d.net != nil {
				break
			}
			key := schedule.Key(vcluster.Calendar{Day: d.p.Round}.Wall(time.Duration(r) * d.p.Round))
			run, err := d.st.GetRun(ctx, d.job, key)
			if errors.Is(err, store.ErrNotFound) {
				pending[key] = true // triggered, so it exists; a read race at worst
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("drill: reading period %s from the ledger: %w", key, err)
			}
			if !run.State.Final() {
				pending[key] = true
			}
		}
		if len(pending) == 0 || time.Now().After(deadline) {
			if len(pending) > 0 {
				d.progressf("drill %s: %s, %s: %d period(s) still pending in the ledger after waiting %v", d.mode, d.label, d.col, len(pending), bound)
			}
			return pending, nil
		}
		if !sleepCtx(ctx, d.p.poll()) {
			return nil, ctx.Err()
		}
	}
}

// trigger makes round r's batch due: a durable pending row in the
// fencing+trigger column, a momentary trigger to every node otherwise.
func (d *procDrill) trigger(ctx context.Context, r int) error {
	key := schedule.Key(vcluster.Calendar{Day: d.p.Round}.Wall(time.Duration(r) * d.p.Round))
	if d.col == FencingTrigger && d.net != nil {
		for _, pr := range d.procs {
			d.send(pr, "durable %s", key) // the first node to reach the store writes it
		}
		return nil
	}
	if d.col == FencingTrigger {
		if _, _, err := schedule.Trigger(ctx, d.st, d.job, key); err != nil {
			return fmt.Errorf("drill: trigger %s: %w", key, err)
		}
		for _, pr := range d.procs {
			d.send(pr, "wake")
		}
		return nil
	}
	for _, pr := range d.procs {
		d.send(pr, "trigger %s", key)
	}
	return nil
}

// awaitLateWrites waits (Config.ThawAfterRetake), at most startTimeout,
// until no node is still frozen before its write and every node let go
// has reported its write's outcome, so that the late write is in the
// result whatever the machine's load. It is an error if a node stays
// frozen because no other node wrote its period under a newer token.
func (d *procDrill) awaitLateWrites(ctx context.Context) error {
	deadline := time.Now().Add(startTimeout)
	for {
		var waiting []string
		d.mu.Lock()
		for _, pr := range d.procs {
			switch {
			case pr.cmd == nil:
			case pr.disarmOnFreeze:
				waiting = append(waiting, fmt.Sprintf("%s is armed to freeze before a write and has not reached one", pr.id))
			case pr.frozeOn != "":
				waiting = append(waiting, fmt.Sprintf("%s is frozen before its write of period %s (token %d), and no other node has written that period under a newer token", pr.id, pr.frozeOn, pr.frozeTok))
			case pr.owesWrite:
				waiting = append(waiting, fmt.Sprintf("%s was let go and has not reported its late write", pr.id))
			}
		}
		failed := d.failed
		d.mu.Unlock()
		if failed != nil {
			return failed
		}
		if len(waiting) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("drill: after %v: %s%s", startTimeout, strings.Join(waiting, "; "), d.logTail())
		}
		if !sleepCtx(ctx, 5*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// stopAll kills every node process (stopped ones too) and waits for their
// reports to be read.
func (d *procDrill) stopAll() {
	for _, pr := range d.procs {
		if pr.cmd != nil {
			d.recordKilled(pr)
			resume(pr.cmd.Process)
			pr.cmd.Process.Kill()
			pr.stdin.Close()
			d.dead = append(d.dead, pr.cmd)
			pr.cmd = nil
		}
	}
	d.readers.Wait()
	for _, cmd := range d.dead {
		cmd.Wait()
	}
	d.dead = nil
}

// sleepCtx waits d; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
