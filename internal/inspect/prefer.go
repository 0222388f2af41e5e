package inspect

import (
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/store"
)

// Preference is a name's preference policy as the store holds it and what
// it makes of the candidates now (docs/prefer.md): the best live
// candidate, and why the leader is or is not it.
type Preference struct {
	// Policy is the job's stored policy ("none" when it has none), and
	// HysteresisSeconds its hysteresis (0: none stored, twice each node's
	// lease).
	Policy            string  `json:"policy"`
	HysteresisSeconds float64 `json:"hysteresis_seconds,omitempty"`
	// LeaderAttrs are the attributes the holder's candidacy row says it
	// has (canonical text; escaped when damaged); empty when it has no
	// fresh row.
	LeaderAttrs string `json:"leader_attrs,omitempty"`
	// Preferred is a best live candidate by the policy (the holder
	// included; ties broken by the smallest node id, as every node
	// breaks them), empty when the policy is none or no candidate is
	// live; LeaderPreferred says whether no live candidate is strictly
	// preferred to the holder, so that the lead stays where it is.
	Preferred       string `json:"preferred,omitempty"`
	LeaderPreferred bool   `json:"leader_preferred"`
	// Why says, in one line, why the leader is or is not the preferred
	// candidate, and what happens next.
	Why string `json:"why"`
}

// candidacy is one row's attributes as the machine judges them.
type candidacy struct {
	row   store.Candidate
	attrs election.Attrs
	err   error
}

// viewAttrs returns a row's attributes for a view: the canonical text, or
// the raw text escaped and the parser's error when they do not parse.
func viewAttrs(c candidacy) (attrs, attrsErr string) {
	if c.err != nil {
		return escape.String(c.row.Attrs), c.err.Error()
	}
	return c.attrs.String(), ""
}

// preference judges the fresh candidacy rows cands of a name whose record
// is el (nil: none) and whose job is j (nil: not a job), as the leader's
// machine does: live is a row renewed within the record's lease; rows
// whose attributes do not parse are left out. It returns nil for a name
// without a policy whose rows say nothing of themselves.
func preference(el *Election, j *store.Job, cands []candidacy) *Preference {
	policyText := "none"
	var hyst time.Duration
	if j != nil && j.Prefer != "" {
		policyText, hyst = j.Prefer, j.PreferHysteresis
	}
	attrsSaid := false
	for _, c := range cands {
		attrsSaid = attrsSaid || c.row.Attrs != ""
	}
	if policyText == "none" && !attrsSaid {
		return nil
	}
	p := &Preference{Policy: escape.String(policyText), HysteresisSeconds: bound.Seconds(hyst)}
	holder := ""
	if el != nil {
		holder = el.Holder
	}
	var self *candidacy
	for i, c := range cands {
		if holder != "" && c.row.Node == holder {
			self = &cands[i]
			p.LeaderAttrs, _ = viewAttrs(c)
		}
	}
	policy, err := election.ParsePolicy(policyText)
	switch {
	case err != nil:
		p.Why = fmt.Sprintf("the stored policy is not one this baton knows (%v): no node hands over by it", err)
		return p
	case policy.Kind == election.PreferNone:
		p.Why = "no policy: the lead stays where it is until it fails or an operator moves it ('baton prefer' sets one)"
		return p
	case holder == "":
		p.Why = "nobody leads: the best live candidate takes it first (the others defer to it for a poll and a renew interval), or the policy moves it at that leader's first safe point a hysteresis later"
		return p
	case self == nil || self.err != nil:
		p.Why = fmt.Sprintf("the leader %s has no fresh candidacy row with attributes this baton reads (a baton without preferences, or a damaged row): nothing is judged", escape.String(holder))
		return p
	}
	var live []election.Candidate
	for _, c := range cands {
		if c.err == nil && (c.row.Node == holder || c.row.Age < el.Lease) {
			live = append(live, election.Candidate{Node: c.row.Node, Attrs: c.attrs})
		}
	}
	best, _ := election.Best(policy, live)
	p.Preferred = escape.String(best.Node)
	p.LeaderPreferred = !election.Better(policy, best.Attrs, self.attrs)
	if p.LeaderPreferred {
		p.Why = fmt.Sprintf("the leader %s is a best live candidate by %s: the lead stays", escape.String(holder), policy)
		if best.Node != holder {
			p.Preferred = escape.String(holder)
		}
		return p
	}
	p.Why = fmt.Sprintf("%s (%s) is preferred by %s to the leader %s (%s): the lead moves there at the leader's next point between runs, once it has led for the hysteresis",
		escape.String(best.Node), best.Attrs, policy, escape.String(holder), self.attrs)
	return p
}
