package fence_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/batonhq/baton/fence"
	"pgregory.net/rapid"
)

func TestGuardDo(t *testing.T) {
	errWork := errors.New("work failed")
	tests := []struct {
		name        string
		highest     uint64 // accepted before the call; 0: none
		fenceName   string
		token       uint64
		fnErr       error
		wantErr     error // nil, fence sentinel or errWork
		wantRan     bool
		wantHighest uint64
	}{
		{"first token", 0, "billing", 1, nil, nil, true, 1},
		{"newer token", 3, "billing", 4, nil, nil, true, 4},
		{"equal token", 3, "billing", 3, nil, nil, true, 3},
		{"jump ahead", 3, "billing", 10, nil, nil, true, 10},
		{"stale token", 3, "billing", 2, nil, fence.ErrStaleToken, false, 3},
		{"work fails: no raise", 3, "billing", 5, errWork, errWork, true, 3},
		{"empty name", 0, "", 1, nil, fence.ErrNoFence, false, 0},
		{"token zero", 0, "billing", 0, nil, fence.ErrInvalidToken, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := fence.NewGuard()
			if tt.highest > 0 {
				if err := g.Check(tt.fenceName, tt.highest); err != nil {
					t.Fatalf("Check(%d) before: %v", tt.highest, err)
				}
			}
			ran := false
			err := g.Do(tt.fenceName, tt.token, func() error { ran = true; return tt.fnErr })
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("Do: err = %v, want %v", err, tt.wantErr)
			}
			if ran != tt.wantRan {
				t.Errorf("fn ran = %v, want %v", ran, tt.wantRan)
			}
			if h := g.Highest(tt.fenceName); h != tt.wantHighest {
				t.Errorf("Highest = %d, want %d", h, tt.wantHighest)
			}
		})
	}
}

func TestGuardStaleErrorDetail(t *testing.T) {
	g := fence.NewGuard()
	if err := g.Check("billing", 7); err != nil {
		t.Fatal(err)
	}
	err := g.Check("billing", 6)
	want := `stale fencing token: a newer leader has already written: name "billing", token 6, highest 7`
	if !errors.Is(err, fence.ErrStaleToken) || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func TestGuardPanicRaisesNothing(t *testing.T) {
	g := fence.NewGuard()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic did not propagate")
			}
		}()
		_ = g.Do("billing", 5, func() error { panic("boom") })
	}()
	if h := g.Highest("billing"); h != 0 {
		t.Errorf("Highest after panic = %d, want 0", h)
	}
	// The lock was released: the name is usable again.
	if err := g.Check("billing", 1); err != nil {
		t.Errorf("Check after panic: %v", err)
	}
}

func TestGuardZeroValue(t *testing.T) {
	var g fence.Guard
	if h := g.Highest("x"); h != 0 {
		t.Errorf("Highest of unseen name = %d, want 0", h)
	}
	if err := g.Check("x", 2); err != nil {
		t.Fatal(err)
	}
	if err := g.Check("x", 1); !errors.Is(err, fence.ErrStaleToken) {
		t.Errorf("err = %v, want ErrStaleToken", err)
	}
}

func TestGuardNamesAreIndependent(t *testing.T) {
	g := fence.NewGuard()
	if err := g.Check("a", 9); err != nil {
		t.Fatal(err)
	}
	if err := g.Check("b", 1); err != nil {
		t.Errorf("token 1 for b after token 9 for a: %v", err)
	}
	// Do on "a" holds a's lock only: work on "b" proceeds meanwhile.
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- g.Do("a", 9, func() error { close(inside); <-release; return nil })
	}()
	<-inside
	if err := g.Check("b", 2); err != nil {
		t.Errorf("Check on b while a is busy: %v", err)
	}
	if h := g.Highest("a"); h != 9 {
		t.Errorf("Highest(a) during Do = %d, want 9", h)
	}
	close(release)
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// TestGuardConcurrent has many goroutines present random tokens for one
// name. The work records its token in a slice guarded by nothing but the
// Guard; the race detector checks that the Guard serialises it, and the
// recorded tokens must never decrease.
func TestGuardConcurrent(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	g := fence.NewGuard()
	var applied []uint64
	var stale, accepted [8]int
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for range 500 {
				tok := 1 + rng.Uint64N(50)
				err := g.Do("ledger", tok, func() error {
					applied = append(applied, tok)
					return nil
				})
				switch {
				case err == nil:
					accepted[w]++
				case errors.Is(err, fence.ErrStaleToken):
					stale[w]++
				default:
					t.Errorf("worker %d: %v", w, err)
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for w := range accepted {
		total += accepted[w]
	}
	if total != len(applied) {
		t.Fatalf("%d accepted, %d applied", total, len(applied))
	}
	for i := 1; i < len(applied); i++ {
		if applied[i] < applied[i-1] {
			t.Fatalf("seed %d: applied token %d after %d (position %d)", seed, applied[i], applied[i-1], i)
		}
	}
	if h := g.Highest("ledger"); len(applied) > 0 && h != applied[len(applied)-1] {
		t.Errorf("Highest = %d, last applied %d", h, applied[len(applied)-1])
	}
}

// TestGuardModel checks Guard against a map model on random sequences of
// Do calls over a few names, some of whose work fails.
func TestGuardModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := fence.NewGuard()
		model := map[string]uint64{}
		names := []string{"a", "b", "c"}
		n := rapid.IntRange(1, 60).Draw(t, "ops")
		for i := range n {
			name := rapid.SampledFrom(names).Draw(t, fmt.Sprintf("name%d", i))
			tok := rapid.Uint64Range(1, 20).Draw(t, fmt.Sprintf("token%d", i))
			fail := rapid.Bool().Draw(t, fmt.Sprintf("fail%d", i))
			ran := false
			err := g.Do(name, tok, func() error {
				ran = true
				if fail {
					return errors.New("work failed")
				}
				return nil
			})
			wantRun := tok >= model[name]
			if ran != wantRun {
				t.Fatalf("Do(%q, %d) with highest %d: ran = %v", name, tok, model[name], ran)
			}
			if !wantRun && !errors.Is(err, fence.ErrStaleToken) {
				t.Fatalf("Do(%q, %d) with highest %d: err = %v, want ErrStaleToken", name, tok, model[name], err)
			}
			if wantRun && !fail {
				model[name] = tok
			}
			for _, nm := range names {
				if got := g.Highest(nm); got != model[nm] {
					t.Fatalf("Highest(%q) = %d, model %d", nm, got, model[nm])
				}
			}
		}
	})
}
