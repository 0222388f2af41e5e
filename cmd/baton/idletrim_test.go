package main

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The trimmer trims settle after the start and after the last poke, never
// while pokes come more often than settle, and not again until poked.
func TestIdleTrimWaitsForQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var n atomic.Int32
		tr := startIdleTrim(ctx, 15*time.Second, func() { n.Add(1) })
		step := func(d time.Duration, want int32, what string) {
			t.Helper()
			time.Sleep(d)
			synctest.Wait()
			if got := n.Load(); got != want {
				t.Fatalf("%s: %d trims, want %d", what, got, want)
			}
		}
		step(10*time.Second, 0, "10 s after the start")
		tr.poke() // a run started
		step(10*time.Second, 0, "10 s after a run started (20 s after the start)")
		tr.poke() // and ended
		step(14*time.Second, 0, "14 s after the run ended")
		step(2*time.Second, 1, "16 s after the run ended")
		step(10*time.Minute, 1, "10 idle minutes later")
		tr.poke()
		step(16*time.Second, 2, "16 s after the next run")
		var nilTrimmer *idleTrimmer
		nilTrimmer.poke() // --once has none
	})
}

// 'baton run' runs on one P unless $GOMAXPROCS is set, which it obeys.
// Not parallel: it sets the test binary's GOMAXPROCS for a moment, before
// the parallel tests start.
func TestOneProcUnlessGOMAXPROCS(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(was)
	runtime.GOMAXPROCS(3)
	oneProc(func(string) string { return "3" })
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("with $GOMAXPROCS=3 set: GOMAXPROCS %d, want 3 (the operator's setting obeyed)", got)
	}
	oneProc(func(string) string { return "" })
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("without $GOMAXPROCS: GOMAXPROCS %d, want 1", got)
	}
}
