// Preferred leaders, top-down (docs/prefer.md): a policy (ParsePolicy)
// says which live candidate should lead (Best, Better, on the candidates'
// Attrs); a leader that is not that candidate hands over (preferDue) with
// the existing transfer, only at a safe point the runtime reports
// (SafePoint), only to a candidate that renewed its candidacy within a
// lease (Candidates), and only once it has led for the hysteresis. Without
// a policy nothing here runs and the machine is as it always was.

package election

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store"
)

// PolicyKind says what a preference policy prefers.
type PolicyKind uint8

// The policies.
const (
	// PreferNone prefers nobody: the first to win leads until it fails or
	// an operator moves it (the default, and the behaviour without
	// preferences).
	PreferNone PolicyKind = iota
	// PreferHighestWeight prefers the largest weight.
	PreferHighestWeight
	// PreferOldestVersion prefers the lowest version (Kubernetes' rule
	// for upgrades: no node leads before every node understands it).
	PreferOldestVersion
	// PreferNewestVersion prefers the highest version.
	PreferNewestVersion
	// PreferLabel prefers a candidate whose label Policy.Key is
	// Policy.Value.
	PreferLabel
)

// MaxWeight is the largest candidate weight.
const MaxWeight = 1_000_000

// Policy is a job's preference: who should lead among the live
// candidates. The zero value is PreferNone.
type Policy struct {
	Kind PolicyKind
	// Key and Value are the label of PreferLabel; empty otherwise.
	Key, Value string
}

// ErrHandedOver ends a term whose leader handed over to the candidate
// its preference policy prefers (docs/prefer.md).
var ErrHandedOver = errors.New("handed over to the preferred candidate")

// ParsePolicy parses none, highest-weight, oldest-version, newest-version
// or label:K=V. Its error is a *bound.Error naming the flag prefer.
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "none", "":
		return Policy{}, nil
	case "highest-weight":
		return Policy{Kind: PreferHighestWeight}, nil
	case "oldest-version":
		return Policy{Kind: PreferOldestVersion}, nil
	case "newest-version":
		return Policy{Kind: PreferNewestVersion}, nil
	}
	if rest, ok := strings.CutPrefix(s, "label:"); ok {
		k, v, ok := strings.Cut(rest, "=")
		p := Policy{Kind: PreferLabel, Key: k, Value: v}
		if ok && p.Validate() == nil {
			return p, nil
		}
	}
	return Policy{}, bound.Errorf("prefer", fmt.Sprintf("%q", s),
		"none, highest-weight, oldest-version, newest-version or label:K=V (K and V letters, digits, '-', '_', '.', '/')")
}

// String is the policy as ParsePolicy reads it.
func (p Policy) String() string {
	switch p.Kind {
	case PreferNone:
		return "none"
	case PreferHighestWeight:
		return "highest-weight"
	case PreferOldestVersion:
		return "oldest-version"
	case PreferNewestVersion:
		return "newest-version"
	case PreferLabel:
		return "label:" + p.Key + "=" + p.Value
	}
	return fmt.Sprintf("policy(%d)", p.Kind)
}

// Validate reports a policy ParsePolicy would not return.
func (p Policy) Validate() error {
	switch {
	case p.Kind > PreferLabel:
		return bound.Errorf("prefer", p.String(), "none, highest-weight, oldest-version, newest-version or label:K=V")
	case p.Kind == PreferLabel && (!labelText(p.Key) || !labelText(p.Value)):
		return bound.Errorf("prefer", fmt.Sprintf("%q", p.String()), "label:K=V with K and V of letters, digits, '-', '_', '.', '/'")
	case p.Kind != PreferLabel && (p.Key != "" || p.Value != ""):
		return bound.Errorf("prefer", fmt.Sprintf("%q", p.String()), "a label only with label:K=V")
	}
	return nil
}

// labelText reports whether s is a non-empty label key or value of at most
// 63 letters, digits, '-', '_', '.' and '/'.
func labelText(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./", r)) {
			return false
		}
	}
	return true
}

// Label is one label of a candidate.
type Label struct{ Key, Value string }

// Attrs is who a candidate says it is: what a policy judges.
type Attrs struct {
	// Version is the candidate's version (ParseVersion); empty: none.
	Version string
	// Weight is 0 to MaxWeight.
	Weight int
	// Labels are distinct keys; order does not matter.
	Labels []Label
}

// Validate reports the first attribute a policy could not judge, as a
// *bound.Error naming baton run's flag.
func (a Attrs) Validate() error {
	if a.Version != "" {
		if _, err := ParseVersion(a.Version); err != nil {
			return err
		}
	}
	if a.Weight < 0 || a.Weight > MaxWeight {
		return bound.Errorf("weight", a.Weight, "0 to %d", MaxWeight)
	}
	if len(a.Labels) > MaxLabels {
		return bound.Errorf("candidate-label", len(a.Labels), "at most %d labels", MaxLabels)
	}
	for i, l := range a.Labels {
		if !labelText(l.Key) || !labelText(l.Value) {
			return bound.Errorf("candidate-label", fmt.Sprintf("%q", l.Key+"="+l.Value), "K=V with K and V of 1 to 63 letters, digits, '-', '_', '.', '/'")
		}
		if l.Key == "version" || l.Key == "weight" {
			return bound.Errorf("candidate-label", fmt.Sprintf("%q", l.Key), "a key other than version and weight (give them with --candidate-version and --weight)")
		}
		for _, o := range a.Labels[:i] {
			if o.Key == l.Key {
				return bound.Errorf("candidate-label", fmt.Sprintf("%q", l.Key), "each key once")
			}
		}
	}
	return nil
}

// MaxLabels is the most labels a candidate has.
const MaxLabels = 16

// maxAttrsText is the longest canonical text of valid Attrs: a version of
// at most maxVersionText bytes (well above any real one), a weight and
// MaxLabels labels of 63 + 1 + 63 bytes, each with a space.
const maxAttrsText = len("version=") + maxVersionText + len(" weight=1000000") + MaxLabels*(1+63+1+63)

// maxVersionText is the longest version a candidate may give.
const maxVersionText = 256

// String is a's canonical text, the one a store keeps (store.Candidate's
// Attrs) and ParseAttrs reads: "version=V" when a has a version, then
// "weight=N" when the weight is not 0, then each label "K=V" in the
// order of their keys, separated by one space; "" for the zero Attrs.
func (a Attrs) String() string {
	var parts []string
	if a.Version != "" {
		parts = append(parts, "version="+a.Version)
	}
	if a.Weight != 0 {
		parts = append(parts, "weight="+strconv.Itoa(a.Weight))
	}
	labels := slices.Clone(a.Labels)
	slices.SortFunc(labels, func(x, y Label) int { return strings.Compare(x.Key, y.Key) })
	for _, l := range labels {
		parts = append(parts, l.Key+"="+l.Value)
	}
	return strings.Join(parts, " ")
}

// ParseAttrs reads the canonical text of valid Attrs (Attrs.String), as a
// store keeps it. Anything else (a damaged row, a text some other program
// wrote, an attribute out of bounds) is an error naming what is wrong; the
// caller shows the text escaped (internal/escape), never trusts it.
func ParseAttrs(s string) (Attrs, error) {
	var a Attrs
	if s == "" {
		return a, nil
	}
	if len(s) > maxAttrsText {
		return Attrs{}, fmt.Errorf("candidate attributes of %d bytes, more than the %d valid ones take", len(s), maxAttrsText)
	}
	for i, f := range strings.Split(s, " ") {
		k, v, ok := strings.Cut(f, "=")
		switch {
		case !ok:
			return Attrs{}, fmt.Errorf("candidate attribute %d is not K=V", i+1)
		case k == "version" && i == 0:
			a.Version = v
		case k == "weight" && (i == 0 || i == 1 && a.Version != ""):
			n, err := strconv.Atoi(v)
			if err != nil || strconv.Itoa(n) != v {
				return Attrs{}, fmt.Errorf("candidate weight is not a decimal number")
			}
			a.Weight = n
		default:
			a.Labels = append(a.Labels, Label{Key: k, Value: v})
		}
	}
	if err := a.Validate(); err != nil {
		return Attrs{}, err
	}
	if a.String() != s {
		return Attrs{}, fmt.Errorf("candidate attributes not in canonical form (version, weight, then labels by key, one space apart)")
	}
	return a, nil
}

// label returns the value of the label key, if a has it.
func (a Attrs) label(key string) (string, bool) {
	for _, l := range a.Labels {
		if l.Key == key {
			return l.Value, true
		}
	}
	return "", false
}

// Version is a parsed version: dot-separated numbers and an optional
// pre-release, compared as semver compares them.
type Version struct {
	core []uint64
	pre  []string
}

// maxVersionNumber keeps every part of a version within uint64.
const maxVersionNumber = 18 // digits

// ParseVersion parses a version: an optional "v", one or more
// dot-separated decimal numbers (a missing part is 0: 1.4 is 1.4.0), an
// optional pre-release ("-rc.1") and build metadata ("+abc", ignored).
// Its error is a *bound.Error naming the flag candidate-version.
func ParseVersion(s string) (Version, error) {
	bad := func() (Version, error) {
		return Version{}, bound.Errorf("candidate-version", fmt.Sprintf("%q", s), "a version such as 1.4.2, v1.10 or 1.5.0-rc.1")
	}
	if len(s) > maxVersionText {
		return bad()
	}
	t := strings.TrimPrefix(s, "v")
	if i := strings.IndexByte(t, '+'); i >= 0 {
		if !idents(t[i+1:]) {
			return bad()
		}
		t = t[:i]
	}
	var v Version
	if i := strings.IndexByte(t, '-'); i >= 0 {
		if !idents(t[i+1:]) {
			return bad()
		}
		v.pre = strings.Split(t[i+1:], ".")
		t = t[:i]
	}
	for _, part := range strings.Split(t, ".") {
		if part == "" || len(part) > maxVersionNumber || strings.Trim(part, "0123456789") != "" {
			return bad()
		}
		n, _ := strconv.ParseUint(part, 10, 64)
		v.core = append(v.core, n)
	}
	return v, nil
}

// idents reports whether s is dot-separated non-empty identifiers of
// letters, digits and '-'.
func idents(s string) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" || len(id) > 63 {
			return false
		}
		for _, r := range id {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// Compare returns -1, 0 or +1 as v is below, equal to or above w.
func (v Version) Compare(w Version) int {
	for i := range max(len(v.core), len(w.core)) {
		a, b := part(v.core, i), part(w.core, i)
		if c := cmpUint(a, b); c != 0 {
			return c
		}
	}
	switch {
	case len(v.pre) == 0 && len(w.pre) == 0:
		return 0
	case len(v.pre) == 0:
		return 1 // a release is above its pre-releases
	case len(w.pre) == 0:
		return -1
	}
	for i := range min(len(v.pre), len(w.pre)) {
		if c := cmpIdent(v.pre[i], w.pre[i]); c != 0 {
			return c
		}
	}
	return cmpUint(uint64(len(v.pre)), uint64(len(w.pre)))
}

func part(p []uint64, i int) uint64 {
	if i < len(p) {
		return p[i]
	}
	return 0
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpIdent compares pre-release identifiers as semver does: numbers
// numerically and below words, words in ASCII order.
func cmpIdent(a, b string) int {
	na, ea := strconv.ParseUint(a, 10, 64)
	nb, eb := strconv.ParseUint(b, 10, 64)
	switch {
	case ea == nil && eb == nil:
		return cmpUint(na, nb)
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// Candidate is one candidacy of a name as the runtime read it.
type Candidate struct {
	// Node is the candidate's node id.
	Node string
	// Attrs are its attributes.
	Attrs Attrs
	// Age is how long before the read the candidate last renewed its
	// candidacy, on the store's clock.
	Age time.Duration
}

// rank compares a and b by policy p alone: +1 when a is preferred, -1 when
// b is, 0 when p does not tell them apart. A candidate without what p
// judges (no version, no such label, an unparsable version) is below one
// with it.
func rank(p Policy, a, b Attrs) int {
	switch p.Kind {
	case PreferHighestWeight:
		return cmpUint(uint64(max(a.Weight, 0)), uint64(max(b.Weight, 0)))
	case PreferOldestVersion, PreferNewestVersion:
		va, ea := ParseVersion(a.Version)
		vb, eb := ParseVersion(b.Version)
		switch {
		case ea != nil && eb != nil:
			return 0
		case ea != nil:
			return -1
		case eb != nil:
			return 1
		}
		if p.Kind == PreferOldestVersion {
			return vb.Compare(va)
		}
		return va.Compare(vb)
	case PreferLabel:
		x, _ := a.label(p.Key)
		y, _ := b.label(p.Key)
		switch {
		case x == p.Value && y != p.Value:
			return 1
		case y == p.Value && x != p.Value:
			return -1
		}
	}
	return 0
}

// Better reports whether policy p strictly prefers a to b: a tie, or
// PreferNone, is never better.
func Better(p Policy, a, b Attrs) bool { return rank(p, a, b) > 0 }

// Best returns the candidate policy p prefers among cands, ties broken by
// the smallest node id, so that every node computes the same one; false
// when cands is empty. It does not judge liveness: the caller passes the
// live candidates.
func Best(p Policy, cands []Candidate) (Candidate, bool) {
	if len(cands) == 0 {
		return Candidate{}, false
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if r := rank(p, c.Attrs, best.Attrs); r > 0 || r == 0 && c.Node < best.Node {
			best = c
		}
	}
	return best, true
}

// Candidates gives a leader the candidacies of Name as the runtime last
// read them (every renew interval, while a policy is set): the machine
// keeps the list and judges each one's liveness by its Age plus the time
// since this event.
type Candidates struct {
	Name string
	List []Candidate
}

// SafePoint tells the leader of Name whether its runtime is between runs
// (Safe) or about to start work (not Safe). A runtime that says Safe
// starts nothing until it says otherwise or the term ends; the machine
// hands over only while it is Safe. A new term begins not Safe.
type SafePoint struct {
	Name string
	Safe bool
}

// SetPolicy changes the preference of Name at run time (an operator's
// baton prefer, read from the job); Hysteresis 0 keeps the configured one.
// The machine never uses a hysteresis below its lease.
type SetPolicy struct {
	Name       string
	Policy     Policy
	Hysteresis time.Duration
}

func (Candidates) event() {}
func (SafePoint) event()  {}
func (SetPolicy) event()  {}

// prefState is a machine's preference, allocated only when a policy or a
// preference event arrives, so that a machine without one is as it was.
type prefState struct {
	policy     Policy
	hysteresis time.Duration
	cands      []Candidate
	candsAt    time.Time // when cands was stepped in
	safe       bool
	since      time.Time // when the term began (or the preference came)
	// A contender's deferral (deferTake): to the record of version
	// deferVersion, until deferUntil.
	deferring    bool
	deferVersion int64
	deferUntil   time.Time
}

// prefer returns the machine's preference state, made on first use.
func (m *Machine) prefer(now time.Time) *prefState {
	if m.pref == nil {
		m.pref = &prefState{policy: m.cfg.Prefer, hysteresis: m.cfg.Hysteresis, since: now}
	}
	return m.pref
}

// termBegan starts the hysteresis of a new term.
func (m *Machine) termBegan(now time.Time) {
	if m.pref != nil {
		m.pref.since, m.pref.safe = now, false
	}
}

// stepPrefer handles a preference event.
func (m *Machine) stepPrefer(now time.Time, ev Event) []Action {
	p := m.prefer(now)
	switch ev := ev.(type) {
	case Candidates:
		p.cands, p.candsAt = slices.Clone(ev.List), now
	case SafePoint:
		p.safe = ev.Safe
	case SetPolicy:
		if p.policy != ev.Policy {
			p.policy = ev.Policy
			p.since = now // the hysteresis counts from a new policy too
		}
		if ev.Hysteresis > 0 {
			p.hysteresis = ev.Hysteresis
		}
	}
	return m.preferDue(now)
}

// preferDue hands the lead over when the policy prefers a live candidate
// strictly to this leader, the runtime is at a safe point, the term has
// lasted the hysteresis and nothing is in flight (docs/prefer.md, "The
// handover rule"): Lost (ErrHandedOver) first, then the release towards
// the candidate, the existing transfer.
func (m *Machine) preferDue(now time.Time) []Action {
	p := m.pref
	if p == nil || p.policy.Kind == PreferNone || m.phase != leading || m.inflight != opNone || m.recheck {
		return nil
	}
	if !p.safe && !m.cfg.Mutate.NoSafePoint {
		return nil
	}
	// Never less than a lease, whatever SetPolicy said.
	if now.Before(p.since.Add(max(p.hysteresis, m.cfg.Lease))) && !m.cfg.Mutate.NoHysteresis {
		return nil
	}
	if (m.sess != nil && !m.sess.alive) || !now.Before(m.Deadline()) {
		return nil // the term is over, or ends at the next Tick
	}
	best, ok := m.betterLive(now)
	if !ok {
		return nil
	}
	m.rec.Transfer = best.Node
	return m.lose(now, ErrHandedOver)
}

// betterLive returns the best live candidate of the policy when it is
// strictly better than this node: live is renewed within a lease (its
// row's age at the read plus the time since the read, on this node's
// clock), this node counting as live. The leader's handover and the
// contender's deferral judge by it alike.
func (m *Machine) betterLive(now time.Time) (Candidate, bool) {
	p := m.pref
	if p == nil || p.policy.Kind == PreferNone {
		return Candidate{}, false
	}
	self := Candidate{Node: m.cfg.Node, Attrs: m.cfg.Self}
	live := []Candidate{self}
	since := now.Sub(p.candsAt)
	for _, c := range p.cands {
		if c.Node != m.cfg.Node && c.Node != "" && bound.Add(c.Age, since) < m.cfg.Lease {
			live = append(live, c)
		}
	}
	best, _ := Best(p.policy, live)
	if best.Node == self.Node || !Better(p.policy, best.Attrs, self.Attrs) {
		return Candidate{}, false
	}
	return best, true
}

// Deferral is how long a contender that may take a name over defers to a
// strictly better live candidate (docs/prefer.md, "The contender's
// deferral"): a poll interval, the most by which the better candidate
// can first see the same record version later than this contender (so
// it sees the same expiry at most a poll later), plus a renew interval,
// for its takeover's write to land and for the candidacy rows this
// contender judged by, read every renew interval, to be that stale.
func (c Config) Deferral() time.Duration { return bound.Add(c.Poll, c.Renew) }

// deferTake reports whether a contender that may take the record rec
// now (free, or expired) defers to a strictly better live candidate: once
// per version of the record, for at most Config.Deferral from the first
// reply that found it takeable with such a candidate known; the best
// candidate itself never defers. It sets the next read.
func (m *Machine) deferTake(now time.Time, rec *store.Record) bool {
	p := m.pref
	if p == nil || m.cfg.Mutate.NoDefer {
		return false
	}
	if _, ok := m.betterLive(now); !ok {
		return false
	}
	if !p.deferring || p.deferVersion != rec.Version {
		p.deferring, p.deferVersion, p.deferUntil = true, rec.Version, now.Add(m.cfg.Deferral())
	}
	if !now.Before(p.deferUntil) {
		return false // deferred once for this version: take it
	}
	m.readAt = earliest(now.Add(m.cfg.Poll), p.deferUntil)
	return true
}
