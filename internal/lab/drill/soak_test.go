package drill

import (
	"reflect"
	"testing"
	"time"
)

// A soak's schedule is a function of its seed: replayable, and over 30
// seeds it covers every fault class; every fault ends in time to heal.
func TestSoakSchedule(t *testing.T) {
	sp := DefaultSoakParams(16*time.Second, 1)
	if err := sp.Validate(); err != nil {
		t.Fatal(err)
	}
	p := sp.params()
	if p.Rounds != 80 || len(p.Triggers) != 39 {
		t.Fatalf("16s of 200ms rounds: %d rounds, %d periods; want 80 and 39", p.Rounds, len(p.Triggers))
	}
	if a, b := sp.schedule(p), sp.schedule(p); !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 1 drew two schedules:\n%v\n%v", a, b)
	}
	seen := map[Fault]bool{}
	for seed := uint64(1); seed <= 30; seed++ {
		sp.Seed = seed
		eps := sp.schedule(p)
		if len(eps) < 5 {
			t.Fatalf("seed %d: %d faults", seed, len(eps))
		}
		end := 0
		for _, e := range eps {
			seen[e.Fault] = true
			if e.Start < end {
				t.Fatalf("seed %d: faults overlap: %+v", seed, eps)
			}
			end = e.Start + e.Outage
			if end > p.Rounds-6 {
				t.Fatalf("seed %d: %+v ends %d rounds before the end, want 6 healed", seed, e, p.Rounds-end)
			}
			switch e.Fault {
			case Pause, Crash:
				if e.Outage <= p.Lease {
					t.Fatalf("seed %d: %+v does not outlast the lease", seed, e)
				}
			case Skew:
				if e.Rate != sp.SkewRate || e.Outage < 3 {
					t.Fatalf("seed %d: %+v", seed, e)
				}
			}
		}
	}
	for _, f := range SoakFaults {
		if !seen[f] {
			t.Errorf("30 seeds never drew %s", f)
		}
	}
	sp.Seed = 2
	if reflect.DeepEqual(sp.schedule(p), (func() []Episode { sp.Seed = 1; return sp.schedule(p) })()) {
		t.Error("seeds 1 and 2 drew the same schedule")
	}

	bad := DefaultSoakParams(time.Second, 1)
	if err := bad.Validate(); err == nil {
		t.Error("a soak of 5 rounds was accepted")
	}
	bad = DefaultSoakParams(time.Minute, 1)
	bad.Faults = []Fault{"tornado"}
	if err := bad.Validate(); err == nil {
		t.Error("an unknown soak fault was accepted")
	}
}
