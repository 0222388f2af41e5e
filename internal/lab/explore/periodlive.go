package explore

import (
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/lab/vcluster"
)

// This file is the liveness check of the job's periods (Work.Live): once
// faults stop, every period due early enough is finished, as the
// simulator judges it at a run's end (vcluster.Finishes, Settle, CatchUp
// and Unfinished; package sim's liveness).
//
// In a configuration explored to completion (MaxDepth 0) whose store is
// prompt (Config.Prompt: every store call applied and answered within
// the instant it is sent, and every run on a running node ended within
// the instant it starts), every path goes on until time reaches the
// horizon End: a node's due timers fire before time moves on, and
// nothing else holds time still (the exploration fails if a state before
// End has no event at all). The faults (crashes, pauses, failed or
// lost answers), the operator's suspension and resume come only before
// the limit L = End - Settle - CatchUp (Config.PeriodLimit); restarts
// and resumes of paused processes may come at any instant. So every
// state at End lies on a path whose faults stopped at least
// Settle + CatchUp before it, and in every such state every period due
// after the job's creation and at or before L must be finished (done,
// failed, or skipped by the policy), unless the job is suspended then:
// the machine claims and skips nothing while it is, so a suspension
// never resumed excuses every period it holds up, and the check demands
// none (not even those due long before it: a fault may have come just
// before the suspension). Finishing only grows here (no retention, no
// backfill), so the first state at End decides for the others.

// PeriodLimit is, with Work.Live, the latest instant (true time from the
// start) at which a period may be due and be demanded finished at the
// horizon, and the instant before which the faults, the suspension and
// the resume come: End less
//
//   - vcluster.Settle: how long the shipping machines may take to lead
//     again after the last fault (a poll to read the record, the lease
//     and twice the margin unchanged on the contender's clock, a poll to
//     take it; Validate holds every clock rate at 1 or above, so that a
//     timer of d on a node's clock fires within d of true time), with
//     the policy's jitter;
//   - vcluster.CatchUp: how long the leader then takes to work off the
//     backlog, every period due by the horizon at most, with no latency
//     (the store is prompt, and a run ends within the instant it
//     starts) and a slack of one scheduler poll: the retry after a
//     store answer that failed or was lost, or the job read that sees
//     the resume (the machine reads a suspended job every poll).
func (c *Config) PeriodLimit() time.Duration {
	wk := c.Work
	backlog := int((c.End-wk.Created)/wk.Period) + 1
	return c.End - vcluster.Settle(c.Lease, c.Margin, c.Poll, wk.Policy.Jitter) - vcluster.CatchUp(backlog, 0, wk.Poll)
}

// faulty reports whether a fault (or the operator's suspension or
// resume) may come now: always, but with Work.Live only before
// PeriodLimit.
func (w *world) faulty() bool {
	wk := w.c.Work
	return wk == nil || !wk.Live || w.now < w.c.PeriodLimit()
}

// running reports whether a run is on at a running node: with
// Config.Prompt, time does not move on until it ends.
func (w *world) running() bool {
	for i, n := range w.nodes {
		if w.live(i) && n.eff.on {
			return true
		}
	}
	return false
}

// finish records, with Work.Live, that a committed write finished the
// period k (vcluster.Finishes).
func (w *world) finish(k string) {
	if !w.c.Work.Live {
		return
	}
	if j, ok := slices.BinarySearch(w.finished, k); !ok {
		w.finished = slices.Insert(w.finished, j, k) // clone gave this state its own
	}
}

// checkPeriods is the period liveness check, in every state at the
// horizon: vcluster.Unfinished of the periods due after the job's
// creation and at or before PeriodLimit.
func (w *world) checkPeriods() error {
	wk := w.c.Work
	if wk == nil || !wk.Live || w.c.unjudged || w.now < w.c.End || w.job.Suspension.Active() {
		return nil
	}
	limit := w.c.PeriodLimit()
	k, due, _ := vcluster.Unfinished(wk.every(), w.job.Created, t0.Add(limit), func(k string) bool {
		_, ok := slices.BinarySearch(w.finished, k)
		return ok
	})
	if k == "" {
		return nil
	}
	return fmt.Errorf("liveness: period %s (due at %v) was not finished at the horizon %v, %v after the last fault, suspension or resume could come",
		k, due.Sub(t0), w.c.End, w.c.End-limit)
}
