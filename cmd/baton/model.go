package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/batonhq/baton/internal/lab/model"
)

// modelSubcommands are the subcommands of "baton model", in help order.
func modelSubcommands() []command {
	return []command{
		{"run", "run the round model once and print its measures", modelRun},
		{"measure", "print the lesson's measure block: three runs and a lease scan", modelMeasure},
		{"cost", "print the lesson's cost block: measures turned into invoice lines a year", modelCost},
		{"scan", "run the model for every lease and outage given", modelScan},
	}
}

func runModel(ctx context.Context, e *env, args []string) int {
	return dispatch(ctx, e, "model", "the lesson's round model of lease-based election. Rounds are abstract steps.", modelSubcommands(), args)
}

// dispatch runs the subcommand of parent named by args[0].
func dispatch(ctx context.Context, e *env, parent, about string, subs []command, args []string) int {
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: baton %s SUBCOMMAND [FLAGS]\n\n%s\n\nSubcommands:\n", parent, about)
		for _, c := range subs {
			fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
		}
		fmt.Fprintf(w, "\nRun 'baton %s SUBCOMMAND --help' for its flags.\n", parent)
	}
	if len(args) == 0 {
		return e.fail(parent, usagef("missing subcommand; want one of %s", names(subs)))
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(e.stdout)
		return exitOK
	}
	for _, c := range subs {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	var all []string
	for _, c := range subs {
		all = append(all, c.name)
	}
	return e.fail(parent, usagef("unknown subcommand %q%s; want one of %s", args[0], didYouMean(args[0], all), names(subs)))
}

func names(cs []command) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += ", "
		}
		s += c.name
	}
	return s
}

// paramFlags registers the model's parameters on fs, with the lesson's
// values as defaults. With scan set, lease and outage are left out: a scan
// sets them itself.
func paramFlags(fs *flag.FlagSet, p *model.Params, scan bool) {
	*p = model.DefaultParams()
	fs.IntVar(&p.Nodes, "nodes", p.Nodes, "cluster size, 2 or more")
	if !scan {
		fs.IntVar(&p.Lease, "lease", p.Lease, "rounds without renewal before another node takes over, 1 or more")
		fs.IntVar(&p.Outage, "outage", p.Outage, "rounds the first leader is unreachable, 0 or more")
	}
	fs.IntVar(&p.Renewal, "renewal", p.Renewal, "period in rounds at which a leader re-reads the record, 1 or more")
	fs.IntVar(&p.Start, "start", p.Start, "first round the first leader is unreachable, 1 or more")
	fs.Var((*intList)(&p.Triggers), "triggers", "comma-separated rounds at which the batch must start, each 1 or more")
	fs.IntVar(&p.Rounds, "rounds", p.Rounds, "rounds to play, 1 or more")
}

func modelRun(_ context.Context, e *env, args []string) int {
	const name = "model run"
	fs := e.newFlagSet(name, name+" [FLAGS]\n\nRuns the lesson's round model once and prints its measures.\nThe defaults are the lesson's setting.")
	var p model.Params
	paramFlags(fs, &p, false)
	protectionFlags(fs, &p)
	asJSON := fs.Bool("json", false, "print one JSON object with the lesson's measure names")
	if done, code := e.parseNoArgs(name, fs, args); done {
		return code
	}
	if err := p.Validate(); err != nil {
		return e.fail(name, asUsage(err))
	}
	r := model.Run(p)
	if *asJSON {
		b, err := json.Marshal(r)
		if err != nil {
			return e.fail(name, err)
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
		return exitOK
	}
	onOff := map[bool]string{false: "off", true: "on"}
	fmt.Fprintf(e.stdout, "%d nodes, %d rounds, lease %d, renewal %d, outage %d from round %d, triggers %s, fencing %s, persistent trigger %s\n\n",
		p.Nodes, p.Rounds, p.Lease, p.Renewal, p.Outage, p.Start, triggersText(p.Triggers), onOff[p.Fencing], onOff[p.PersistentTrigger])
	for _, m := range r.Measures() {
		fmt.Fprintf(e.stdout, "%-24s%6d\n", m.Label, m.Value)
	}
	return exitOK
}

func triggersText(ts []int) string {
	if len(ts) == 0 {
		return "none"
	}
	return (*intList)(&ts).String()
}

// protectionFlags registers the two protections of the lesson's model
// on fs: --fencing and --persistent-trigger.
func protectionFlags(fs *flag.FlagSet, p *model.Params) {
	fs.BoolVar(&p.Fencing, "fencing", false, "reject the work of a node whose token is stale")
	fs.BoolVar(&p.PersistentTrigger, "persistent-trigger", false, "keep a trigger that finds no leader until one appears")
}

// modelBlock runs 'model measure' or 'model cost' (name): the lesson's
// parameters as flags, the block's own flags (registered by more), and
// the block (made by block) printed. about is the synopsis's text.
func (e *env) modelBlock(name, about string, args []string, more func(*flag.FlagSet), block func(model.Params) (string, error)) int {
	fs := e.newFlagSet(name, name+" [FLAGS]\n\n"+about+"\nWith the defaults the output is the lesson's, byte for byte.")
	var p model.Params
	paramFlags(fs, &p, false)
	more(fs)
	if done, code := e.parseNoArgs(name, fs, args); done {
		return code
	}
	out, err := block(p)
	if err != nil {
		return e.fail(name, asUsage(err))
	}
	io.WriteString(e.stdout, out)
	return exitOK
}

func modelMeasure(_ context.Context, e *env, args []string) int {
	leases, outages := intList{2, 3, 5, 8}, intList{5, 2}
	return e.modelBlock("model measure", "Prints the lesson's first block: the measures of a plain run, a run with fencing and\na run with fencing and a persistent trigger, then a lease scan without either.", args,
		func(fs *flag.FlagSet) {
			fs.Var(&leases, "leases", "comma-separated leases of the scan, each 1 or more")
			fs.Var(&outages, "outages", "comma-separated outages of the scan, each 0 or more")
		},
		func(p model.Params) (string, error) { return model.MeasureBlock(p, leases, outages) })
}

func modelCost(_ context.Context, e *env, args []string) int {
	o := model.DefaultCostOptions()
	return e.modelBlock("model cost", "Prints the lesson's second block: the plain run's leaderless and two-leader shares\nturned into missed and double batches and invoice lines a year.", args,
		func(fs *flag.FlagSet) {
			fs.IntVar(&o.InvoiceLines, "invoice-lines", o.InvoiceLines, "invoice lines one batch writes, 0 or more")
			fs.Var((*intList)(&o.HandoversPerYear), "handovers", "comma-separated handovers per year, one row each, each 0 or more")
			fs.IntVar(&o.LongLease, "long-lease", o.LongLease, "lease of the last line's run, 1 or more")
		},
		func(p model.Params) (string, error) { return model.CostBlock(p, o) })
}

func modelScan(_ context.Context, e *env, args []string) int {
	const name = "model scan"
	fs := e.newFlagSet(name, name+" [FLAGS]\n\nRuns the model for every lease and outage given and prints the lesson's\nlease scan columns, or with --csv every measure, one row per run.")
	var p model.Params
	paramFlags(fs, &p, true)
	protectionFlags(fs, &p)
	leases, outages := intList{2, 3, 5, 8}, intList{5, 2}
	fs.Var(&leases, "leases", "comma-separated leases, each 1 or more")
	fs.Var(&outages, "outages", "comma-separated outages, each 0 or more")
	asCSV := fs.Bool("csv", false, "print CSV with a header row and every measure")
	svgFile := fs.String("svg", "", "also plot the scan to this SVG file: a panel per measure, the lease on the x axis, a line per outage")
	if done, code := e.parseNoArgs(name, fs, args); done {
		return code
	}
	points, err := model.Scan(p, leases, outages)
	if err != nil {
		return e.fail(name, asUsage(err))
	}
	if *svgFile != "" {
		if err := writeScanSVG(*svgFile, p, points, leases, outages); err != nil {
			return e.fail(name, err)
		}
	}
	if !*asCSV {
		io.WriteString(e.stdout, model.ScanTable(points, leases, outages))
		return exitOK
	}
	w := csv.NewWriter(e.stdout)
	w.Write([]string{"lease", "outage", "started", "missed", "doubleStarts", "rejected", "delayedRounds",
		"twoLeaderRounds", "leaderlessRounds", "handoverRounds", "handovers"})
	for _, pt := range points {
		r := pt.Result
		row := []int{pt.Lease, pt.Outage, r.Started, r.Missed, r.DoubleStarts, r.Rejected, r.DelayedRounds,
			r.TwoLeaderRounds, r.LeaderlessRounds, r.HandoverRounds, r.Handovers}
		rec := make([]string, len(row))
		for i, v := range row {
			rec[i] = strconv.Itoa(v)
		}
		w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return e.fail(name, err)
	}
	return exitOK
}
