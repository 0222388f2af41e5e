//go:build !nolab

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/lab/drill"
	"github.com/batonhq/baton/store/storeurl"
)

const drillAbout = `Runs the lesson's experiment on baton's real code: the election state
machine and the scheduler's work loop ('baton run' runs the same), a real
store and real fenced writes of invoice lines into SQLite. Time is virtual,
so a run is exact and the same flags always give the same numbers.

With --procs, the same drill runs on real OS processes and real time: every
node is a baton process (a hidden 'baton drill node' subcommand) running
baton.Elector on one SQLite store file and writing fenced invoice lines into
a second SQLite file. Faults are real: SIGSTOP and SIGCONT (pause; the node
stops itself once no store call is in flight, as a frozen SQLite write lock
would stall every node), SIGSTOP right after the Valid() check (pause before
effect), SIGKILL and a new process (crash), a switch that makes its store
calls fail (unreachable), a clock running fast (drift). Progress goes to
stderr: a live line per round on a terminal, plain lines otherwise. Each
column takes (rounds + 1) x round plus the start of the processes; measured
times vary from run to run, the guarantees do not. The nodes are not
'baton run' processes because momentary triggers, the store switch, the
fast clock and the stop between Valid() and the write need hooks inside
the node; they run the same pieces as 'baton run' (baton.Elector and
schedule.Runner, the ledger, fenced writes). With --procs, --round defaults to 200ms and
--clock-margin to 25ms.

With --procs --store URL, the nodes share a networked store instead of the
SQLite file: a PostgreSQL database, an etcd cluster or a Kubernetes
namespace (kube://, in a build that links it: go build -tags kube). The
drill does not empty it: each column runs a job and election of its own,
billing-NUMBER (the JSON's "job"), and leaves its rows there.

The first leader (node-0 on the virtual clock, whichever node won first
with --procs) suffers the fault in the outage rounds; a batch of
invoice lines is due at each trigger round. Each fault runs three times:
  plain            election only: a trigger is a moment, writes are not fenced
  fencing          every write carries the term's token; stale ones are refused
  fencing+trigger  and every batch is a durable period the next leader runs
In parentheses: the lesson's round model for the same parameters.

Faults: unreachable (store calls fail), pause (frozen, then resumes),
pause-before-effect (frozen between Valid() and the write), crash (killed,
restarts as a new incarnation), drift (clock runs fast), all (each in turn).

With --net STORE (the lab build only: go run -tags lab ./cmd/baton; as
root, with nft: apt-get install nftables), the process
drill runs on test hosts: network namespaces on a private bridge
(10.231.0.0/24, which exists only inside them: nothing routes out), one
host per node and the store on hosts of its own: etcd3 or etcd5 (that many
etcd member processes) or postgres (one server). "unreachable" is the
leader's link cut (ip link set down), and seven network faults join:
  partition          the leader's host with a minority of members, the rest apart
  isolate            the leader's host cut off from every store host
  oneway-contenders  the store hosts drop what the other nodes send
  oneway-leader      the store hosts drop what the leader sends
  flap               the leader's link down and up every lease/2
  loss               30% random loss into the store hosts and the leader
  member-kill        an etcd member (or the PostgreSQL server) killed, restarted
Every node records its history (Valid intervals on CLOCK_MONOTONIC, fenced
writes, ledger reads), and an independent checker verifies it: no two Valid
intervals overlap, one holder per token, every due period accepted exactly
once, every refusal stale, the fence linearizable (porcupine). On a
violation the histories and an HTML timeline go to --dir.

With --soak D (and --net), a seeded randomized soak instead: the
fencing+trigger column for D with a batch due every other round and faults
of every class drawn from --seed (--schedules N runs seeds S to S+N-1), one
line per schedule; --fault CLASS draws one class only. The class skew is a
leader whose clock runs 1+--skew-rate times as fast and that then loses the
store: --clock-margin must cover it. --net exits 1 if the checker found a
violation. To see the checker fail: --unsafe-no-fence --fault
pause-before-effect, or --soak 16s --fault skew --skew-rate -0.2
--clock-margin 0.`

// labDrill is what the lab build adds to 'baton drill': net mode, its
// etcd members and its history checker (package netdrill).
type labDrill interface {
	drill.Lab
	// Available says why net mode cannot run here, or returns nil.
	Available() error
	// EtcdMember runs one etcd member (the hidden 'drill etcd-member').
	EtcdMember(ctx context.Context, args []string, stdout io.Writer) error
}

// drillLab is net mode: nil in the operator's binary, set by lab.go in
// the lab build (-tags lab), which links the etcd server, raft and
// porcupine that the operator's binary does not.
var drillLab labDrill

// labBuild is how to run the lab build, for the pointer the operator's
// binary prints.
const labBuild = "go run -tags lab ./cmd/baton"

func runDrill(ctx context.Context, e *env, args []string) int {
	const name = "drill"
	if len(args) > 0 && args[0] == "etcd-member" {
		// One etcd member of 'baton drill --net'; not listed in the help.
		if drillLab == nil {
			return e.fail("drill etcd-member", usagef("an etcd member of the net drill needs the lab build: %s", labBuild))
		}
		if err := drillLab.EtcdMember(ctx, args[1:], e.stdout); err != nil {
			return e.fail("drill etcd-member", err)
		}
		return exitOK
	}
	if len(args) > 0 && args[0] == "node" {
		// One node of 'baton drill --procs'; not listed in the help.
		if err := drill.NodeMain(ctx, args[1:], os.Stdin, e.stdout); err != nil {
			return e.fail("drill node", err)
		}
		return exitOK
	}
	fs := e.newFlagSet(name, name+" [FLAGS]\n\n"+drillAbout)
	p := drill.DefaultParams()
	fs.IntVar(&p.Nodes, "nodes", p.Nodes, "number of nodes, 2 to 100")
	fs.DurationVar(&p.Round, "round", p.Round, "length of one round (virtual time; real time with --procs, default 200ms there)")
	fs.IntVar(&p.Lease, "lease", p.Lease, "lease, in rounds")
	fs.IntVar(&p.Renew, "renew", p.Renew, "renew interval, in rounds (fewer than the lease)")
	fs.IntVar(&p.Outage, "outage", p.Outage, "length of the fault, in rounds")
	fs.IntVar(&p.Start, "start", p.Start, "first round of the fault")
	fs.Var((*intList)(&p.Triggers), "triggers", "comma-separated rounds at which a batch is due")
	fs.IntVar(&p.Rounds, "rounds", p.Rounds, "rounds to run")
	fs.DurationVar(&p.Margin, "clock-margin", p.Margin, "clock uncertainty e: a takeover waits lease + 2e")
	fs.DurationVar(&p.Poll, "poll", p.Poll, "how often contenders and the scheduler look (0: a quarter round)")
	fs.IntVar(&p.InvoiceLines, "invoice-lines", p.InvoiceLines, "invoice lines one batch writes")
	fs.Float64Var(&p.DriftRate, "drift-rate", p.DriftRate, "with --fault drift: the clock runs 1+rate times as fast")
	faultFlag := fs.String("fault", "all", "unreachable, pause, pause-before-effect, crash, drift or all; with --net also partition, isolate, oneway-contenders, oneway-leader, flap, loss, member-kill; with --soak the one class to draw (skew too)")
	storeFlag := fs.String("store", "sqlite", "election store: sqlite (a file in --dir) or mem; with --procs sqlite or a networked store's URL (postgres://, etcd://, kube://), where each column runs a job of its own")
	dir := fs.String("dir", "", "keep the SQLite files (store and invoices) here instead of a temporary directory (created, mode 0700, if missing)")
	asJSON := fs.Bool("json", false, "print JSON: one object, or an array with --fault all")
	procs := fs.Bool("procs", false, "run real OS processes on one SQLite file (or --store URL), on real time (see above)")
	htmlFile := fs.String("html", "", "also write the report as one self-contained HTML page to this file: the tables beside a timeline per column (virtual clock only)")
	netStore := fs.String("net", "", "run the process drill on test hosts in network namespaces (root): etcd3, etcd5 or postgres")
	soak := fs.Duration("soak", 0, "with --net: a seeded randomized soak of this long per schedule instead of the lesson's drill")
	seed := fs.Uint64("seed", 1, "with --soak: the first schedule's seed")
	schedules := fs.Int("schedules", 1, "with --soak: how many seeded schedules (seeds --seed, --seed+1, ...)")
	skew := fs.Float64("skew-rate", -0.03, "with --soak: the skewed host's clock runs 1+rate times as fast")
	unsafeNoFence := fs.Bool("unsafe-no-fence", false, "with --net: write without the fence (to see the history checker fail)")
	if done, code := e.parse(fs, args); done {
		return code
	}
	set := flagsSet(fs)
	var storeURL string // --procs --store URL: an external store
	if *netStore != "" {
		if !slices.Contains(drill.NetStores, *netStore) {
			return e.fail(name, usagef("--net %q: want %s", *netStore, strings.Join(drill.NetStores, ", ")))
		}
		*procs = true
	}
	for _, f := range []string{"soak", "seed", "schedules", "skew-rate", "unsafe-no-fence"} {
		if set[f] && *netStore == "" {
			return e.fail(name, usagef("--%s needs --net", f))
		}
	}
	if set["soak"] && *soak <= 0 {
		return e.fail(name, usagef("--soak %v: want a positive duration such as 2m", *soak))
	}
	if *schedules < 1 || *schedules > 100000 {
		return e.fail(name, usagef("--schedules %d: want 1 to 100000", *schedules))
	}
	if *seed > math.MaxUint64-uint64(*schedules) {
		return e.fail(name, usagef("--seed %d: too large for %d schedules", *seed, *schedules))
	}
	if *procs {
		if !set["round"] {
			p.Round = procsRound
		}
		if !set["clock-margin"] {
			p.Margin = procsMargin
		}
		if set["store"] && *storeFlag != "sqlite" {
			if err := drillStoreURL(*storeFlag, *netStore); err != nil {
				return e.fail(name, err)
			}
			storeURL = *storeFlag
		}
	}
	if err := noArgs(fs); err != nil {
		return e.fail(name, err)
	}
	if *htmlFile != "" && *procs {
		return e.fail(name, usagef("--html draws the virtual-clock drill's timelines; drop --procs"))
	}
	faults := drill.Faults
	if *netStore != "" {
		faults = append(slices.Clone(drill.Faults), drill.NetFaults...)
	}
	var soakFaults []drill.Fault
	if *soak > 0 && *faultFlag != "all" {
		// A soak draws from one class only: any fault, or skew.
		f := drill.Fault(*faultFlag)
		if !slices.Contains(drill.SoakFaults, f) {
			return e.fail(name, usagef("--fault %q with --soak: want all or one of %v", *faultFlag, drill.SoakFaults))
		}
		soakFaults, *faultFlag = []drill.Fault{f}, "all"
	}
	if *faultFlag != "all" {
		f, err := drill.ParseFault(*faultFlag)
		if err != nil {
			return e.fail(name, usagef("--fault: %v", err))
		}
		if slices.Contains(drill.NetFaults, f) && *netStore == "" {
			return e.fail(name, usagef("--fault %s is a network fault: add --net etcd3, etcd5 or postgres (as root)", f))
		}
		faults = []drill.Fault{f}
	}
	if storeURL == "" && *storeFlag != "sqlite" && *storeFlag != "mem" {
		return e.fail(name, usagef("--store %q: want sqlite or mem (a store's URL with --procs)", storeurl.Redact(*storeFlag)))
	}
	p.Fault = faults[0]
	if err := p.Validate(); err != nil {
		return e.fail(name, usagef("%v", err))
	}
	sp := drill.SoakParams{Duration: *soak, Round: p.Round, Lease: p.Lease, Renew: p.Renew,
		Margin: p.Margin, SkewRate: *skew, Faults: soakFaults}
	if *soak > 0 {
		if err := sp.Validate(); err != nil {
			return e.fail(name, usagef("%v", err))
		}
	}
	if *netStore != "" && drillLab == nil {
		// The operator's binary links no etcd server, network namespaces
		// or porcupine: net mode is the lab build's.
		return e.fail(name, usagef("--net %s: needs the lab build: %s drill --net %s", *netStore, labBuild, *netStore))
	}
	if *dir != "" {
		// The files are the drill's evidence: make the directory, private
		// as the store it holds, rather than fail at the first file.
		if err := os.MkdirAll(*dir, 0o700); err != nil {
			return e.fail(name, usagef("--dir: %v; give a directory that exists or that baton can create", err))
		}
	}
	cfg := drill.Config{Store: *storeFlag, Dir: *dir, StoreURL: storeURL}
	if storeURL != "" {
		cfg.Store = ""
	}
	keepDir := false
	if *procs {
		exe, err := os.Executable()
		if err != nil {
			return e.fail(name, fmt.Errorf("finding the baton executable for the node processes: %w", err))
		}
		cfg.Procs, cfg.Node, cfg.Progress, cfg.Live = true, []string{exe, "drill", "node"}, e.stderr, isTerminal(e.stderr)
		if *netStore != "" {
			if err := drillLab.Available(); err != nil {
				return e.fail(name, fmt.Errorf("--net: %v", err))
			}
			cfg.Net, cfg.Lab, cfg.Member, cfg.UnsafeNoFence = *netStore, drillLab, []string{exe, "drill", "etcd-member"}, *unsafeNoFence
		}
	}
	if *netStore != "" && *dir == "" {
		// Keep the histories when the checker finds a violation.
		d, err := os.MkdirTemp("", "baton-drill-net-")
		if err != nil {
			return e.fail(name, err)
		}
		cfg.Dir = d
		defer func() {
			if !keepDir {
				os.RemoveAll(d)
			}
		}()
	}
	if *soak > 0 {
		code := runSoak(ctx, e, cfg, sp, *seed, *schedules, *asJSON)
		keepDir = code == exitFailure
		return code
	}
	var reports []drill.Report
	for i, f := range faults {
		p.Fault = f
		rep, err := drill.RunAll(ctx, p, cfg)
		if err != nil {
			return e.fail(name, err)
		}
		reports = append(reports, rep)
		for _, c := range drill.Columns {
			if h := rep.Columns[c].History; h != nil && !h.OK() {
				keepDir = true
				for _, v := range h.Violations {
					fmt.Fprintf(e.stderr, "baton drill: %s, %s: %s: %s\n", f, c, v.Check, v.Detail)
				}
			}
		}
		if !*asJSON {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			fmt.Fprintf(e.stdout, "%s: what each column lost and doubled\n%s\n", f, rep.Verdicts())
			if i == 0 {
				fmt.Fprintf(e.stdout, "%s\n\n", drill.Legend)
			}
			io.WriteString(e.stdout, rep.Table())
		}
	}
	if keepDir {
		fmt.Fprintf(e.stderr, "baton drill: the history checker found violations; histories and timelines in %s\n", cfg.Dir)
	}
	if *htmlFile != "" {
		if err := writeDrillHTML(*htmlFile, reports); err != nil {
			return e.fail(name, err)
		}
		fmt.Fprintf(e.stderr, "baton drill: wrote %s\n", *htmlFile)
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		var v any = reports
		if len(reports) == 1 {
			v = reports[0]
		}
		if err := enc.Encode(v); err != nil {
			return e.fail(name, err)
		}
	}
	if keepDir {
		return exitFailure // the history checker found a violation
	}
	return exitOK
}

// runSoak runs the seeded soak schedules and prints one line each, or
// JSON; exit 1 if the history checker found a violation in any.
func runSoak(ctx context.Context, e *env, cfg drill.Config, sp drill.SoakParams, seed uint64, n int, asJSON bool) int {
	var results []drill.SoakResult
	bad := 0
	for i := range n {
		sp.Seed = seed + uint64(i)
		r, err := drill.Soak(ctx, sp, cfg)
		if err != nil {
			return e.fail("drill", fmt.Errorf("soak seed %d: %w", sp.Seed, err))
		}
		if h := r.Result.History; h == nil || !h.OK() {
			bad++
			if h != nil {
				for _, v := range h.Violations {
					fmt.Fprintf(e.stderr, "baton drill: seed %d: %s: %s\n", sp.Seed, v.Check, v.Detail)
				}
			}
		}
		results = append(results, r)
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return e.fail("drill", err)
		}
	} else {
		io.WriteString(e.stdout, drill.SoakTable(results))
	}
	if bad > 0 {
		fmt.Fprintf(e.stderr, "baton drill: the history checker found violations in %d of %d schedules; histories and timelines in %s\n", bad, n, cfg.Dir)
		return exitFailure
	}
	return exitOK
}

// drillStoreURL checks --store URL with --procs: a networked store that
// this build links, and no --net (which runs a store of its own).
func drillStoreURL(url, net string) error {
	if net != "" {
		return usagef("--store %s with --net %s: net mode runs its own store; drop --store", storeurl.Redact(url), net)
	}
	if _, ok := storeurl.Lookup(url); !ok {
		// An unknown scheme, or a store this build leaves out: Open
		// says which (and how to build it in) before connecting.
		_, err := storeurl.Open(context.Background(), url)
		if err == nil {
			err = fmt.Errorf("unknown store %s", storeurl.Redact(url))
		}
		return usagef("--store: %v", err)
	}
	if !isNetworked(url) {
		return usagef("--store %s: --procs runs on sqlite (a file in --dir) or on a networked store's URL (postgres://, etcd://, kube://)", storeurl.Redact(url))
	}
	return nil
}

// Defaults of --round and --clock-margin with --procs: real processes on a
// shared machine need rounds long enough for a process to be scheduled, and
// a margin that covers timer slack.
const (
	procsRound  = 200 * time.Millisecond
	procsMargin = 25 * time.Millisecond
)

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// writeDrillHTML writes the drill's HTML report to path.
func writeDrillHTML(path string, reports []drill.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return usagef("--html: %v", err)
	}
	if err := drill.WriteHTML(f, reports); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
