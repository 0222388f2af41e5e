package vcluster

import (
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// FaultKind is one kind of fault event: the one fault vocabulary of the
// simulator and both drill modes.
type FaultKind int

// Fault kinds.
const (
	Cut              FaultKind = iota + 1 // the node's store calls fail
	Reconnect                             // they succeed again
	Freeze                                // no code of the node runs (SIGSTOP, a GC pause)
	Thaw                                  // it runs again
	ArmFreeze                             // freeze when the next effect starts, after its Valid() check
	Disarm                                // no longer; thaws a node frozen that way
	Crash                                 // the process dies
	Restart                               // a new incarnation starts
	SetRate                               // the node's clock runs at Rate
	SetLatency                            // the node's store calls take Latency each way
	Resign                                // the node resigns if it leads
	Transfer                              // an operator transfers the lead to node To
	ArmPause                              // freeze when the next effect is about to start, before its Valid() check
	ArmPauseInFlight                      // freeze right after sending the next ledger call
	ResignAll                             // the node gives every name up at once (baton.Group.Close) and campaigns again
	Suspend                               // an operator suspends the job (Store.SuspendJob); Node is ignored
	Resume                                // an operator resumes it
	Backfill                              // an operator backfills the periods due From to Until (baton backfill); Node is ignored
	StepClock                             // the node's wall clock is Offset off the true time (a step; 0: set right), in a term from its next clock check
	FeedBreak                             // the node's change feed closes (a watch lost, its calls unharmed): notifications are lost
	FeedHeal                              // a new feed opens
	// ArmFreezeLocked: freeze right after the next effect starts, holding
	// the store's write lock (baton stopped inside a SQLite write
	// transaction), for Hold: meanwhile every other process's store
	// write fails as unavailable (reads go on), a supervisor's record
	// (Config.SupervisorRecords) waits and lands RecordAfter after the
	// thaw. A crash lets the lock go too.
	ArmFreezeLocked
)

var faultNames = map[FaultKind]string{
	Cut: "cut", Reconnect: "reconnect", Freeze: "freeze", Thaw: "thaw", ArmFreeze: "arm-freeze-before-write",
	Disarm: "disarm", Crash: "crash", Restart: "restart", SetRate: "set-rate", SetLatency: "set-latency",
	Resign: "resign", Transfer: "transfer", ArmPause: "arm-freeze-before-check",
	ArmPauseInFlight: "arm-freeze-in-flight", ResignAll: "resign-all",
	Suspend: "suspend", Resume: "resume", Backfill: "backfill", StepClock: "step-clock",
	FeedBreak: "feed-break", FeedHeal: "feed-heal", ArmFreezeLocked: "arm-freeze-holding-lock",
}

// String names the fault kind.
func (k FaultKind) String() string { return faultNames[k] }

// Fault is one fault event.
type Fault struct {
	At      time.Duration
	Node    int
	Kind    FaultKind
	Rate    float64       // SetRate
	Latency time.Duration // SetLatency
	Offset  time.Duration // StepClock: business time, ahead when positive
	To      int           // Transfer
	Name    int           // Resign, Transfer: which name (0: Job, i: "shard-i")
	// From and Until are the virtual instants a Backfill covers.
	From, Until time.Duration
	// Hold is how long an ArmFreezeLocked node stays frozen holding the
	// store's write lock; RecordAfter how long after the thaw a
	// supervisor's record that waited for the lock lands.
	Hold, RecordAfter time.Duration
}

func (e *engine) fault(f Fault) {
	n := e.nodes[f.Node]
	e.unobserve() // a crash, restart, freeze, thaw, a clock's rate
	e.out.FaultsInjected[f.Kind]++
	if e.tracing() {
		e.tracef("fault: %s %v", n.id, f.Kind)
	}
	e.note(n, Happening{Kind: FaultBegan, Fault: f.Kind.String()})
	switch f.Kind {
	case Cut:
		if !n.cut {
			e.feed(n, false) // its notifications are lost from now on
		}
		n.cut = true
	case Reconnect:
		was := n.cut
		n.cut = false
		if was {
			e.feed(n, true) // watched again
		}
	case FeedBreak:
		if !n.feedDown {
			e.feed(n, false)
		}
		n.feedDown = true
	case FeedHeal:
		was := n.feedDown
		n.feedDown = false
		if was {
			e.feed(n, true)
		}
	case Freeze:
		if n.up {
			n.frozen = true
		}
	case Thaw:
		if e.lock.holder == n.idx && e.lock.inc == n.inc && n.frozen && !n.frozenByEffect {
			e.unlock(f.RecordAfter)
		}
		if n.frozen && !n.frozenByEffect {
			e.resume(n)
		}
		e.clockThawed(n)
	case ArmFreezeLocked:
		n.armedLocked, n.lockHold, n.lockRecordAfter = true, f.Hold, f.RecordAfter
	case ArmFreeze:
		n.armed = true
	case ArmPause:
		n.armedBeforeCheck = true
	case ArmPauseInFlight:
		n.armedInFlight = true
	case Disarm:
		n.armed, n.armedBeforeCheck, n.armedInFlight, n.armedLocked = false, false, false, false
		if n.frozen && n.frozenByEffect {
			e.resume(n)
		}
		e.clockThawed(n)
	case Crash:
		if e.lock.holder == n.idx && e.lock.inc == n.inc {
			e.unlock(n.lockRecordAfter) // the process's locks die with it
		}
		if n.up {
			n.up, n.frozen, n.frozenByEffect, n.mailbox = false, false, false, nil
			e.setJobTerm(n, 0)
			n.pending = nil
			clear(n.held)
		}
	case Restart:
		if !n.up {
			n.up, n.feedDown = true, false // a new process opens a feed of its own
			e.newMachine(n)
			e.feed(n, true)
			e.campaign(n)
		}
	case SetRate:
		n.l0, n.t0, n.rate = sinceEpoch(n.local(e.now)), e.now, f.Rate
		n.localOK = false        // the last reading was the old clock's
		n.expiryOK = false       // and so was the term's expiry
		n.tickNext = time.Time{} // the queued tick's instant is the old clock's
		e.rateChanged()
		if n.up && !n.frozen {
			e.armTimer(n)
		}
	case StepClock:
		n.stepTo, n.stepping = f.Offset, true
		if !n.sm.Working() {
			e.landStep(n)
		}
	case SetLatency:
		n.latency = f.Latency
	case Resign:
		name := e.names[f.Name%len(e.names)]
		if h := n.termOf(f.Name % len(e.names)); n.up && !n.frozen && h.token != 0 {
			e.step(n, election.Resign{Name: name, Token: h.token})
		}
	case ResignAll:
		if n.up && !n.frozen {
			// Every term ends and, through a session, one write frees
			// every name; the node campaigns again as each term ends.
			e.step(n, election.Resign{})
			e.campaign(n)
		}
	case Suspend, Resume:
		_, err := e.c.Store.SuspendJob(e.ctx, store.JobSuspend{Name: Job, Suspend: f.Kind == Suspend, By: "operator", Reason: "simulated"})
		e.tracef("operator: %v %s: %v", f.Kind, Job, err)
		e.dirty(0)
	case Backfill:
		e.backfill(f)
	case Transfer:
		i := f.Name % len(e.names)
		if rec, err := e.c.Store.Get(e.ctx, e.names[i]); err == nil {
			err = baton.Transfer(e.ctx, e.c.Store, e.names[i], e.nodes[f.To].id, rec.Token)
			if i == 0 {
				e.tracef("operator: transfer to %s at token %d: %v", e.nodes[f.To].id, rec.Token, err)
			} else {
				e.tracef("operator: transfer of %s to %s at token %d: %v", e.names[i], e.nodes[f.To].id, rec.Token, err)
			}
			e.dirty(i)
			if err == nil {
				rec, _ := e.c.Store.Get(e.ctx, e.names[i])
				e.notify(e.names[i], true, rec.Version)
			}
		}
	}
}

// resume thaws a frozen node. An effect it was about to start happens
// first: it passed its Valid() check before it froze. Then everything that
// arrived while it was frozen, then its timers.
func (e *engine) resume(n *node) {
	n.frozen, n.frozenByEffect, n.effFroze = false, false, true
	if a := n.pending; a != nil {
		n.pending = nil
		if n.pendingChecked {
			e.runEffect(n, *a)
		} else {
			e.startEffect(n, *a)
		}
	}
	mail := n.mailbox
	n.mailbox = nil
	for i := range mail {
		if ev := &mail[i]; ev.kind == evReply || ev.kind == evWorkReply || ev.kind == evNodeTrigger || ev.kind == evEffectDone || ev.kind == evStepDown || ev.kind == evCollected || ev.kind == evEffectSeen || ev.kind == evPrefer || ev.kind == evPreferReply || ev.kind == evCandRead || ev.kind == evCandReply {
			e.dispatch(ev)
		}
	}
	if n.up {
		n.tickQueued = false // a tick that came while frozen was dropped
		e.step(n, election.Tick{})
		if n.sm != nil {
			e.armWork(n)
		}
	}
}
