package testenv

import (
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// TestDrawsCap: under a cap of 3 the property runs for 3 of rapid's
// draws; without one, for every draw rapid asks for.
func TestDrawsCap(t *testing.T) {
	capped := 0
	rapid.Check(t, newDraws(t, 3).Prop(func(*rapid.T) { capped++ }))
	if capped != 3 {
		t.Errorf("capped at 3, the property ran %d times", capped)
	}
	all := 0
	rapid.Check(t, newDraws(t, 0).Prop(func(*rapid.T) { all++ }))
	if all <= 3 {
		t.Errorf("uncapped, the property ran %d times", all)
	}
}

// TestDrawsFailureLiftsTheCap: a draw that fails lifts the cap, so that
// rapid shrinks the failure and replays it: it reports the failure as
// such, not as a flaky test it cannot reproduce (which it would if the
// replays returned at the cap).
func TestDrawsFailureLiftsTheCap(t *testing.T) {
	// No fail file in testdata: the failure is this test's doing.
	nofail := flag.Lookup("rapid.nofailfile")
	was := nofail.Value.String()
	nofail.Value.Set("true")
	defer nofail.Value.Set(was)
	for _, fatal := range []bool{true, false} {
		tb := &recordingTB{name: fmt.Sprintf("%s/fatal=%v", t.Name(), fatal)}
		calls := 0
		d := newDraws(tb, 2)
		prop := d.Prop(func(rt *rapid.T) {
			rapid.IntRange(0, 10).Draw(rt, "x")
			calls++
			if calls >= 2 { // the second draw and every replay fail
				if fatal {
					rt.Fatal("boom")
				}
				rt.Error("boom")
			}
		})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // FailNow ends this goroutine, as it ends a test
			defer wg.Done()
			rapid.Check(tb, prop)
		}()
		wg.Wait()
		tb.cleanup()
		msg := strings.Join(tb.errors, "\n")
		if !tb.failed || !strings.Contains(msg, "[rapid] failed after 1 tests") || strings.Contains(msg, "flaky") {
			t.Errorf("fatal %v: the failing draw was reported as %q", fatal, msg)
		}
		if calls <= 2 {
			t.Errorf("fatal %v: %d calls: the failure was not replayed", fatal, calls)
		}
	}
}

// recordingTB is a rapid.TB that records failures; FailNow ends the
// calling goroutine.
type recordingTB struct {
	testing.TB // nil: only the methods below are called
	name       string
	failed     bool
	errors     []string
	cleanups   []func()
}

func (r *recordingTB) Helper()                  {}
func (r *recordingTB) Name() string             { return r.name }
func (r *recordingTB) Logf(string, ...any)      {}
func (r *recordingTB) Log(...any)               {}
func (r *recordingTB) Skipf(f string, a ...any) { r.Fatalf(f, a...) }
func (r *recordingTB) Skip(a ...any)            { r.Fatal(a...) }
func (r *recordingTB) SkipNow()                 { r.FailNow() }
func (r *recordingTB) Errorf(f string, a ...any) {
	r.failed = true
	r.errors = append(r.errors, fmt.Sprintf(f, a...))
}
func (r *recordingTB) Error(a ...any)            { r.Errorf("%s", fmt.Sprint(a...)) }
func (r *recordingTB) Fatalf(f string, a ...any) { r.Errorf(f, a...); r.FailNow() }
func (r *recordingTB) Fatal(a ...any)            { r.Error(a...); r.FailNow() }
func (r *recordingTB) FailNow()                  { r.failed = true; runtime.Goexit() }
func (r *recordingTB) Fail()                     { r.failed = true }
func (r *recordingTB) Failed() bool              { return r.failed }
func (r *recordingTB) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}
