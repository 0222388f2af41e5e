package vcluster

import (
	"time"

	"github.com/batonhq/baton/internal/scheduler"
)

// This file is the liveness judgement of the job's periods, which the
// simulator applies at a run's end (package sim's liveness) and the
// explorer in every state at its horizon (package explore's periodlive):
// what finishes a period, how long a cluster may take to finish the
// periods due once faults stop, and which periods are due early enough.

// Finishes reports whether a committed ledger write a finishes its
// period for the liveness check: a completion (done, or failed: a
// failed attempt counts, whether or not a retry follows) or a skip by
// the policy (the checker judged every skip when it was written).
// Outcome.Finished keeps, per period, the last such write.
func Finishes(a scheduler.SwapRun) bool {
	return a.Kind == scheduler.KindComplete || a.Kind == scheduler.KindSkip
}

// Settle is how long after the last fault a node may take to lead again:
// a contender reads the record within a poll and takes it over once it
// has seen it unchanged for the lease and twice the margin, read at its
// next poll; a jitter delays the first run of the new term.
func Settle(lease, margin, poll, jitter time.Duration) time.Duration {
	return lease + 2*margin + 2*poll + jitter
}

// CatchUp is how long a leader may take, once it leads after the last
// fault, to work off a backlog of n periods: one period at a time, four
// store round trips each (read the job, read the ledger, claim,
// complete), a round trip two latencies; slack is what the runs
// themselves and the machine's own waits add (its retries, a poll to
// learn of a resume).
func CatchUp(n int, latency, slack time.Duration) time.Duration {
	return time.Duration(n)*8*latency + slack
}

// Unfinished is the liveness check of the periods: it walks the periods
// of s due after from (the job's creation) and at or before limit (the
// end less Settle and CatchUp, in the job's time), and returns the
// first one that finished does not report finished ("" if none), when
// it was due, and how many periods it walked.
func Unfinished(s scheduler.Schedule, from, limit time.Time, finished func(key string) bool) (key string, due time.Time, checked int) {
	for t := s.Next(from); !t.IsZero() && !t.After(limit); t = s.Next(t) {
		checked++
		if k := scheduler.Key(t); !finished(k) {
			return k, t, checked
		}
	}
	return "", time.Time{}, checked
}
