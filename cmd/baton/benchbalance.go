//go:build !nolab

package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

const benchBalanceSynopsis = `bench balance [--store URL] [--names N] [--processes P] [--lease D] [--json]

P balanced groups (baton.WithBalance), each on its own handle of the store
as P processes would be, hold the same N names:

  start    P-1 groups start together and share the names
  join     the P-th starts: until every group holds N/P rounded down or up
  leave    one of them closes: until the P-1 left hold N/(P-1) each

It prints, for each phase, the seconds until the names were shared and how
many handovers that took (terms ended by a request: a balanced group's or
an operator's), and doubleHeld: the names that two groups held with a valid
term at one moment (each name is sampled every poll interval;
0 is the only right answer). --timeout bounds each phase (exit 1).`

// balanceReport is what 'bench balance' prints.
type balanceReport struct {
	Store          string  `json:"store"`
	Names          int     `json:"names"`
	Processes      int     `json:"processes"`
	LeaseSeconds   float64 `json:"leaseSeconds"`
	RenewSeconds   float64 `json:"renewSeconds"`
	StartSeconds   float64 `json:"startSeconds"`
	JoinSeconds    float64 `json:"joinSeconds"`
	JoinHandovers  uint64  `json:"joinHandovers"`
	LeaveSeconds   float64 `json:"leaveSeconds"`
	LeaveHandovers uint64  `json:"leaveHandovers"`
	HeldAfterJoin  []int   `json:"heldAfterJoin"`
	HeldAfterLeave []int   `json:"heldAfterLeave"`
	DoubleHeld     int     `json:"doubleHeld"`
}

func runBenchBalance(ctx context.Context, e *env, args []string) int {
	const name = "bench balance"
	fs := e.newFlagSet(name, benchBalanceSynopsis)
	var b benchFlags
	b.register(fs, 1000)
	fs.Lookup("timeout").Usage = "give up (exit 1) when a phase takes longer than this"
	procs := fs.Int("processes", 3, "balanced groups, the last of which joins late (at least 2)")
	return e.runBenchmark(name, fs, &b, args, func() error {
		if *procs < 2 {
			return usagef("invalid --processes %d; want 2 or more (one joins the others)", *procs)
		}
		return nil
	}, func(opts []baton.Option) (benchReport, int, error) {
		rep, err := benchBalance(ctx, e, &b, *procs, opts)
		return rep, rep.DoubleHeld, err
	})
}

// benchBalance runs 'bench balance'.
func benchBalance(ctx context.Context, e *env, b *benchFlags, procs int, opts []baton.Option) (balanceReport, error) {
	url, err := resolveStoreURL(*b.storeURL)
	if err != nil {
		return balanceReport{}, err
	}
	var shared store.Store // mem: is one store per handle: every group shares the one
	var handles []store.Store
	groups := make([]*baton.Group, procs)
	defer func() {
		for _, g := range groups {
			if g != nil {
				cctx, cancel := context.WithTimeout(context.Background(), b.lease)
				g.Close(cctx)
				cancel()
			}
		}
		for _, h := range handles {
			h.Close()
		}
	}()
	names := benchNames(b.prefix, b.names)
	// One logger for every group: loggers made apart would each lock
	// their own handler and write to stderr at once.
	logger := b.logs.logger(e.stderr)
	start := func(i int) error {
		st := shared
		if st == nil {
			raw, err := e.openStore(ctx, url)
			if err != nil {
				return err
			}
			handles = append(handles, raw)
			st = raw
			if url == "mem:" {
				shared = raw
			}
		}
		g, err := baton.NewGroup(st, append(opts, baton.WithNode(fmt.Sprintf("bench-%d", i+1)), baton.WithBalance(),
			baton.WithLogger(logger))...)
		if err != nil {
			return asUsage(err)
		}
		groups[i] = g
		return g.Hold(context.Background(), names, nil)
	}
	rep := balanceReport{Store: storeurl.Redact(url), Names: len(names), Processes: procs,
		LeaseSeconds: bound.Seconds(b.lease), RenewSeconds: bound.Seconds(b.effectiveRenew())}
	poll := min(baton.DefaultPoll, b.lease/5)

	// wait samples every name's terms each poll until the live groups
	// share the names; it returns how long that took and the handovers.
	wait := func(phase string, live []*baton.Group) (time.Duration, uint64, []int, error) {
		lost0 := uint64(0)
		for _, g := range groups {
			if g != nil {
				lost0 += g.Stats().Lost
			}
		}
		began := time.Now()
		lo, hi := len(names)/len(live), (len(names)+len(live)-1)/len(live)
		for {
			var sampled []*baton.Group
			for _, g := range groups {
				if g != nil {
					sampled = append(sampled, g)
				}
			}
			for _, name := range names {
				if doubleHeld(name, sampled) {
					rep.DoubleHeld++
				}
			}
			held, total, ok := make([]int, len(live)), 0, true
			for i, g := range live {
				held[i] = g.Stats().Held
				total += held[i]
				ok = ok && held[i] >= lo && held[i] <= hi
			}
			if ok && total == len(names) {
				lost := uint64(0)
				for _, g := range groups {
					if g != nil {
						lost += g.Stats().Lost
					}
				}
				return time.Since(began), lost - lost0, held, nil
			}
			if time.Since(began) > b.timeout {
				return 0, 0, nil, fmt.Errorf("%s: the groups hold %v of %d names after --timeout %v, want each %d to %d", phase, held, len(names), b.timeout, lo, hi)
			}
			select {
			case <-ctx.Done():
				return 0, 0, nil, fmt.Errorf("interrupted in the %s phase (held %v)", phase, held)
			case <-time.After(poll):
			}
		}
	}
	for i := 0; i < procs-1; i++ {
		if err := start(i); err != nil {
			return rep, err
		}
	}
	d, _, _, err := wait("start", groups[:procs-1])
	if err != nil {
		return rep, err
	}
	rep.StartSeconds = seconds(d)
	if err := start(procs - 1); err != nil {
		return rep, err
	}
	if d, rep.JoinHandovers, rep.HeldAfterJoin, err = wait("join", groups); err != nil {
		return rep, err
	}
	rep.JoinSeconds = seconds(d)
	leaver := groups[0]
	if err := leaver.Close(ctx); err != nil {
		return rep, err
	}
	if d, rep.LeaveHandovers, rep.HeldAfterLeave, err = wait("leave", groups[1:]); err != nil {
		return rep, err
	}
	rep.LeaveSeconds = seconds(d)
	return rep, nil
}

func (r balanceReport) print(w io.Writer) {
	fmt.Fprintf(w, "baton bench balance: %d names, %d balanced groups on %s, lease %v, renew %v\n", r.Names, r.Processes, r.Store,
		durSec(r.LeaseSeconds), durSec(r.RenewSeconds))
	io.WriteString(w, table([][2]string{
		{"start", fmt.Sprintf("%.3f s until %d groups shared the names", r.StartSeconds, r.Processes-1)},
		{"join", fmt.Sprintf("%.3f s, %d handovers, held %v", r.JoinSeconds, r.JoinHandovers, r.HeldAfterJoin)},
		{"leave", fmt.Sprintf("%.3f s, %d handovers, held %v", r.LeaveSeconds, r.LeaveHandovers, r.HeldAfterLeave)},
		{"double held", fmt.Sprint(r.DoubleHeld)},
	}))
}

// doubleHeld reports whether two of the groups held name with terms valid
// at one moment. The groups' terms cannot be read at one moment: a whole
// handover (the holder's term ends, the record is released and taken, the
// new term begins) can happen between two reads, and the holder's term
// read valid before it and the new holder's after it are no overlap. So it
// reads the groups in order and then all but the last again: a term valid
// at both of its reads had not ended in between (an ended Term is never
// valid again), so a term of another group read valid between them was
// valid at the same moment.
func doubleHeld(name string, gs []*baton.Group) bool {
	k := len(gs)
	if k < 2 {
		return false
	}
	seen := make([]*baton.Term, 2*k-1)
	for r := range seen {
		if t := gs[r%k].Term(name); t != nil && t.Valid() {
			seen[r] = t
		}
	}
	for i := range k - 1 {
		if seen[i] == nil || seen[i+k] != seen[i] {
			continue
		}
		for p := i + 1; p < i+k; p++ {
			if seen[p] != nil {
				return true
			}
		}
	}
	return false
}
