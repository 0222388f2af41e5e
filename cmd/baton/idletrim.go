package main

import (
	"context"
	"runtime/debug"
	"time"
)

// idleSettle is how long 'baton run' goes without starting or finishing
// a run before it hands back the memory it is not using while it waits.
const idleSettle = 15 * time.Second

// idleTrimmer hands back, once 'baton run' has settled (idleSettle
// after it started, or after its last run ended, without a run since),
// the memory an idle node does not use: the Go heap's free pages
// (debug.FreeOSMemory) and, on Linux, the pages of baton's own
// executable that start-up and the run touched (dropExecutablePages).
//
// An idle node keeps only what it uses to wait: its renewals, its
// reads and the change feed fault back in the pages they run. What is
// NOT done: the executable's pages are not freed from the host's page
// cache by this; they stop counting in this process's RSS, and the kernel
// reclaims them or keeps them as it needs, like any unmapped file page.
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
// back to the system, then the executable's pages out of its RSS.
func trimIdle() {
	debug.FreeOSMemory()
	dropExecutablePages() //nolint:errcheck // best effort: an error leaves the pages mapped, as before
}
