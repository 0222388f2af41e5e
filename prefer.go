package baton

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/store"
)

// Preferred leaders (docs/prefer.md). The rule lives in the election
// machine (internal/election/prefer.go); this file is its runtime in an
// Elector: the candidacy row refreshed every renew interval while a
// policy is set, also while leading; the leader's reads of the
// candidacies, fed to its machine; and the safe points its work reports
// (Term.SafePoint). Without a policy none of it makes a store call.

// MaxWeight is the largest candidate weight (WithCandidate) and the
// largest share of a balanced Group (WithShare).
const MaxWeight = election.MaxWeight

// MaxLabels is the most labels a candidate has (WithCandidate).
const MaxLabels = election.MaxLabels

// ErrHandedOver is a Term's cause when its leader handed the name over to
// the candidate its preference policy prefers (WithPreference), at a safe
// point of its work.
var ErrHandedOver = election.ErrHandedOver

// Candidacy is who a node says it is: what a preference policy judges
// (WithPreference), kept with its candidacy in the store for every node
// to read ("baton status" shows it).
type Candidacy struct {
	// Version is the node's version, such as 1.4.2, v1.10 or 1.5.0-rc.1
	// (compared as semver: 1.10 > 1.9, 1.4 == 1.4.0, a pre-release below
	// its release); empty: none, below every version.
	Version string
	// Weight is 0 (the default) to MaxWeight.
	Weight int
	// Labels, such as zone: eu-1, at most MaxLabels; keys and values of
	// 1 to 63 letters, digits, '-', '_', '.', '/'; the keys version and
	// weight are taken.
	Labels map[string]string
}

// attrs returns c as the election machine judges it.
func (c Candidacy) attrs() election.Attrs {
	a := election.Attrs{Version: c.Version, Weight: c.Weight}
	for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
		a.Labels = append(a.Labels, election.Label{Key: k, Value: c.Labels[k]})
	}
	return a
}

// WithCandidate sets who this node says it is (see Candidacy): its
// version, weight and labels, kept with its candidacy row, which the
// leader of a name with a preference policy reads. Checked by New
// (an *OptionError naming candidate-version, weight or candidate-label).
// Without a policy the row is written as often as without attributes.
func WithCandidate(c Candidacy) Option {
	return func(cfg *config) error { cfg.self = c.attrs(); return nil }
}

// WithPreference sets the name's preference policy: which live candidate
// should lead. policy is none (the default: the first to win leads until
// it fails), highest-weight, oldest-version (no node leads before every
// node understands it, as Kubernetes elects), newest-version, or
// label:K=V. A leader that is not the best live candidate hands the name
// over to it with a transfer (its term ends with ErrHandedOver) only at a
// safe point of its work (Term.SafePoint: a schedule.Runner reports its
// own), only to a candidate that refreshed its candidacy within a lease,
// and only after it led for hysteresis, at least the lease, so that the
// lead moves at most once a hysteresis. With a policy every node refreshes
// its candidacy row every renew interval, also while it leads, and the
// leader reads the rows as often: a write and a read per node per renew
// interval. New only: NewGroup refuses it. See docs/prefer.md.
func WithPreference(policy string, hysteresis time.Duration) Option {
	return func(c *config) error {
		p, err := election.ParsePolicy(policy)
		if err != nil {
			return fmt.Errorf("baton: %w", err)
		}
		c.prefer, c.hysteresis, c.preferSet = p, hysteresis, true
		return nil
	}
}

// preference is an Elector's policy as it stands: set by WithPreference,
// changed by SetPreference.
type preference struct {
	policy     election.Policy
	hysteresis time.Duration
}

// on reports whether p prefers anyone (nil: no policy).
func (p *preference) on() bool { return p != nil && p.policy.Kind != election.PreferNone }

// SetPreference changes the name's preference policy at run time (see
// WithPreference; hysteresis 0 keeps the current one): an operator's
// "baton prefer", read from the job. The machine counts the hysteresis
// afresh from a new policy. It fails, changing nothing, with an
// *OptionError for a policy or a hysteresis WithPreference would refuse.
func (e *Elector) SetPreference(policy string, hysteresis time.Duration) error {
	p, err := election.ParsePolicy(policy)
	if err != nil {
		return fmt.Errorf("baton: %w", err)
	}
	cur := e.pref.Load()
	h := hysteresis
	if h == 0 && cur != nil {
		h = cur.hysteresis
	}
	mc := e.cfg.machine()
	mc.Prefer, mc.Hysteresis = p, h
	if err := mc.Validate(); err != nil {
		return fmt.Errorf("baton: %w", err)
	}
	e.pref.Store(&preference{policy: p, hysteresis: h})
	e.post(election.SetPolicy{Name: e.name, Policy: p, Hysteresis: h})
	return nil
}

// Preference returns the name's preference policy as this Elector holds it
// now, as WithPreference reads it, and its hysteresis.
func (e *Elector) Preference() (policy string, hysteresis time.Duration) {
	p := e.pref.Load()
	if p == nil {
		return election.Policy{}.String(), 0
	}
	return p.policy.String(), p.hysteresis
}

// candidacyEvery is how often this node refreshes its candidacy row: every
// renew interval with a policy, every CandidateEvery polls without.
func (e *Elector) candidacyEvery() time.Duration {
	if e.pref.Load().on() {
		return e.cfg.renew
	}
	return CandidateEvery * e.cfg.poll
}

// row is this node's candidacy row, refreshed every every.
func (e *Elector) row(every time.Duration) store.Candidate {
	return store.Candidate{Name: e.name, Node: e.cfg.node, Incarnation: e.cfg.incarnation, Every: every, Attrs: e.cfg.self.String()}
}

// heartbeat writes c, bounded by a call timeout; a failure only leaves the
// row stale.
func (e *Elector) heartbeat(c store.Candidate) {
	ctx, cancel := context.WithTimeout(context.Background(), e.callTimeout())
	defer cancel()
	if err := e.st.Heartbeat(ctx, c); err != nil && !errors.Is(err, store.ErrInvalid) {
		e.cfg.logger.Debug("candidate row not written", "gone", c.Gone, "err", err)
	}
}

// lead runs while t lasts, on its own goroutine (e.cands): with a policy,
// every renew interval it refreshes this node's candidacy row and reads
// the name's candidacies for the machine (election.Candidates). When the
// term ends and this Elector no longer holds the name (Run returned, a
// Campaign's term ended), it deletes the row.
func (e *Elector) lead(t *Term) {
	defer e.cands.done()
	wrote := false
	for {
		if e.pref.Load().on() {
			e.heartbeat(e.row(e.cfg.renew))
			wrote = true
			e.readCandidates()
		}
		tm := e.cfg.clock.NewTimer(e.cfg.renew)
		select {
		case <-tm.C():
			continue
		case <-t.Done():
			tm.Stop()
		}
		break
	}
	e.mu.Lock()
	held := e.hold != nil
	e.mu.Unlock()
	if wrote && !held {
		c := e.row(0)
		c.Gone = true
		e.heartbeat(c)
	}
}

// readCandidates reads the name's candidacy rows and feeds those that
// parse to the machine; a row whose attributes do not parse (damaged, or
// written by something else than baton) is left out, and logged escaped.
func (e *Elector) readCandidates() {
	ctx, cancel := context.WithTimeout(context.Background(), e.callTimeout())
	rows, err := e.st.Candidates(ctx, e.name)
	cancel()
	if err != nil {
		e.cfg.logger.Debug("candidacies not read", "err", err)
		return
	}
	list := make([]election.Candidate, 0, len(rows))
	for _, r := range rows {
		a, err := election.ParseAttrs(r.Attrs)
		if err != nil {
			e.cfg.logger.Debug("candidate row refused", "node", escape.String(r.Node), "attrs", escape.String(r.Attrs), "err", err)
			continue
		}
		list = append(list, election.Candidate{Node: r.Node, Attrs: a, Age: r.Age})
	}
	// The policy first: a machine made before SetPreference (which only
	// reaches a machine that exists) learns it here; the same policy
	// again changes nothing.
	if p := e.pref.Load(); p != nil {
		e.post(election.SetPolicy{Name: e.name, Policy: p.policy, Hysteresis: p.hysteresis})
	}
	e.post(election.Candidates{Name: e.name, List: list})
}

// safePoint tells the machine whether t's work is at a safe point, and for
// safe false waits until the machine has heard it (or t ends): from then
// on it hands nothing over until told safe again.
func (e *Elector) safePoint(t *Term, safe bool) error {
	if !e.pref.Load().on() {
		return t.Err()
	}
	if safe {
		e.post(election.SafePoint{Name: e.name, Safe: true})
		return t.Err()
	}
	heard := make(chan struct{})
	e.mu.Lock()
	e.safeHeard = append(e.safeHeard, heard)
	e.post(election.SafePoint{Name: e.name, Safe: false})
	e.mu.Unlock()
	select {
	case <-heard:
	case <-t.Done():
	}
	return t.Err()
}

// heardSafePoint wakes the callers of safePoint waiting for the machine to
// hear theirs; announce calls it after the machine stepped a SafePoint.
func (e *Elector) heardSafePoint() {
	e.mu.Lock()
	heard := e.safeHeard
	e.safeHeard = nil
	e.mu.Unlock()
	for _, c := range heard {
		close(c)
	}
}

// SafePoint tells the election whether this term's work is at a safe
// point: between units of work, with nothing under way that a handover
// would cut off. It matters only with a preference policy
// (WithPreference), whose leader hands the name over only at a safe
// point: call SafePoint(true) when the work is between units, and
// SafePoint(false) before starting the next; it returns once the election
// has heard it, so that nothing is handed over from then on until the next
// SafePoint(true). It returns the term's cause if the term has ended (a
// handover may just have ended it): then the work must not start. A term
// begins not at a safe point, so work that never calls it is never handed
// over. A schedule.Runner calls it itself, between runs.
func (t *Term) SafePoint(safe bool) error {
	if t.safe == nil {
		return t.Err()
	}
	return t.safe(t, safe)
}

// preferOf is the preference newConfig settled: nil without WithPreference.
func preferOf(c config) *preference {
	if !c.preferSet {
		return nil
	}
	return &preference{policy: c.prefer, hysteresis: c.hysteresis}
}
