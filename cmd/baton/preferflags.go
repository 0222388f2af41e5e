package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/store"
)

// Preferred leaders on the command line (docs/prefer.md): who this node
// says it is (--weight, --candidate-label, --candidate-version), and the
// job's policy (--prefer, --prefer-hysteresis), stored with the job when it
// is first registered and changed by 'baton prefer'.

const preferHelp = `Preferred leaders: --weight N, --candidate-label K=V (repeatable) and
--candidate-version V say who this node is; they are kept with its
candidacy ('baton status' shows them). --prefer POLICY, stored with the
job when it is first registered (a node started later with another
--prefer keeps the stored one; 'baton prefer JOB POLICY' changes it at
run time), says who should lead among the live candidates: none (the
default: the first to win leads until it fails), highest-weight,
oldest-version (no node leads before every node runs its version, as
Kubernetes elects), newest-version or label:K=V. A leader that is not the
best live candidate hands the job over to it with a transfer, only
between runs (never during one, a suspension's --stop or a backfill),
only to a candidate that refreshed its candidacy within the lease, and
only after leading for --prefer-hysteresis (default twice the lease, at
least the lease), so that the lead moves at most once a hysteresis. In a
failover a node that knows a better live candidate defers its takeover,
once, by a poll plus a renew interval, so that the best one takes over
first; if it does not, the policy moves the lead a hysteresis later. With
a policy every node writes its candidacy and reads them once a renew
interval. Needs a schedule (--every or --cron): a singleton's command has
no point between runs.`

// labelList is --candidate-label, repeatable: K=V each.
type labelList []string

func (l *labelList) String() string { return strings.Join(*l, ",") }

func (l *labelList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// preferFlags are the preference flags of 'baton run'.
type preferFlags struct {
	weight     int
	labels     labelList
	version    string
	prefer     string
	hysteresis time.Duration
}

func (p *preferFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&p.weight, "weight", 0, "this node's weight as a candidate, 0 to 1000000, for --prefer highest-weight")
	fs.Var(&p.labels, "candidate-label", "a label of this node as a candidate, `K=V` (repeatable), for --prefer label:K=V")
	fs.StringVar(&p.version, "candidate-version", "", "this node's version as a candidate (1.4.2, v1.10, 1.5.0-rc.1), for --prefer oldest-version or newest-version")
	fs.StringVar(&p.prefer, "prefer", "none", "the job's preference policy when it is first registered: none, highest-weight, oldest-version, newest-version or label:K=V (see Preferred leaders)")
	fs.DurationVar(&p.hysteresis, "prefer-hysteresis", 0, "with --prefer: how long a leader leads before it may hand over to a preferred candidate, at least the lease (default: twice the lease)")
}

// candidacy returns the node's attributes, or a usage error naming the flag.
func (p preferFlags) candidacy() (baton.Candidacy, error) {
	c := baton.Candidacy{Weight: p.weight, Version: p.version}
	for _, l := range p.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return c, usagef("invalid --candidate-label %q; want K=V", l)
		}
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		if _, dup := c.Labels[k]; dup {
			return c, usagef("invalid --candidate-label %q; each key once", l)
		}
		c.Labels[k] = v
	}
	return c, nil
}

// preferOptions returns the Elector options of this node's candidacy and
// of the job's preference policy as stored (prefer, hysteresis; "" is
// none), with the default hysteresis, twice the lease, when none is
// stored.
func preferOptions(c runConfig, prefer string, hysteresis time.Duration) []baton.Option {
	opts := []baton.Option{baton.WithCandidate(c.cand)}
	if prefer == "" || prefer == "none" {
		return opts
	}
	if hysteresis == 0 {
		hysteresis = 2 * c.lease
	}
	return append(opts, baton.WithPreference(prefer, hysteresis))
}

// registerPreferred registers c's job as register does, with the
// preference policy of --prefer when the job is new (an existing job
// keeps its own: 'baton prefer' changes it).
func registerPreferred(ctx context.Context, st store.Store, c runConfig) error {
	if c.prefer != "" {
		p, err := election.ParsePolicy(c.prefer)
		if err != nil {
			return usagef("%v", err)
		}
		if _, err := st.EnsureJob(ctx, store.Job{Name: c.job.Name, Schedule: c.job.Spec(), Prefer: p.String(), PreferHysteresis: c.preferHysteresis}); err != nil {
			return err
		}
	}
	return register(ctx, st, c.job, c.reschedule)
}

// applyPreference hands the job's stored preference policy to el when it
// differs from el's: at start, and whenever the job is read again
// (watchSchedule). A stored hysteresis of 0 is twice the lease. A policy
// this node cannot take (a hysteresis below its lease, a policy it does
// not know) is logged and returned; el keeps its policy.
func applyPreference(el *baton.Elector, c runConfig, j store.Job, logger *slog.Logger) error {
	p, h := j.Prefer, j.PreferHysteresis
	if p == "" {
		p = "none"
	}
	if h == 0 {
		h = 2 * c.lease
	}
	cur, curH := el.Preference()
	if cur == p && (p == "none" || curH == h) {
		return nil
	}
	if err := el.SetPreference(p, h); err != nil {
		err = fmt.Errorf("the job's stored preference %s: %w; change it with 'baton prefer %s POLICY --prefer-hysteresis D'",
			escape.String(store.PreferText(j.Prefer, j.PreferHysteresis)), err, c.job.Name)
		logger.Error("preference policy refused; keeping this node's", "prefer", cur, "err", err)
		return err
	}
	if c.prefer != "" && c.prefer != p && cur == "none" {
		logger.Warn("the job is stored with another preference policy than --prefer; the stored one is used ('baton prefer' changes it)", "stored", p, "flag", c.prefer)
	}
	logger.Info("preference policy", "prefer", p, "hysteresis", h)
	return nil
}
