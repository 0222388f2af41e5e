//go:build !nolab

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
)

const benchSynopsis = `bench hold|takeover|balance|idle [FLAGS]

Measures baton holding many names from one process (baton.Group: one
session record renewed for all of them) on a real store:

  hold      one process acquires --names names, holds them for --duration
            and prints the terms lost, the store calls per second, CPU,
            RSS, goroutines and the time to acquire
  takeover  a child process holds --names names; this one contends for
            them, SIGKILLs the child after it renewed twice, and prints
            when it held the first and the last name, after the child's
            last renewal, beside the floor lease + 2 x clock margin
  idle      starts --nodes idle 'baton run --every 1h' processes of one
            job and prints each one's CPU, wake-ups and memory over
            --window

Run 'baton bench hold --help' or 'baton bench takeover --help' for the flags.
Use a store of its own, or a --prefix no other process uses: names left held
by a killed run are free again only lease + 2 x clock margin later.`

// runBench implements 'baton bench'.
func runBench(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "hold":
			return runBenchHold(ctx, e, args[1:])
		case "takeover":
			return runBenchTakeover(ctx, e, args[1:])
		case "balance":
			return runBenchBalance(ctx, e, args[1:])
		case "idle":
			return runBenchIdle(ctx, e, args[1:])
		case benchHolderCmd:
			// The child of 'bench takeover'; not listed in the help.
			return runBenchHolder(ctx, e, args[1:])
		}
	}
	fs := e.newFlagSet("bench", benchSynopsis)
	if done, code := e.parse(fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		return e.fail("bench", usagef("missing the benchmark; want: baton bench hold, baton bench takeover, baton bench balance or baton bench idle"))
	}
	return e.fail("bench", usagef("unknown benchmark %q%s; want hold, takeover, balance or idle", fs.Arg(0), didYouMean(fs.Arg(0), []string{"hold", "takeover", "balance", "idle"})))
}

// benchFlags are the flags 'bench hold' and 'bench takeover' share.
type benchFlags struct {
	storeURL *string
	names    int
	prefix   string
	lease    time.Duration
	renew    time.Duration
	margin   time.Duration
	timeout  time.Duration
	json     bool
	logs     logConfig
}

// defaultBenchPrefix begins the benchmark's names.
const defaultBenchPrefix = "bench-"

func (b *benchFlags) register(fs *flag.FlagSet, defaultNames int) {
	b.storeURL = storeFlag(fs)
	fs.IntVar(&b.names, "names", defaultNames, "number of names to hold, named PREFIX000001, PREFIX000002, ...")
	fs.StringVar(&b.prefix, "prefix", defaultBenchPrefix, "what the names begin with")
	fs.DurationVar(&b.lease, "lease", baton.DefaultLease, "lease of the session that holds the names")
	fs.DurationVar(&b.renew, "renew", 0, "renew interval of the session (default a third of the lease, the library's default)")
	fs.DurationVar(&b.margin, "clock-margin", baton.DefaultMargin, "clock uncertainty e: a takeover waits lease + 2e")
	fs.DurationVar(&b.timeout, "timeout", 10*time.Minute, "give up (exit 1) when acquiring the names takes longer than this")
	fs.BoolVar(&b.json, "json", false, "print one JSON object instead of the table")
	b.logs.flags(fs)
	fs.Lookup("log-level").DefValue = "warn"
	b.logs.level = "warn"
}

// check validates the flags and returns the Group options they make.
func (b *benchFlags) check(fs *flag.FlagSet) ([]baton.Option, error) {
	if err := noArgs(fs); err != nil {
		return nil, err
	}
	if b.names < 1 {
		return nil, usagef("invalid --names %d; want 1 or more", b.names)
	}
	if store.IsSession(b.prefix) {
		return nil, usagef("invalid --prefix %q; names must not begin with %q (session records do)", b.prefix, store.SessionPrefix)
	}
	if err := checkName("--prefix", benchName(b.prefix, b.names)); err != nil {
		return nil, err
	}
	if b.timeout <= 0 {
		return nil, usagef("invalid --timeout %v; want a positive duration", b.timeout)
	}
	if err := b.logs.check(); err != nil {
		return nil, err
	}
	opts := []baton.Option{baton.WithLease(b.lease), baton.WithClockMargin(b.margin)}
	if b.renew != 0 {
		opts = append(opts, baton.WithRenew(b.renew))
	}
	if err := baton.CheckOptions(opts...); err != nil {
		return nil, asUsage(err)
	}
	return opts, nil
}

// runBenchmark parses args with fs, on which b's flags and the
// benchmark's own are registered, checks b and then extra (nil: nothing
// more to check), runs bench with the Group options the flags make, and
// reports its result (see report).
func (e *env) runBenchmark(name string, fs *flag.FlagSet, b *benchFlags, args []string, extra func() error,
	bench func(opts []baton.Option) (rep benchReport, doubleHeld int, err error)) int {
	if done, code := e.parse(fs, args); done {
		return code
	}
	opts, err := b.check(fs)
	if err == nil && extra != nil {
		err = extra()
	}
	if err != nil {
		return e.fail(name, err)
	}
	rep, doubleHeld, err := bench(opts)
	if err != nil {
		return e.fail(name, err)
	}
	return e.report(name, b.json, rep, doubleHeld)
}

// effectiveRenew is the session's renew interval: --renew, or the
// library's default of a third of the lease.
func (b *benchFlags) effectiveRenew() time.Duration {
	if b.renew != 0 {
		return b.renew
	}
	return b.lease / 3
}

// benchName is the i-th name (from 1) of a benchmark.
func benchName(prefix string, i int) string { return fmt.Sprintf("%s%06d", prefix, i) }

// benchNames returns the n names of a benchmark.
func benchNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = benchName(prefix, i+1)
	}
	return names
}

// benchReport is a benchmark's result: printed as its table, or with
// --json as one indented JSON object.
type benchReport interface{ print(w io.Writer) }

// report prints rep and returns the command's exit code: 1 when names were
// held by two valid terms at once (doubleHeld), a safety violation.
func (e *env) report(name string, asJSON bool, rep benchReport, doubleHeld int) int {
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return e.fail(name, err)
		}
	} else {
		rep.print(e.stdout)
	}
	if doubleHeld > 0 {
		return e.fail(name, fmt.Errorf("%d names were held by two valid terms at once: a safety violation; please report it with this output", doubleHeld))
	}
	return exitOK
}

// seconds returns d in seconds, rounded to the millisecond.
func seconds(d time.Duration) float64 { return round3(d.Seconds()) }

// round3 rounds x to three decimals, so that JSON shows no float noise.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// mib formats a byte count in MiB, or "n/a" for 0 (not measured).
func mib(b int64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// table prints rows of label and value, the labels padded to one width.
func table(rows [][2]string) string {
	w := 0
	for _, r := range rows {
		w = max(w, len(r[0]))
	}
	var sb strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&sb, "  %-*s  %s\n", w, r[0], r[1])
	}
	return sb.String()
}

// durSec is a duration given in seconds, to the millisecond, for text.
func durSec(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond)
}
