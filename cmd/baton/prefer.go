package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/store"
)

const preferAbout = `prefer [--store URL] [--prefer-hysteresis D] [--json] JOB POLICY

Changes the preference policy of the scheduled job JOB at run time: who
should lead among its live candidates (see 'baton run', Preferred leaders).
POLICY is none, highest-weight, oldest-version, newest-version or
label:K=V. The policy is stored with the job and the change recorded in the
job's election log (prefer-changed, FROM -> TO) in the same write; the
leader keeps its term. Every node reads the job again within a lease and
takes the new policy; the hysteresis counts afresh from it, so the lead
moves, at a safe point, a hysteresis after the change at the earliest.
--prefer-hysteresis changes the hysteresis too (default: keep the stored
one; none stored is twice each node's lease); a node whose lease is longer
than it keeps its own policy and logs why. An unknown job exits 1. Flags
may also follow JOB.`

func runPrefer(ctx context.Context, e *env, args []string) int {
	const cmd = "prefer"
	fs := e.newFlagSet(cmd, preferAbout)
	storeURL := storeFlag(fs)
	hyst := fs.Duration("prefer-hysteresis", 0, "also set the hysteresis: how long a leader leads before it may hand over, at least the nodes' lease (default: keep the stored one)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	if len(pos) != 2 {
		return e.fail(cmd, usagef("want JOB POLICY; got %d arguments", len(pos)))
	}
	name := pos[0]
	if err := checkName("JOB", name); err != nil {
		return e.fail(cmd, err)
	}
	p, err := election.ParsePolicy(pos[1])
	if be := (*bound.Error)(nil); errors.As(err, &be) {
		// POLICY is an argument here, not run's --prefer.
		return e.fail(cmd, usagef("invalid POLICY %s; want %s", be.Got, be.Want))
	} else if err != nil {
		return e.fail(cmd, asUsage(err))
	}
	if set := flagsSet(fs)["prefer-hysteresis"]; set && (*hyst < election.MinLease || *hyst > election.MaxHysteresis) {
		return e.fail(cmd, usagef("invalid --prefer-hysteresis %v; want between %v and %v, and at least the nodes' lease", *hyst, election.MinLease, election.MaxHysteresis))
	}
	st, err := e.openExisting(ctx, *storeURL)
	if err != nil {
		return e.fail(cmd, err)
	}
	defer st.Close()
	if err := inspect.Known(ctx, st, name); err != nil {
		return e.fail(cmd, readErr(*storeURL, err))
	}
	cur, err := st.GetJob(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return e.fail(cmd, fmt.Errorf("%s is not a scheduled job (it has no schedule in the store; 'baton run --every/--cron' registers one)", name))
	} else if err != nil {
		return e.fail(cmd, readErr(*storeURL, err))
	}
	h := cur.PreferHysteresis
	if flagsSet(fs)["prefer-hysteresis"] {
		h = *hyst
	}
	j, err := st.PreferJob(ctx, store.JobPrefer{Name: name, Prefer: p.String(), Hysteresis: h})
	if err != nil {
		return e.fail(cmd, readErr(*storeURL, err))
	}
	from, to := store.PreferText(cur.Prefer, cur.PreferHysteresis), store.PreferText(j.Prefer, j.PreferHysteresis)
	if *asJSON {
		v := struct {
			Job        string  `json:"job"`
			Prefer     string  `json:"prefer"`
			Hysteresis float64 `json:"hysteresis_seconds"`
			From       string  `json:"from"`
		}{name, j.Prefer, j.PreferHysteresis.Seconds(), from}
		if err := printJSON(e.stdout, v); err != nil {
			return e.fail(cmd, err)
		}
		return exitOK
	}
	fmt.Fprintf(e.stdout, "%s: preference %s -> %s; every node takes it within a lease\n", name, from, to)
	return exitOK
}
