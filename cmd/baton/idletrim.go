package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"
)

// oneProc lets 'baton run' and its command's supervisor run Go code on one
// thread at a time (GOMAXPROCS 1) unless $GOMAXPROCS says otherwise. What
// they do is wait: a renewal every few seconds, a store read a second, a
// command's output copied through. With a P per core, each of those wakes
// also wakes an idle P's thread to look for work that is not there: on 2
// cores, an idle SQLite node woke 56-57 times a second at 0.21-0.25% of
// a core, against 33-39 times and 0.19-0.21% with one P (two pairs side
// by side, BENCHMARKS.md). A node that holds many names in one process
// is a library program (baton.Group) and keeps the runtime's default.
func oneProc(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}

// idleSettle is how long 'baton run' goes without starting or finishing
// a run before it hands back the memory it is not using while it waits.
const idleSettle = 15 * time.Second

// idleTrimmer hands back, once 'baton run' has settled (idleSettle
// after it started, or after its last run ended, without a run since),
// the Go heap's free pages (debug.FreeOSMemory): what start-up and the
// last run allocated and no longer use, which the runtime would otherwise
// return only slowly.
//
// What is NOT done: the pages of baton's own executable that start-up
// touched stay mapped and count in the process's RSS. They are clean
// pages of the file, shared by every baton process of the host through
// the page cache; unmapping them (madvise) would lower RSS without
// freeing any of the host's memory, so it is not done.
type idleTrimmer struct {
	kick   chan struct{}
	settle time.Duration
	trim   func()
}

// startIdleTrim starts the trimmer: it trims settle after the start and
// settle after every poke, until ctx ends. A node whose runs come more
// often than settle is not idle and is never trimmed.
func startIdleTrim(ctx context.Context, settle time.Duration, trim func()) *idleTrimmer {
	t := &idleTrimmer{kick: make(chan struct{}, 1), settle: settle, trim: trim}
	t.kick <- struct{}{}
	go t.loop(ctx)
	return t
}

func (t *idleTrimmer) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.kick:
		}
		timer := time.NewTimer(t.settle)
		for quiet := false; !quiet; {
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-t.kick:
				timer.Reset(t.settle)
			case <-timer.C:
				quiet = true
			}
		}
		t.trim()
	}
}

// poke says a run started or ended: the trim waits for settle again.
// A nil trimmer does nothing.
func (t *idleTrimmer) poke() {
	if t == nil {
		return
	}
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// trimIdle is the trim of a settled 'baton run': the heap's free pages
// back to the system.
func trimIdle() { debug.FreeOSMemory() }
