package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// baton prefer: usage errors exit 2, an unknown name and a name that is no
// job exit 1 and write nothing; a change is stored with the job, keeps the
// stored hysteresis unless given, and is logged as prefer-changed without
// touching the record.
func TestPreferCommand(t *testing.T) {
	e, out, errb, ms := shared()
	ctx := context.Background()
	do := func(args ...string) result {
		o, eb := len(out.String()), len(errb.String())
		code := e.run(ctx, append(args[:1:1], append([]string{"--store", "mem:"}, args[1:]...)...))
		return result{code, out.String()[o:], errb.String()[eb:]}
	}
	if _, err := ms.EnsureJob(ctx, store.Job{Name: "billing", Schedule: "every 1h", Prefer: "highest-weight", PreferHysteresis: time.Minute}); err != nil {
		t.Fatal(err)
	}
	rec, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: "n1", Incarnation: "i1", Token: 3, Lease: time.Second}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "svc", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Second}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"prefer", "billing"}, 2, "want JOB POLICY"},
		{[]string{"prefer", "billing", "heaviest"}, 2, `invalid POLICY "heaviest"`},
		{[]string{"prefer", "billing", "label:zone"}, 2, "label:K=V"},
		{[]string{"prefer", "--prefer-hysteresis", "1ms", "billing", "none"}, 2, "--prefer-hysteresis"},
		{[]string{"prefer", "nosuch", "none"}, 1, "nosuch: no election record, job or run of that name in this store"},
		{[]string{"prefer", "svc", "none"}, 1, "svc is not a scheduled job"},
	} {
		r := do(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.err) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("baton %q: %s; want exit %d and one line with %q", tc.args, r, tc.code, tc.err)
		}
	}
	if j, _ := ms.GetJob(ctx, "billing"); j.Prefer != "highest-weight" {
		t.Fatalf("a refused command changed the job: %+v", j)
	}
	r := do("prefer", "billing", "label:zone=eu-1")
	if r.code != exitOK || r.stdout != "billing: preference highest-weight (hysteresis 1m0s) -> label:zone=eu-1 (hysteresis 1m0s); every node takes it within a lease\n" {
		t.Fatalf("baton prefer: %s", r)
	}
	r = do("prefer", "billing", "--json", "--prefer-hysteresis", "90s", "oldest-version")
	if r.code != exitOK || !strings.Contains(r.stdout, `"prefer": "oldest-version"`) || !strings.Contains(r.stdout, `"hysteresis_seconds": 90`) {
		t.Fatalf("baton prefer --json: %s", r)
	}
	j, err := ms.GetJob(ctx, "billing")
	if err != nil || j.Prefer != "oldest-version" || j.PreferHysteresis != 90*time.Second || j.Schedule != "every 1h" {
		t.Fatalf("the job after baton prefer: %+v, %v", j, err)
	}
	if now, _ := ms.Get(ctx, "billing"); now.Version != rec.Version {
		t.Errorf("baton prefer wrote the record: version %d, was %d", now.Version, rec.Version)
	}
	evs, _ := ms.History(ctx, "billing", 0, 0)
	var details []string
	for _, ev := range evs {
		if ev.Kind == store.PreferChanged {
			details = append(details, ev.Detail)
		}
	}
	if want := "highest-weight (hysteresis 1m0s) -> label:zone=eu-1 (hysteresis 1m0s)|label:zone=eu-1 (hysteresis 1m0s) -> oldest-version (hysteresis 1m30s)"; strings.Join(details, "|") != want {
		t.Errorf("prefer-changed events %q, want %q", details, want)
	}
}

// baton run --prefer stores the policy with a new job only; the node takes
// the stored one, and a change read later (watchSchedule) reaches its
// Elector.
func TestRunPreferRegisters(t *testing.T) {
	ctx := context.Background()
	ms := memstore.New()
	f := runDefaults()
	f.sched.every, f.set = time.Minute, map[string]bool{"every": true}
	c, err := f.check()
	if err != nil {
		t.Fatal(err)
	}
	c.prefer, c.preferHysteresis = "newest-version", 0
	if err := registerPreferred(ctx, ms, c); err != nil {
		t.Fatal(err)
	}
	c.prefer = "highest-weight" // a node started later with another --prefer
	if err := registerPreferred(ctx, ms, c); err != nil {
		t.Fatal(err)
	}
	j, err := ms.GetJob(ctx, "j")
	if err != nil || j.Prefer != "newest-version" || j.PreferHysteresis != 0 {
		t.Fatalf("job after two registrations: %+v, %v", j, err)
	}
	el, err := baton.New(ms, "j", baton.WithLease(c.lease))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	if err := applyPreference(el, c, j, logger); err != nil {
		t.Fatal(err)
	}
	if p, h := el.Preference(); p != "newest-version" || h != 2*c.lease {
		t.Errorf("the Elector's preference: %s, %v; want newest-version, %v", p, h, 2*c.lease)
	}
	j.Prefer, j.PreferHysteresis = "oldest-version", time.Second // below the lease: refused, kept
	if err := applyPreference(el, c, j, logger); err == nil || !strings.Contains(err.Error(), "prefer-hysteresis") {
		t.Errorf("a stored hysteresis below the lease: %v", err)
	}
	if p, _ := el.Preference(); p != "newest-version" {
		t.Errorf("the Elector's preference after a refused one: %s", p)
	}
}

// baton status and the JSON API show each candidate's attributes and why
// the leader is or is not the preferred one; a damaged row is shown
// escaped, never raw.
func TestStatusShowsPreference(t *testing.T) {
	e, out, errb, ms := shared()
	ctx := context.Background()
	if _, err := ms.EnsureJob(ctx, store.Job{Name: "billing", Schedule: "every 1h", Prefer: "highest-weight", PreferHysteresis: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: "a", Incarnation: "a1", Token: 1, Lease: 10 * time.Second}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	for node, attrs := range map[string]string{"a": "weight=5", "b": "version=1.5 weight=10", "c": "weight=1\x1b[2J"} {
		if err := ms.Heartbeat(ctx, store.Candidate{Name: "billing", Node: node, Incarnation: node + "1", Every: time.Second, Attrs: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	if code := e.run(ctx, []string{"status", "--store", "mem:", "billing"}); code != exitOK {
		t.Fatalf("status: exit %d: %s", code, errb)
	}
	text := out.String()
	for _, want := range []string{
		"(version=1.5 weight=10)\n",
		`(attributes refused: `, `weight=1\x1b[2J)`,
		"prefer:    highest-weight (hysteresis 1m0s); the leader says weight=5\n",
		"b (version=1.5 weight=10) is preferred by highest-weight to the leader a (weight=5)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("status lacks %q:\n%s", want, text)
		}
	}
	if strings.ContainsRune(text, 0x1b) {
		t.Errorf("status printed a raw control character:\n%q", text)
	}
	o := len(out.String())
	if code := e.run(ctx, []string{"status", "--json", "--store", "mem:", "billing"}); code != exitOK {
		t.Fatalf("status --json: exit %d: %s", code, errb)
	}
	js := out.String()[o:]
	for _, want := range []string{`"attrs": "version=1.5 weight=10"`, `"preferred": "b"`, `"leader_preferred": false`, `"attrs_error": `} {
		if !strings.Contains(js, want) {
			t.Errorf("status --json lacks %s:\n%s", want, js)
		}
	}
	d, err := readJob(ctx, ms, "billing", &watch{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	d = printableDetail(d)
	if d.Preference == nil || d.Preference.Preferred != "b" || d.Preference.LeaderAttrs != "weight=5" || len(d.Candidates) != 2 || d.Candidates[0].Attrs != "version=1.5 weight=10" {
		t.Errorf("the API's job detail: %+v, candidates %+v", d.Preference, d.Candidates)
	}
	if strings.ContainsRune(d.Candidates[1].Attrs, 0x1b) || strings.ContainsRune(d.Candidates[1].AttrsError, 0x1b) {
		t.Errorf("the API's damaged candidate is not escaped: %+v", d.Candidates[1])
	}
}
