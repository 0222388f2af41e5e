package sim_test

import (
	"bytes"
	"testing"

	"github.com/batonhq/baton/sim"
)

// A fixed set of seeds runs in every `go test`; CI runs a larger budget
// through `baton sim`.
func TestFixedSeedsHoldTheInvariants(t *testing.T) {
	s, err := sim.RunSeeds(t.Context(), sim.DefaultOptions(), 1, 60)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range s.Violations {
		t.Errorf("seed %d: %v (replay: baton sim --seeds 1 --seed %d --trace)", v.Seed, v.Violation, v.Seed)
	}
	if s.Checks == 0 || s.Periods == 0 || len(s.Faults) == 0 {
		t.Fatalf("the seeds checked nothing: %+v", s)
	}
	t.Log(s)
}

func TestSameSeedSameRun(t *testing.T) {
	run := func() []byte {
		var b bytes.Buffer
		o := sim.DefaultOptions()
		o.Trace = &b
		if _, err := sim.Run(t.Context(), o, 42); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b := run(), run()
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("seed 42 ran differently twice (%d and %d bytes of trace)", len(a), len(b))
	}
}

// The mutation checks prove the checker bites: with a protection turned
// off, the simulator finds a violation within the stated number of seeds.
func TestMutationsAreCaught(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*sim.Options)
		within int
	}{
		{"no fencing", func(o *sim.Options) { o.NoFence = true }, 20},
		// Two valid leaders need a slow leader, a fast contender and a
		// fast store at once: the skew fault, about one seed in fourteen.
		{"no 2e margin", func(o *sim.Options) { o.NoMargin = true }, 200},
		{"no Valid() check before an effect", func(o *sim.Options) { o.NoValidCheck = true }, 200},
		{"unfenced ledger", func(o *sim.Options) { o.UnfencedLedger = true }, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := sim.DefaultOptions()
			tc.mutate(&o)
			for seed := uint64(1); seed <= uint64(tc.within); seed++ {
				r, err := sim.Run(t.Context(), o, seed)
				if err != nil {
					t.Fatal(err)
				}
				if r.Violation != nil {
					t.Logf("seed %d: %v", seed, r.Violation)
					return
				}
			}
			t.Fatalf("no violation within %d seeds with %s", tc.within, tc.name)
		})
	}
}

func TestParseFaults(t *testing.T) {
	if f, err := sim.ParseFaults("all"); err != nil || len(f) != len(sim.AllFaults) {
		t.Fatalf("all: %v %v", f, err)
	}
	if _, err := sim.ParseFaults("crash,meteor"); err == nil {
		t.Fatal("unknown fault accepted")
	}
}

// BenchmarkSeed measures one seed of the default options on one core.
func BenchmarkSeed(b *testing.B) {
	o := sim.DefaultOptions()
	seed := uint64(0)
	for b.Loop() {
		seed++
		if _, err := sim.Run(b.Context(), o, seed); err != nil {
			b.Fatal(err)
		}
	}
}
