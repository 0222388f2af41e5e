package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// testPreferJob checks a job's preference: stored as given when the job
// is first registered and kept by later registrations, changed by
// PreferJob with a PreferChanged event in the log, the record (and so its
// holder's term) left as it was.
func testPreferJob(t *testing.T, open func() store.Store) {
	s := open()
	c := ctx(t)
	p := store.JobPrefer{Name: "job", Prefer: "highest-weight", Hysteresis: 30 * time.Second}
	if _, err := s.PreferJob(c, p); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("PreferJob of a missing job: %v, want ErrNotFound", err)
	}
	for _, bad := range []store.JobPrefer{{Prefer: "none"}, {Name: "job", Prefer: "label:a=\x1b[2J"},
		{Name: "job", Prefer: strings.Repeat("p", store.MaxReasonLen+1)}, {Name: "job", Hysteresis: -1}} {
		if _, err := s.PreferJob(c, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("PreferJob(%+v): %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := s.EnsureJob(c, store.Job{Name: "bad", Schedule: "a", Prefer: "x\ny"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("EnsureJob with a preference of control characters: %v, want ErrInvalid", err)
	}
	j, err := s.EnsureJob(c, store.Job{Name: "job", Schedule: "a", Prefer: "oldest-version", PreferHysteresis: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if j.Prefer != "oldest-version" || j.PreferHysteresis != time.Minute {
		t.Fatalf("registered with a preference: %+v", j)
	}
	if j, err = open().EnsureJob(c, store.Job{Name: "job", Schedule: "a", Prefer: "newest-version"}); err != nil || j.Prefer != "oldest-version" {
		t.Fatalf("a second registration changed the preference: %+v, %v", j, err)
	}
	rec := mustSwap(t, s, store.Swap{Record: acquire("job", "a", 1), Event: store.Acquired})
	got, err := s.PreferJob(c, p)
	if err != nil || got.Prefer != p.Prefer || got.PreferHysteresis != p.Hysteresis || got.Schedule != "a" {
		t.Fatalf("PreferJob = %+v, %v", got, err)
	}
	if j, err := open().GetJob(c, "job"); err != nil || j.Prefer != p.Prefer || j.PreferHysteresis != p.Hysteresis {
		t.Fatalf("GetJob after PreferJob = %+v, %v", j, err)
	}
	if now, err := s.Get(c, "job"); err != nil || now.Version != rec.Version || now.Holder != "a" {
		t.Fatalf("the record changed: %+v (was %+v), %v", now, rec, err)
	}
	// A renewal on the version the holder read still applies.
	mustSwap(t, s, store.Swap{Expect: rec.Version, Record: rec})
	if _, err := s.PreferJob(c, store.JobPrefer{Name: "job"}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.History(c, "job", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var details []string
	for i, ev := range evs {
		if ev.Seq != uint64(i)+1 {
			t.Errorf("History[%d].Seq = %d", i, ev.Seq)
		}
		if ev.Kind == store.PreferChanged {
			details = append(details, ev.Detail)
			if ev.Holder != "a" || ev.Token != 1 {
				t.Errorf("event %+v: not the record's holder and token", ev)
			}
		}
	}
	want := []string{"oldest-version (hysteresis 1m0s) -> highest-weight (hysteresis 30s)", "highest-weight (hysteresis 30s) -> none"}
	if strings.Join(details, "|") != strings.Join(want, "|") {
		t.Errorf("PreferChanged details %q, want %q", details, want)
	}
	// A job without a record: changed, nothing logged.
	if _, err := s.EnsureJob(c, store.Job{Name: "norec", Schedule: "a"}); err != nil {
		t.Fatal(err)
	}
	if j, err := s.PreferJob(c, store.JobPrefer{Name: "norec", Prefer: "label:zone=eu-1"}); err != nil || j.Prefer != "label:zone=eu-1" {
		t.Fatalf("PreferJob of a job without a record = %+v, %v", j, err)
	}
	if evs, err := s.History(c, "norec", 0, 0); err != nil || len(evs) != 0 {
		t.Errorf("History of a job without a record: %+v, %v", evs, err)
	}
}
