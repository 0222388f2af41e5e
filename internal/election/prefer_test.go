package election_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

func TestParsePolicy(t *testing.T) {
	for _, s := range []string{"none", "highest-weight", "oldest-version", "newest-version", "label:zone=eu-1", "label:example.com/tier=a_b"} {
		p, err := election.ParsePolicy(s)
		if err != nil || p.String() != s {
			t.Errorf("ParsePolicy(%q) = %v, %v", s, p, err)
		}
	}
	for _, s := range []string{"heaviest", "label:", "label:zone", "label:=x", "label:zone=", "label:zone=a b", "label:zo\x1bne=1", "label:a=b=c", "NONE"} {
		_, err := election.ParsePolicy(s)
		var be *bound.Error
		if !errors.As(err, &be) || be.Option != "prefer" {
			t.Errorf("ParsePolicy(%q) = %v, want a *bound.Error naming prefer", s, err)
		}
	}
}

func TestVersionsCompareAsSemver(t *testing.T) {
	// Each is strictly below the next.
	order := []string{"0.9", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.4", "1.4.2", "1.9", "v1.10", "1.10.1", "2"}
	for i := range order {
		for j := range order {
			a, err := election.ParseVersion(order[i])
			if err != nil {
				t.Fatalf("ParseVersion(%q): %v", order[i], err)
			}
			b, _ := election.ParseVersion(order[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("%s vs %s: %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	for _, eq := range [][2]string{{"1.4", "1.4.0"}, {"v1.4.0", "1.4"}, {"1.4.0+build.7", "1.4"}, {"01.2", "1.2"}} {
		a, _ := election.ParseVersion(eq[0])
		b, _ := election.ParseVersion(eq[1])
		if a.Compare(b) != 0 {
			t.Errorf("%s and %s differ", eq[0], eq[1])
		}
	}
	for _, bad := range []string{"", "v", "1..2", "1.x", "1.2-", "1.2+", "1.2-a..b", "-1", "1.2.3.", "1234567890123456789", "1.2 ", "1,2"} {
		_, err := election.ParseVersion(bad)
		var be *bound.Error
		if !errors.As(err, &be) || be.Option != "candidate-version" {
			t.Errorf("ParseVersion(%q) = %v, want a *bound.Error naming candidate-version", bad, err)
		}
	}
}

func cand(node, version string, weight int, labels ...election.Label) election.Candidate {
	return election.Candidate{Node: node, Attrs: election.Attrs{Version: version, Weight: weight, Labels: labels}}
}

func TestBest(t *testing.T) {
	zone := func(z string) election.Label { return election.Label{Key: "zone", Value: z} }
	cands := []election.Candidate{
		cand("c", "1.9", 5, zone("eu-1")),
		cand("a", "1.10", 10, zone("us-1")),
		cand("b", "", 10, zone("eu-1")),
		cand("d", "1.9.0", 1),
	}
	for _, tc := range []struct {
		policy string
		want   string
	}{
		{"none", "a"}, // nobody preferred: the smallest node id
		{"highest-weight", "a"},
		{"oldest-version", "c"}, // 1.9 == 1.9.0: c before d; b has none
		{"newest-version", "a"}, // 1.10 > 1.9
		{"label:zone=eu-1", "b"},
		{"label:zone=ap-1", "a"},
	} {
		p, _ := election.ParsePolicy(tc.policy)
		// Every order of the candidates gives the same best.
		for r := range cands {
			rot := append(append([]election.Candidate{}, cands[r:]...), cands[:r]...)
			if got, _ := election.Best(p, rot); got.Node != tc.want {
				t.Errorf("%s (rotation %d): best %s, want %s", tc.policy, r, got.Node, tc.want)
			}
		}
	}
	p, _ := election.ParsePolicy("highest-weight")
	if election.Better(p, cands[1].Attrs, cands[2].Attrs) {
		t.Error("a tie is better")
	}
	if _, ok := election.Best(p, nil); ok {
		t.Error("a best of no candidates")
	}
}

func TestConfigValidatePreference(t *testing.T) {
	base := election.Config{Name: "job", Node: "a", Incarnation: "a.1", Lease: 3 * time.Second,
		Renew: time.Second, Poll: 100 * time.Millisecond, Retry: 100 * time.Millisecond}
	for _, tc := range []struct {
		option string
		edit   func(*election.Config)
	}{
		{"candidate-version", func(c *election.Config) { c.Self.Version = "1.x" }},
		{"weight", func(c *election.Config) { c.Self.Weight = -1 }},
		{"weight", func(c *election.Config) { c.Self.Weight = election.MaxWeight + 1 }},
		{"candidate-label", func(c *election.Config) { c.Self.Labels = []election.Label{{Key: "zone", Value: ""}} }},
		{"candidate-label", func(c *election.Config) { c.Self.Labels = []election.Label{{"zone", "a"}, {"zone", "b"}} }},
		{"candidate-label", func(c *election.Config) { c.Self.Labels = []election.Label{{"weight", "5"}} }},
		{"candidate-label", func(c *election.Config) {
			for i := range election.MaxLabels + 1 {
				c.Self.Labels = append(c.Self.Labels, election.Label{Key: fmt.Sprint("k", i), Value: "v"})
			}
		}},
		{"candidate-version", func(c *election.Config) { c.Self.Version = "1." + strings.Repeat("1", 300) }},
		{"prefer", func(c *election.Config) { c.Prefer = election.Policy{Kind: election.PreferLabel, Key: "zone"} }},
		{"prefer-hysteresis", func(c *election.Config) { c.Prefer = election.Policy{Kind: election.PreferHighestWeight} }},
		{"prefer-hysteresis", func(c *election.Config) { c.Hysteresis = time.Second }},
		{"prefer-hysteresis", func(c *election.Config) { c.Hysteresis = election.MaxHysteresis + 1 }},
	} {
		c := base
		tc.edit(&c)
		err := c.Validate()
		var be *bound.Error
		if !errors.As(err, &be) || be.Option != tc.option {
			t.Errorf("%+v: %v, want a *bound.Error naming %s", c, err, tc.option)
		}
	}
	ok := base
	ok.Prefer, ok.Hysteresis = election.Policy{Kind: election.PreferOldestVersion}, 10*time.Second
	ok.Self = election.Attrs{Version: "v1.4.2", Weight: election.MaxWeight, Labels: []election.Label{{"zone", "eu-1"}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid: %v", err)
	}
}

// preferRun is one leader machine with a policy, driven by hand on
// virtual time.
type preferRun struct {
	t   *testing.T
	cfg election.Config
	m   *election.Machine
	now time.Time
	rec store.Record
}

func newPreferRun(t *testing.T, policy string, self election.Attrs, mut election.Mutations) *preferRun {
	t.Helper()
	p, err := election.ParsePolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	cfg := election.Config{Name: "job", Node: "a", Incarnation: "a.1", Lease: 3 * time.Second,
		Renew: time.Second, Margin: 100 * time.Millisecond, Poll: 100 * time.Millisecond, Retry: 100 * time.Millisecond,
		Prefer: p, Hysteresis: 10 * time.Second, Self: self, Mutate: mut}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r := &preferRun{t: t, cfg: cfg, m: election.New(cfg), now: time.Unix(1000, 0)}
	r.m.Step(r.now, election.Start{})
	r.m.Step(r.now, election.GetReply{Name: "job", Record: store.Record{Name: "job", Token: 4, Version: 10, Lease: cfg.Lease}})
	r.rec = store.Record{Name: "job", Holder: "a", Incarnation: "a.1", Token: 5, Version: 11, Lease: cfg.Lease}
	if !has[election.Elected](r.m.Step(r.now, election.SwapReply{Name: "job", Record: r.rec})) {
		t.Fatal("not elected")
	}
	return r
}

// advance moves virtual time by d, renewing on the way.
func (r *preferRun) advance(d time.Duration) {
	end := r.now.Add(d)
	for {
		next := r.m.Next()
		if next.IsZero() || next.After(end) {
			break
		}
		r.now = next
		for _, a := range r.m.Step(r.now, election.Tick{}) {
			if sw, ok := a.(election.Swap); ok {
				r.rec = sw.Swap.Record
				r.rec.Version = sw.Swap.Expect + 1
				r.m.Step(r.now, election.SwapReply{Name: "job", Record: r.rec})
			}
		}
	}
	r.now = end
}

// step feeds ev and returns the node the machine hands over to, if any,
// checking that Lost (ErrHandedOver) comes first.
func (r *preferRun) step(ev election.Event) (to string) {
	r.t.Helper()
	acts := r.m.Step(r.now, ev)
	for i, a := range acts {
		sw, ok := a.(election.Swap)
		if !ok {
			continue
		}
		if i == 0 {
			r.t.Fatalf("release before Lost: %v", acts)
		}
		if l, ok := acts[0].(election.Lost); !ok || !errors.Is(l.Cause, election.ErrHandedOver) {
			r.t.Fatalf("first action %v, want Lost(ErrHandedOver)", acts[0])
		}
		s := sw.Swap
		if !s.Record.Free() || s.Record.Token != r.rec.Token || s.Expect != r.rec.Version || s.Event != store.Transferred {
			r.t.Fatalf("handover %+v, want the existing transfer of %+v", s, r.rec)
		}
		return s.Record.Transfer
	}
	return ""
}

func TestHandoverOnlyAtSafePointAfterHysteresisToLiveBetter(t *testing.T) {
	self := election.Attrs{Weight: 1}
	r := newPreferRun(t, "highest-weight", self, election.Mutations{})
	list := election.Candidates{Name: "job", List: []election.Candidate{cand("b", "", 5), cand("c", "", 10)}}
	// Within the hysteresis: nothing, safe or not.
	if to := r.step(list); to != "" {
		t.Fatalf("handed over to %s at once", to)
	}
	if to := r.step(election.SafePoint{Name: "job", Safe: true}); to != "" {
		t.Fatalf("handed over to %s within the hysteresis", to)
	}
	r.advance(9 * time.Second)
	r.step(election.SafePoint{Name: "job", Safe: false}) // a run starts
	r.advance(2 * time.Second)                           // the hysteresis is over, mid-run
	list.List[0].Age, list.List[1].Age = 0, 0
	if to := r.step(list); to != "" {
		t.Fatalf("handed over to %s mid-run", to)
	}
	if !r.m.Leading() {
		t.Fatal("not leading")
	}
	// Between runs a little later, but c's candidacy, renewed 2s before
	// the read, is older than a lease by then: b, the best live one.
	list.List[1].Age = 2 * time.Second
	r.step(list)
	r.advance(1500 * time.Millisecond)
	if to := r.step(election.SafePoint{Name: "job", Safe: true}); to != "b" {
		t.Fatalf("handed over to %q, want b (c is not live)", to)
	}
	if r.m.Leading() {
		t.Fatal("still leading after the handover")
	}
}

func TestHandoverNotToWorseOrTie(t *testing.T) {
	for _, tc := range []struct {
		policy string
		self   election.Attrs
		others []election.Candidate
		want   string
	}{
		{"none", election.Attrs{}, []election.Candidate{cand("b", "", 10)}, ""},
		{"highest-weight", election.Attrs{Weight: 10}, []election.Candidate{cand("b", "", 10), cand("0", "", 3)}, ""},
		{"oldest-version", election.Attrs{Version: "1.4"}, []election.Candidate{cand("b", "1.5", 0), cand("c", "", 0)}, ""},
		{"oldest-version", election.Attrs{Version: "1.10"}, []election.Candidate{cand("b", "1.9", 0), cand("c", "1.11", 0)}, "b"},
		{"newest-version", election.Attrs{Version: "1.9"}, []election.Candidate{cand("c", "1.10", 0), cand("b", "1.10.0", 0)}, "b"},
		{"newest-version", election.Attrs{}, []election.Candidate{cand("b", "0.1", 0)}, "b"},
		{"label:zone=eu-1", election.Attrs{Labels: []election.Label{{"zone", "eu-1"}}}, []election.Candidate{cand("b", "", 0, election.Label{Key: "zone", Value: "eu-1"})}, ""},
		{"label:zone=eu-1", election.Attrs{}, []election.Candidate{cand("c", "", 0, election.Label{Key: "zone", Value: "eu-1"}), cand("b", "", 0, election.Label{Key: "zone", Value: "us-1"})}, "c"},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.policy, tc.want), func(t *testing.T) {
			r := newPreferRun(t, tc.policy, tc.self, election.Mutations{})
			if tc.policy == "none" {
				r.step(election.SetPolicy{Name: "job"})
			}
			r.advance(11 * time.Second)
			r.step(election.Candidates{Name: "job", List: tc.others})
			if to := r.step(election.SafePoint{Name: "job", Safe: true}); to != tc.want {
				t.Fatalf("handed over to %q, want %q", to, tc.want)
			}
		})
	}
}

// A policy set at run time starts its hysteresis then; none set at run
// time stops the handovers.
func TestSetPolicyAtRunTime(t *testing.T) {
	r := newPreferRun(t, "none", election.Attrs{Weight: 1}, election.Mutations{})
	r.advance(20 * time.Second)
	r.step(election.SafePoint{Name: "job", Safe: true})
	list := election.Candidates{Name: "job", List: []election.Candidate{cand("b", "", 5)}}
	if to := r.step(list); to != "" {
		t.Fatalf("policy none handed over to %s", to)
	}
	if to := r.step(election.SetPolicy{Name: "job", Policy: election.Policy{Kind: election.PreferHighestWeight}, Hysteresis: 5 * time.Second}); to != "" {
		t.Fatalf("handed over to %s as the policy came", to)
	}
	r.advance(5 * time.Second)
	if to := r.step(list); to != "b" {
		t.Fatalf("handed over to %q, want b", to)
	}
}

// A handover held up only by a renewal in flight happens at the renewal's
// reply, not at the next candidacy read: a runtime that reads the
// candidacies every renew interval sends each read as a renewal goes out.
func TestHandoverAtTheRenewalReply(t *testing.T) {
	r := newPreferRun(t, "highest-weight", election.Attrs{Weight: 1}, election.Mutations{})
	r.step(election.SafePoint{Name: "job", Safe: true})
	r.advance(11 * time.Second)
	next := r.m.Next()
	r.now = next
	var renewal *store.Swap
	for _, a := range r.m.Step(r.now, election.Tick{}) {
		if sw, ok := a.(election.Swap); ok {
			renewal = &sw.Swap
		}
	}
	if renewal == nil {
		t.Fatal("no renewal at the renew time")
	}
	list := election.Candidates{Name: "job", List: []election.Candidate{cand("b", "", 5)}}
	if to := r.step(list); to != "" {
		t.Fatalf("handed over to %s with the renewal in flight", to)
	}
	r.rec = renewal.Record
	r.rec.Version = renewal.Expect + 1
	acts := r.m.Step(r.now, election.SwapReply{Name: "job", Record: r.rec})
	lost := false
	for _, a := range acts {
		switch a := a.(type) {
		case election.Lost:
			lost = errors.Is(a.Cause, election.ErrHandedOver)
		case election.Swap:
			if !lost || a.Swap.Record.Transfer != "b" || !a.Swap.Record.Free() || a.Swap.Expect != r.rec.Version || a.Swap.Event != store.Transferred {
				t.Fatalf("at the renewal's reply: %v, want Lost(ErrHandedOver), then the transfer to b", acts)
			}
			return
		}
	}
	t.Fatalf("no handover at the renewal's reply: %v", acts)
}

// The two mutations: the handover mid-run and within the hysteresis.
func TestPreferMutations(t *testing.T) {
	list := election.Candidates{Name: "job", List: []election.Candidate{cand("b", "", 5)}}
	r := newPreferRun(t, "highest-weight", election.Attrs{}, election.Mutations{NoHysteresis: true})
	r.step(list)
	if to := r.step(election.SafePoint{Name: "job", Safe: true}); to != "b" {
		t.Fatalf("NoHysteresis: handed over to %q at once, want b", to)
	}
	r = newPreferRun(t, "highest-weight", election.Attrs{}, election.Mutations{NoSafePoint: true})
	r.advance(11 * time.Second)
	if to := r.step(list); to != "b" {
		t.Fatalf("NoSafePoint: handed over to %q mid-run, want b", to)
	}
}

// The canonical text of a candidate's attributes reads back as it was
// written, and anything else a store could hold is refused.
func TestAttrsText(t *testing.T) {
	for _, tc := range []struct {
		a    election.Attrs
		text string
	}{
		{election.Attrs{}, ""},
		{election.Attrs{Weight: 10}, "weight=10"},
		{election.Attrs{Version: "v1.5.0-rc.1+b7"}, "version=v1.5.0-rc.1+b7"},
		{election.Attrs{Version: "1.4.2", Weight: election.MaxWeight, Labels: []election.Label{{"zone", "eu-1"}, {"disk", "ssd"}}},
			"version=1.4.2 weight=1000000 disk=ssd zone=eu-1"},
	} {
		if got := tc.a.String(); got != tc.text {
			t.Errorf("%+v.String() = %q, want %q", tc.a, got, tc.text)
		}
		got, err := election.ParseAttrs(tc.text)
		if err != nil || got.String() != tc.text || got.Version != tc.a.Version || got.Weight != tc.a.Weight || len(got.Labels) != len(tc.a.Labels) {
			t.Errorf("ParseAttrs(%q) = %+v, %v", tc.text, got, err)
		}
	}
	for _, bad := range []string{
		" ", "weight=0", "weight=+5", "weight=-1", "weight=1000001", "weight=ten", "weight=05",
		"zone=eu-1 weight=5", "weight=5 version=1.4", "zone=b disk=a", "zone=eu-1  disk=a", "zone",
		"version=1.x", "version=", "zone=", "=x", "zone=a zone=b", "version=1 version=2",
		"zone=eu\x1b[31m", "zone=eu-1\n", "weight=10 ", strings.Repeat("k=v ", 2000),
	} {
		if a, err := election.ParseAttrs(bad); err == nil {
			t.Errorf("ParseAttrs(%q) = %+v, want an error", bad, a)
		}
	}
}

// FuzzParseAttrs: whatever ParseAttrs accepts is valid and canonical.
func FuzzParseAttrs(f *testing.F) {
	f.Add("version=1.4.2 weight=10 zone=eu-1")
	f.Add("weight=3")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := election.ParseAttrs(s)
		if err != nil {
			return
		}
		if a.Validate() != nil || a.String() != s {
			t.Fatalf("ParseAttrs(%q) = %+v: invalid or not canonical", s, a)
		}
	})
}

// contend runs a contender machine with self's attributes against a
// record held by x (version 10), read at time 0, the other candidacies
// re-read every second as others gives them (ages at the read, growing
// by a second a read when stale says so). It returns how long after the
// first read it sent the takeover, or -1 if not within 10s.
func contend(t *testing.T, policy string, self election.Attrs, mut election.Mutations, rec store.Record, others []election.Candidate, stale bool) time.Duration {
	t.Helper()
	p, err := election.ParsePolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	cfg := election.Config{Name: "job", Node: "a", Incarnation: "a.1", Lease: 3 * time.Second,
		Renew: time.Second, Margin: 100 * time.Millisecond, Poll: 100 * time.Millisecond, Retry: 100 * time.Millisecond,
		Prefer: p, Hysteresis: 10 * time.Second, Self: self, Mutate: mut}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m := election.New(cfg)
	start := time.Unix(1000, 0)
	now := start
	nextRead := start
	reads := 0
	feed := func() {
		list := slices.Clone(others)
		for i := range list {
			if stale {
				list[i].Age += time.Duration(reads) * time.Second
			}
		}
		reads++
		m.Step(now, election.Candidates{Name: "job", List: list})
		nextRead = nextRead.Add(time.Second)
	}
	feed()
	acts := m.Step(now, election.Start{})
	for now.Sub(start) <= 10*time.Second {
		for len(acts) > 0 {
			a := acts[0]
			acts = acts[1:]
			switch a := a.(type) {
			case election.Get:
				acts = append(acts, m.Step(now, election.GetReply{Name: "job", Record: rec})...)
			case election.Swap:
				if a.Swap.Record.Holder != "a" || a.Swap.Expect != rec.Version {
					t.Fatalf("swap %+v, want a takeover of version %d", a.Swap, rec.Version)
				}
				return now.Sub(start)
			}
		}
		next := m.Next()
		if next.IsZero() || nextRead.Before(next) {
			now = nextRead
			feed()
			acts = nil
			continue
		}
		now = next
		acts = m.Step(now, election.Tick{})
	}
	return -1
}

// A contender that may take the name over defers, once and for at most
// Config.Deferral, to a strictly better live candidate; the best one, a
// transfer's target, one that knows the better one dead, one without a
// policy, and the mutation NoDefer take it at the floor.
func TestContenderDefersToBetterLive(t *testing.T) {
	held := store.Record{Name: "job", Holder: "x", Incarnation: "x.1", Token: 4, Version: 10, Lease: 3 * time.Second}
	free := store.Record{Name: "job", Token: 4, Version: 10, Lease: 3 * time.Second}
	toA := free
	toA.Transfer = "a"
	floor := 3*time.Second + 200*time.Millisecond  // lease + 2e
	deferral := 100*time.Millisecond + time.Second // poll + renew
	v14, v15 := election.Attrs{Version: "1.4"}, election.Attrs{Version: "1.5"}
	older := []election.Candidate{cand("b", "1.4", 0)}
	newer := []election.Candidate{cand("b", "1.5", 0)}
	for _, tc := range []struct {
		what   string
		policy string
		self   election.Attrs
		mut    election.Mutations
		rec    store.Record
		others []election.Candidate
		stale  bool
		want   time.Duration
	}{
		{"1.5 defers to a live 1.4", "oldest-version", v15, election.Mutations{}, held, older, false, floor + deferral},
		{"1.4 does not defer to a 1.5", "oldest-version", v14, election.Mutations{}, held, newer, false, floor},
		{"a tie does not defer", "oldest-version", v14, election.Mutations{}, held, older, false, floor},
		{"a dead 1.4 is not waited for", "oldest-version", v15, election.Mutations{}, held, []election.Candidate{{Node: "b", Attrs: v14, Age: 2500 * time.Millisecond}}, true, floor},
		{"no policy, no deferral", "none", v15, election.Mutations{}, held, older, false, floor},
		{"NoDefer", "oldest-version", v15, election.Mutations{NoDefer: true}, held, older, false, floor},
		{"a free record too", "highest-weight", election.Attrs{Weight: 1}, election.Mutations{}, free, []election.Candidate{cand("b", "", 5)}, false, deferral},
		{"not a transfer to it", "highest-weight", election.Attrs{Weight: 1}, election.Mutations{}, toA, []election.Candidate{cand("b", "", 5)}, false, 0},
	} {
		t.Run(tc.what, func(t *testing.T) {
			if got := contend(t, tc.policy, tc.self, tc.mut, tc.rec, tc.others, tc.stale); got != tc.want {
				t.Fatalf("took over %v after the first read, want %v", got, tc.want)
			}
		})
	}
}
