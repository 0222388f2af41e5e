//go:build !nolab

package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/batonhq/baton/internal/lab/explore"
)

const exploreAbout = `Explores every interleaving of events of a small configuration, breadth
first, on the same election and scheduler machines that ship
(internal/election, internal/scheduler), the store's own compare-and-swap
rules and the fence's: nodes step, store requests are applied, fail, or
have their answers delivered late or lost, in every order; nodes pause,
crash and restart within the configuration's fault budget; a leader's
fenced writes begin and land in every order; in the sched-*
configurations every leader runs the job's work loop, whose runs end at
any instant (and fail, in sched-2x1-retry), an operator may suspend
the job (sched-2x1-suspend) and resume it (sched-2x1-live), a node's
wall clock may step off the store's under the job's clock guard
(sched-2x1-clock), and a run's
supervisor may record it late, within a newer term's takeover grace
(sched-2x1-supervisor-late); in group-2x1
every node is an election.Group holding its name through its own
session record, on memstore (group-2x1-succession: with succession;
group-2x2-succession: two nodes and two names, both passed on by the
one write that ends a planted dead process's session; group-2x1-forge:
with the store's change feed, its notifications delivered late, and a
client forging notifications of a session record; the other group-*
configurations start from a dead process's session planted in the
store, with a collector's settling, the dead process's release, or an
operator's transfer request at any instant);
and time moves only to the instants where a
decision can change (just before and at every node's timer, just before,
at and just after every term's deadline, on each node's own clock). After
every event it checks that no two valid terms of the name overlap in true
time, that every term is won with a token above every earlier one, that
the fence accepts no write with a token below one that landed before,
that no write begins outside its term, that the store refuses no swap as
invalid, and that no swap writes over a record planted with a lease no
valid configuration writes (2x1-hostile); with the change feed, that a
Group answered a session record it has seen unchanged for its lease plus
2e ends that session rather than reading it again;
in the planted group-*
configurations, that no node keeps a name it does not campaign for with
nothing under way to let it go, and that none loses a name as deposed
while the store holds it for that very term; and, with the simulator's own
checks, every ledger write that commits: its token the election's, the
job's catch-up cap, window, jitter, overlap, retries and suspension, no
damaged row written, no run given back after its machine heard it
finished, no run past its timeout, no claim or skip after a clock check
that found the wall clock off, no claim or skip over the row of a run
that ended inside its term, and no leader held off by its clock guard
past the step-down. In 2x1-live it also checks liveness, once the
exploration completed: from every state before the horizon less the
longest takeover, some continuation without a fault reaches a leader.
In sched-2x1-live, explored to completion, every state at the horizon
must have finished (done, failed or skipped) every period due early
enough to be led again and caught up after the last fault, unless the
job is still suspended.

It prints, per configuration, the distinct states reached, the events
executed, the depth and the states per second, and says whether the
exploration completed or stopped at a depth bound. On a violation it
prints a shortest path to it as a scenario script (go test
./internal/lab/explore replays such a script) and exits 1.

--mutate NAME turns a protection off as baton sim --mutate does, in the
configurations it fits (wrap-deadline needs 2x1-hostile's planted record,
the election's others a term to be won, the scheduler's a sched-*
configuration whose job has what they break, the session ones a
group-* configuration with what they break); --list names the
mutations the explorer runs, and it names why for each of the
simulator's other mutations. See docs/explore.md.`

func runExplore(ctx context.Context, e *env, args []string) int {
	const name = "explore"
	fs := e.newFlagSet(name, name+" [FLAGS]\n\n"+exploreAbout)
	list := fs.Bool("list", false, "list the configurations and the mutations, and exit")
	config := fs.String("config", "", "explore this configuration only (see --list); default: every one")
	mutate := fs.String("mutate", "", "turn a protection off (one of "+strings.Join(explore.Mutations(), ", ")+"): the explorer must find the breach")
	depth := fs.Int("depth", 0, "stop every path at this many events (0: the configuration's own bound, if any); the output says when a state was cut there; a configuration that checks liveness (2x1-live) is not explored with it")
	if done, code := e.parseNoArgs(name, fs, args); done {
		return code
	}
	if *list {
		width := 0
		for _, n := range explore.Configs() {
			width = max(width, len(n))
		}
		for _, n := range explore.Configs() {
			c, _ := explore.Lookup(n)
			fmt.Fprintf(e.stdout, "%-*s %s\n", width, n, c.About)
		}
		fmt.Fprintf(e.stdout, "mutations: %s\n", strings.Join(explore.Mutations(), ", "))
		if ne := explore.NotExpressibleMutations(); len(ne) > 0 {
			fmt.Fprintf(e.stdout, "not expressible yet (baton sim's others): %s\n", strings.Join(ne, ", "))
		}
		return exitOK
	}
	if *depth < 0 {
		return e.fail(name, usagef("--depth must be 0 or more, got %d", *depth))
	}
	names := explore.Configs()
	if *config != "" {
		if !slices.Contains(names, *config) {
			return e.fail(name, usagef("--config %q: want one of %s (see --list)", *config, strings.Join(names, ", ")))
		}
		names = []string{*config}
	}
	if *mutate != "" && !slices.Contains(explore.Mutations(), *mutate) {
		if why := explore.NotExpressible(*mutate); why != "" {
			return e.fail(name, usagef("--mutate %s: not expressible in the explorer yet: %s (it runs %s; baton sim --mutate %s runs it)",
				*mutate, why, strings.Join(explore.Mutations(), ", "), *mutate))
		}
		return e.fail(name, usagef("--mutate %q: no such mutation: want one of %s (see --list)", *mutate, strings.Join(explore.Mutations(), ", ")))
	}
	if *mutate != "" {
		if *config != "" {
			c, _ := explore.Lookup(*config)
			if _, err := c.Mutated(*mutate); err != nil {
				return e.fail(name, usagef("--config %s --mutate %s: %v", *config, *mutate, err))
			}
		}
		names = slices.DeleteFunc(names, func(n string) bool { c, _ := explore.Lookup(n); return !c.Fits(*mutate) })
	}
	exploreGC(os.Getenv)
	for _, n := range names {
		c, _ := explore.Lookup(n)
		if *mutate != "" {
			c, _ = c.Mutated(*mutate)
		}
		if *depth > 0 {
			if c.ChecksLiveness() {
				// Its liveness check needs the whole graph: a cut one
				// would leave states near the cut without their future
				// (and paths short of the horizon unchecked).
				if *config != "" {
					return e.fail(name, usagef("--depth %d: %s checks liveness, which needs its whole graph: leave out --depth", *depth, n))
				}
				fmt.Fprintf(e.stdout, "%s: not explored: its liveness check needs its whole graph, and --depth cuts it\n", n)
				continue
			}
			c.MaxDepth = *depth
		}
		r, err := explore.Explore(ctx, c)
		if err != nil {
			return e.fail(name, err)
		}
		fmt.Fprintln(e.stdout, r)
		if r.Violation != nil {
			script, err := explore.Script(c, r.Path, r.Violation)
			if err != nil {
				return e.fail(name, err)
			}
			fmt.Fprint(e.stdout, script)
			return exitFailure
		}
	}
	return exitOK
}

// exploreGC collects the explorer's garbage less often than the runtime's
// default, unless $GOGC or $GOMEMLIMIT says otherwise: an exploration's
// live heap is its visited set and its frontier, which every collection
// scans again, while what it throws away (the states cloned and found
// visited) is most of what it allocates. Collecting when the heap grew
// four-fold rather than two-fold, and at the latest at 4 GiB, cut the CPU
// of group-2x1 and 2x1 (BENCHMARKS.md); the process's peak memory grows
// with it, bounded by that limit while the live heap stays under it.
func exploreGC(getenv func(string) string) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(4 << 30)
}
