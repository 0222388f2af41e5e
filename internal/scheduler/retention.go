package scheduler

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/batonhq/baton/store"
)

// Retention says how long finished rows stay in the ledger: a done or
// skipped row is pruned once it is older than Age or once Rows newer rows
// exist, whichever comes first (schedule.Retention). A zero field sets no
// bound of its kind; the zero Retention prunes nothing.
type Retention struct {
	Age  time.Duration
	Rows int
}

// On reports whether r prunes anything.
func (r Retention) On() bool { return r.Age > 0 || r.Rows > 0 }

// Prune returns the store request that deletes job's rows in states past
// r at wall time now, at most limit of them: rows older than r.Age (a
// period key below now - r.Age) or not among the r.Rows newest. It is the
// one rule, used by the machine and by "baton prune" (schedule.Prune).
func (r Retention) Prune(job string, now time.Time, states []store.RunState, limit int) store.Prune {
	p := store.Prune{Job: job, States: states, Limit: limit, Keep: r.Rows}
	if r.Age > 0 {
		p.Before = Key(now.Add(-r.Age))
	}
	return p
}

// PruneStates are the states the machine prunes: failed rows stay until
// they are re-run or pruned by hand.
var PruneStates = []store.RunState{store.Done, store.Skipped}

// Prune asks for store.PruneRuns(Prune); answer Pruned.
type Prune struct{ Prune store.Prune }

// Pruned answers Prune: how many rows were deleted.
type Pruned struct {
	N   int
	Err error
}

func (Prune) action() {}
func (Pruned) event() {}

// pruneDue reports whether the machine prunes now instead of waiting:
// retention is on, the ledger was read this term (the cursor is set), the
// wall clock is trusted (a prune by age reads it; see the clock guard),
// and a round is due or one is under way.
func (m *Machine) pruneDue(now time.Time) bool {
	return m.cfg.Retention.On() && m.cursor != "" && !m.skewed && (m.pruning || !now.Before(m.nextPrune))
}

// prune deletes one batch of rows past the retention, fenced by the term's
// token. A round is batches until one comes back short.
func (m *Machine) prune(now time.Time) []Action {
	m.pruning = true
	states := PruneStates
	if m.cfg.Mutate.PruneFailed {
		states = append(slices.Clip(states), store.Failed)
	}
	ret := m.cfg.Retention
	if m.cfg.Mutate.PruneEarly {
		ret.Age, ret.Rows = ret.Age/2, (ret.Rows+1)/2
	}
	p := ret.Prune(m.cfg.Job, now, states, m.cfg.PruneBatch)
	p.Fenced, p.Token = !m.cfg.Unfenced, m.token
	m.op = opPrune
	return []Action{Prune{Prune: p}}
}

func (m *Machine) prunedReply(now time.Time, r Pruned) []Action {
	if !m.answered(opPrune) {
		return nil
	}
	switch {
	case errors.Is(r.Err, store.ErrStaleToken):
		return m.halt(r.Err)
	case r.Err != nil:
		if store.Permanent(r.Err) {
			m.phase = failed
			return []Action{Fail{Err: fmt.Errorf("pruning the ledger: %w", r.Err)}}
		}
		// Pruning can always wait: the next round tries again.
		m.pruning, m.pruned, m.nextPrune = false, 0, now.Add(m.cfg.PruneEvery)
		return append([]Action{Note{Level: slog.LevelWarn, Msg: "pruning the ledger failed; trying again at the next round", Err: r.Err}}, m.wait(now)...)
	case r.N >= m.cfg.PruneBatch:
		// More to delete: a pass first (due periods come before
		// pruning), then the next batch when the machine would wait.
		m.pruned += r.N
		return m.pass(now)
	}
	n := m.pruned + r.N
	m.pruning, m.pruned, m.nextPrune = false, 0, now.Add(m.cfg.PruneEvery)
	var acts []Action
	if n > 0 {
		acts = append(acts, Note{Level: slog.LevelInfo, Msg: fmt.Sprintf("pruned %d rows past the retention", n)})
	}
	return then(acts, m.wait(now))
}
