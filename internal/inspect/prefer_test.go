package inspect_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// A view shows each candidate's attributes, refuses a damaged row (its
// text escaped, left out of the judgement), and says why the leader is or
// is not the preferred candidate.
func TestReadPreference(t *testing.T) {
	ctx := context.Background()
	ms := memstore.New()
	if _, err := ms.EnsureJob(ctx, store.Job{Name: "billing", Schedule: "every 1h", Prefer: "highest-weight", PreferHysteresis: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: "a", Incarnation: "a1", Token: 1, Lease: 10 * time.Second}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	beat := func(node, attrs string) {
		t.Helper()
		if err := ms.Heartbeat(ctx, store.Candidate{Name: "billing", Node: node, Incarnation: node + "1", Every: time.Second, Attrs: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	beat("a", "weight=5 zone=eu-1")
	beat("b", "weight=3")
	beat("c", "weight=99\x1b[2J") // damaged: never judged, shown escaped
	read := func() inspect.View {
		t.Helper()
		v, err := inspect.Read(ctx, ms, "billing", time.Now(), inspect.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := read()
	if len(v.Candidates) != 2 || v.Candidates[0].Node != "b" || v.Candidates[0].Attrs != "weight=3" || v.Candidates[0].AttrsError != "" {
		t.Fatalf("candidates %+v", v.Candidates)
	}
	if c := v.Candidates[1]; c.Node != "c" || c.AttrsError == "" || strings.ContainsRune(c.Attrs, 0x1b) || !strings.Contains(c.Attrs, `\x1b`) {
		t.Errorf("the damaged row: %+v", c)
	}
	p := v.Preference
	if p == nil || p.Policy != "highest-weight" || p.HysteresisSeconds != 60 || p.LeaderAttrs != "weight=5 zone=eu-1" || p.Preferred != "a" || !p.LeaderPreferred ||
		!strings.Contains(p.Why, "the leader a is a best live candidate") {
		t.Fatalf("preference %+v", p)
	}
	beat("d", "weight=7")
	p = read().Preference
	if p.Preferred != "d" || p.LeaderPreferred || !strings.Contains(p.Why, "d (weight=7) is preferred by highest-weight to the leader a (weight=5 zone=eu-1)") {
		t.Errorf("with a heavier candidate: %+v", p)
	}
	if _, err := ms.PreferJob(ctx, store.JobPrefer{Name: "billing", Prefer: "label:zone=eu-1"}); err != nil {
		t.Fatal(err)
	}
	if p = read().Preference; !p.LeaderPreferred || p.Preferred != "a" {
		t.Errorf("by label: %+v", p)
	}
	if _, err := ms.PreferJob(ctx, store.JobPrefer{Name: "billing"}); err != nil {
		t.Fatal(err)
	}
	if p = read().Preference; p == nil || p.Policy != "none" || p.Preferred != "" || !strings.Contains(p.Why, "no policy") {
		t.Errorf("no policy, candidates with attributes: %+v", p)
	}
	// Neither a policy nor attributes: nothing to say.
	if _, err := ms.EnsureJob(ctx, store.Job{Name: "plain", Schedule: "every 1h"}); err != nil {
		t.Fatal(err)
	}
	if v, err := inspect.Read(ctx, ms, "plain", time.Now(), inspect.Options{}); err != nil || v.Preference != nil {
		t.Errorf("a job without preferences: %+v, %v", v.Preference, err)
	}
}
