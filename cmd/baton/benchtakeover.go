//go:build !nolab

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store/storeurl"
)

const benchTakeoverSynopsis = `bench takeover [--store URL] [--names N] [--lease D] [--succession=false] [--json]

Bulk takeover after a crash, on real processes and real time. A child
process (this baton, re-executed) holds N names through one baton.Group and
reports each renewal of its session; this process then contends for the
same N names with a Group of its own. At the child's second renewal after
that, the child is killed with SIGKILL, and this process takes every name
over. It prints, measured from the child's last renewal (the instant its
last successful session write was sent; both processes read one host's
clock):

  floorSeconds          lease + 2 x clock margin: the earliest a name may
                        be taken over, as the protocol promises
  firstTakeoverSeconds  when this process held its first name
  lastTakeoverSeconds   when it held the last one
  doubleHeld            names whose term here began before the child's last
                        deadline (last renewal + lease): two valid terms of
                        one name at once. Must be 0; if not, exit 1

This process takes the names over as a Group does by default: by
succession on a store that keeps successions (every baton store; see
baton.WithSuccession and docs/succession.md), where the write that ends
the child's session names this process's session as its successor, and
no name is written or read again: each is adopted from the read made while
it waited, once the change feed shows it unchanged up to the succession.
--succession=false takes each name
with a write of its own (baton.WithoutSuccession), to compare.

The child's store URL goes to it on its standard input, never on its
command line. Use a store of its own, or a --prefix no other process uses.`

// benchHolderCmd is the hidden 'bench' subcommand the child of 'bench
// takeover' runs.
const benchHolderCmd = "takeover-holder"

// takeoverReport is what 'bench takeover' prints.
type takeoverReport struct {
	Store                string  `json:"store"`
	Names                int     `json:"names"`
	LeaseSeconds         float64 `json:"leaseSeconds"`
	ClockMarginSeconds   float64 `json:"clockMarginSeconds"`
	HolderAcquireSeconds float64 `json:"holderAcquireSeconds"`
	HolderRenewals       int     `json:"holderRenewals"`
	FloorSeconds         float64 `json:"floorSeconds"`
	FirstTakeoverSeconds float64 `json:"firstTakeoverSeconds"`
	LastTakeoverSeconds  float64 `json:"lastTakeoverSeconds"`
	OverFloorSeconds     float64 `json:"overFloorSeconds"`
	TakenOver            int     `json:"takenOver"`
	DoubleHeld           int     `json:"doubleHeld"`
	Succession           bool    `json:"succession"`
}

func runBenchTakeover(ctx context.Context, e *env, args []string) int {
	const name = "bench takeover"
	fs := e.newFlagSet(name, benchTakeoverSynopsis)
	var b benchFlags
	b.register(fs, 1000)
	succession := fs.Bool("succession", true, "take the names over by succession where the store keeps successions, as a Group does by default; false: a write a name (baton.WithoutSuccession)")
	return e.runBenchmark(name, fs, &b, args, nil, func(opts []baton.Option) (benchReport, int, error) {
		if !*succession {
			opts = append(opts, baton.WithoutSuccession())
		}
		rep, err := benchTakeover(ctx, e, &b, opts)
		return rep, rep.DoubleHeld, err
	})
}

// holderLine is one report line of the child.
type holderLine struct {
	verb string
	at   time.Time
	held int
	msg  string
}

// parseHolderLine parses "held UNIXNANO", "renewed UNIXNANO HELD" or
// "error MESSAGE".
func parseHolderLine(s string) (holderLine, bool) {
	verb, rest, _ := strings.Cut(s, " ")
	l := holderLine{verb: verb}
	if verb == "error" {
		l.msg = rest
		return l, true
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return l, false
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return l, false
	}
	l.at = time.Unix(0, ns)
	if len(f) > 1 {
		l.held, _ = strconv.Atoi(f[1])
	}
	return l, verb == "held" || verb == "renewed"
}

// benchTakeover runs 'bench takeover'.
func benchTakeover(ctx context.Context, e *env, b *benchFlags, opts []baton.Option) (takeoverReport, error) {
	url, err := resolveStoreURL(*b.storeURL)
	if err != nil {
		return takeoverReport{}, err
	}
	if isInProcess(url) {
		return takeoverReport{}, usagef("--store %s is in-process: the holder process would not share it; use a store two processes share (sqlite:PATH, postgres://..., etcd://...)", url)
	}
	// Opened (and an SQLite store created) before the child starts.
	st, err := e.openStore(ctx, url)
	if err != nil {
		return takeoverReport{}, err
	}
	defer st.Close()
	g, err := baton.NewGroup(st, append(opts, baton.WithLogger(b.logs.logger(e.stderr).With("process", "contender")))...)
	if err != nil {
		return takeoverReport{}, asUsage(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), b.lease)
		defer cancel()
		g.Close(cctx)
	}()

	self, err := os.Executable()
	if err != nil {
		return takeoverReport{}, fmt.Errorf("cannot find this program to start the holder: %w", err)
	}
	args := []string{"bench", benchHolderCmd, "--names", strconv.Itoa(b.names), "--prefix", b.prefix,
		"--lease", b.lease.String(), "--clock-margin", b.margin.String(), "--timeout", b.timeout.String(),
		"--log-format", b.logs.format, "--log-level", b.logs.level}
	if b.renew != 0 {
		args = append(args, "--renew", b.renew.String())
	}
	child := exec.Command(self, args...)
	stdin, err := child.StdinPipe()
	if err != nil {
		return takeoverReport{}, err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return takeoverReport{}, err
	}
	// The child's log lines go to our standard error, and the last ones
	// into the error if it fails.
	var stderr tail
	child.Stderr = io.MultiWriter(e.stderr, &stderr)
	if err := child.Start(); err != nil {
		return takeoverReport{}, fmt.Errorf("cannot start the holder: %w", err)
	}
	defer func() {
		child.Process.Kill()
		child.Wait()
	}()
	fmt.Fprintln(stdin, url) // the child's first input line: the store URL
	defer stdin.Close()      // a child that outlives us sees end-of-file and stops
	lines, stop := make(chan string), make(chan struct{})
	defer close(stop)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-stop:
				return
			}
		}
	}()
	childFailed := func() error {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg == "" {
			msg = "no message"
		}
		return fmt.Errorf("the holder process ended before it was killed: %s", msg)
	}

	// This process's terms: when each name was first won.
	names := benchNames(b.prefix, b.names)
	var mu sync.Mutex
	won := make(map[string]time.Time, len(names))
	all := make(chan struct{})
	onTerm := func(t *baton.Term) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if _, ok := won[t.Name()]; ok {
			return
		}
		won[t.Name()] = now
		if len(won) == len(names) {
			close(all)
		}
	}

	began := time.Now()
	timeout := time.NewTimer(b.timeout)
	defer timeout.Stop()
	var heldAt, lastRenewal time.Time
	var contendAt time.Time // when this process began to contend
	contending, killed := false, false
	renewals, since := 0, 0
	for lines != nil {
		select {
		case s, ok := <-lines:
			if !ok {
				if !killed {
					return takeoverReport{}, childFailed()
				}
				lines = nil // every line the child wrote is in
				continue
			}
			l, ok := parseHolderLine(s)
			switch {
			case !ok:
				return takeoverReport{}, fmt.Errorf("the holder process wrote %q; want held, renewed or error lines", s)
			case l.verb == "error":
				return takeoverReport{}, fmt.Errorf("the holder process failed: %s", l.msg)
			case l.verb == "held":
				heldAt = l.at
				// Held until the deferred Close.
				if err := g.Hold(context.Background(), names, onTerm); err != nil {
					return takeoverReport{}, err
				}
				contending, contendAt = true, time.Now()
			case l.verb == "renewed":
				// The first report is the deadline the session had when
				// the child held every name; each later one a renewal.
				if !lastRenewal.IsZero() {
					renewals++
				}
				if l.at.After(lastRenewal) {
					lastRenewal = l.at
				}
				if !contending || killed || !l.at.After(contendAt) {
					continue // not a renewal sent since we contend
				}
				// Killed right after a renewal, so that no renewal it
				// sent goes unreported.
				if since++; since >= 2 && l.held == len(names) {
					if err := child.Process.Kill(); err != nil {
						return takeoverReport{}, fmt.Errorf("cannot kill the holder: %w", err)
					}
					killed = true
					timeout.Reset(b.timeout)
				}
			}
		case <-timeout.C:
			if heldAt.IsZero() {
				return takeoverReport{}, fmt.Errorf("the holder process did not hold %d names within --timeout %v; give it longer, or use fewer names", len(names), b.timeout)
			}
			return takeoverReport{}, fmt.Errorf("the holder process did not renew twice within --timeout %v", b.timeout)
		case <-ctx.Done():
			return takeoverReport{}, errors.New("interrupted")
		}
	}
	select {
	case <-all:
	case <-timeout.C:
		mu.Lock()
		n := len(won)
		mu.Unlock()
		return takeoverReport{}, fmt.Errorf("took over %d of %d names within --timeout %v after the kill", n, len(names), b.timeout)
	case <-ctx.Done():
		return takeoverReport{}, errors.New("interrupted")
	}

	mu.Lock()
	defer mu.Unlock()
	deadline := lastRenewal.Add(b.lease)
	var first, last time.Time
	double := 0
	for _, at := range won {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
		if at.Before(deadline) {
			double++
		}
	}
	floor := b.lease + 2*b.margin
	return takeoverReport{
		Store:                storeurl.Redact(url),
		Names:                len(names),
		LeaseSeconds:         bound.Seconds(b.lease),
		ClockMarginSeconds:   bound.Seconds(b.margin),
		HolderAcquireSeconds: seconds(heldAt.Sub(began)),
		HolderRenewals:       renewals,
		FloorSeconds:         bound.Seconds(floor),
		FirstTakeoverSeconds: seconds(first.Sub(lastRenewal)),
		LastTakeoverSeconds:  seconds(last.Sub(lastRenewal)),
		OverFloorSeconds:     seconds(last.Sub(lastRenewal) - floor),
		TakenOver:            len(won),
		DoubleHeld:           double,
		Succession:           g.Succession(),
	}, nil
}

func (r takeoverReport) print(w io.Writer) {
	how := ", a write a name"
	if r.Succession {
		how = ", by succession"
	}
	fmt.Fprintf(w, "baton bench takeover: %d names on %s, lease %v, clock margin %v%s\n", r.Names, r.Store,
		durSec(r.LeaseSeconds), durSec(r.ClockMarginSeconds), how)
	io.WriteString(w, table([][2]string{
		{"holder acquired", fmt.Sprintf("%.3f s (renewed %d times, then SIGKILL)", r.HolderAcquireSeconds, r.HolderRenewals)},
		{"floor", fmt.Sprintf("%.3f s (lease + 2 x clock margin after the last renewal)", r.FloorSeconds)},
		{"first takeover", fmt.Sprintf("%.3f s after the last renewal", r.FirstTakeoverSeconds)},
		{"last takeover", fmt.Sprintf("%.3f s after the last renewal (floor %+.3f s)", r.LastTakeoverSeconds, r.OverFloorSeconds)},
		{"taken over", fmt.Sprintf("%d of %d", r.TakenOver, r.Names)},
		{"double held", fmt.Sprint(r.DoubleHeld)},
	}))
}

// runBenchHolder is the child of 'bench takeover': it reads the store URL
// from its first input line, holds the names and reports on its standard
// output "held UNIXNANO" when it holds them all, then "renewed UNIXNANO
// HELD" for each renewal of its session (the instant the renewal was sent,
// and how many names it holds), or "error MESSAGE". It stops when its
// input ends (the parent is gone).
func runBenchHolder(ctx context.Context, e *env, args []string) int {
	const name = "bench " + benchHolderCmd
	fs := e.newFlagSet(name, name+" [FLAGS] < STORE-URL")
	var b benchFlags
	b.register(fs, 1000)
	if done, code := e.parse(fs, args); done {
		return code
	}
	report := func(format string, a ...any) { fmt.Fprintf(e.stdout, format+"\n", a...) }
	fail := func(err error) int {
		// Said once, by the parent, which reads this line.
		report("error %s", oneLine(storeurl.Scrub(strings.TrimPrefix(err.Error(), "baton: "), e.secrets...)))
		if u := (*usageError)(nil); errors.As(err, &u) {
			return exitUsage
		}
		return exitFailure
	}
	opts, err := b.check(fs)
	if err != nil {
		return fail(err)
	}
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadString('\n')
	if err != nil {
		return fail(fmt.Errorf("no store URL on standard input: %w", err))
	}
	st, err := e.openStore(ctx, strings.TrimSpace(line))
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	g, err := baton.NewGroup(st, append(opts, baton.WithLogger(b.logs.logger(e.stderr).With("process", "holder")))...)
	if err != nil {
		return fail(err)
	}
	defer g.Close(context.Background())
	gone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, in)
		close(gone)
	}()
	names := benchNames(b.prefix, b.names)
	if err := g.Hold(context.Background(), names, nil); err != nil {
		return fail(err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.NewTimer(b.timeout)
	defer timeout.Stop()
	var last time.Time
	all := false
	for {
		select {
		case <-tick.C:
		case <-timeout.C:
			if !all {
				return fail(fmt.Errorf("held %d of %d names within --timeout %v", g.Stats().Held, len(names), b.timeout))
			}
			continue
		case <-gone:
			return exitOK
		case <-ctx.Done():
			return exitOK
		}
		s := g.Stats()
		if !all && s.Held == len(names) {
			all = true
			report("held %d", time.Now().UnixNano())
		}
		if all && !s.Deadline.IsZero() && !s.Deadline.Equal(last) {
			last = s.Deadline
			report("renewed %d %d", s.Deadline.Add(-b.lease).UnixNano(), s.Held)
		}
	}
}
