package storedriver

import (
	"fmt"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/store"
)

// CheckSwap validates s against the current record cur (cur.Version == 0 when
// the record does not exist). Backends call it inside their write
// transaction so that every backend enforces the same rules with the same
// errors.
func CheckSwap(cur store.Record, s store.Swap) error {
	if s.Record.Name == "" {
		return fmt.Errorf("%w: empty record name", store.ErrInvalid)
	}
	if err := store.CheckName(s.Record.Name); err != nil {
		return fmt.Errorf("election record: %w", err)
	}
	if cur.Version != s.Expect {
		return fmt.Errorf("%w: %q is at version %d, expected %d", store.ErrConflict, s.Record.Name, cur.Version, s.Expect)
	}
	if s.Record.Token < cur.Token {
		return fmt.Errorf("%w: token of %q would go back from %d to %d", store.ErrInvalid, s.Record.Name, cur.Token, s.Record.Token)
	}
	if s.Record.Holder == "" && s.Record.Incarnation != "" {
		return fmt.Errorf("%w: a free record of %q has an incarnation", store.ErrInvalid, s.Record.Name)
	}
	return nil
}

// CheckRunSwap validates s against the current ledger row cur (cur.Version ==
// 0 when the row does not exist) and, for a fenced swap, the current
// election token of the job. It returns store.ErrConflict, store.ErrInvalid or
// fence.ErrStaleToken, all wrapped with detail.
func CheckRunSwap(cur store.Run, s store.RunSwap, electionToken uint64) error {
	r := s.Run
	if r.Job == "" || r.Period == "" {
		return fmt.Errorf("%w: a run needs a job and a period", store.ErrInvalid)
	}
	if err := store.CheckName(r.Job); err != nil {
		return fmt.Errorf("run of job: %w", err)
	}
	if cur.Version != s.Expect {
		return fmt.Errorf("%w: run %s/%s is at version %d, expected %d", store.ErrConflict, r.Job, r.Period, cur.Version, s.Expect)
	}
	if cur.Version != 0 && cur.State == store.Done {
		return fmt.Errorf("%w: run %s/%s is already done", store.ErrInvalid, r.Job, r.Period)
	}
	if s.Fenced && r.Token != electionToken {
		return fmt.Errorf("%w: run %s/%s carries token %d, the election of %q is at token %d", fence.ErrStaleToken, r.Job, r.Period, r.Token, r.Job, electionToken)
	}
	return nil
}

// NextEvent returns the election log event that records the swap s applied
// with sequence number seq at store time of the new record rec.
func NextEvent(seq uint64, rec store.Record, kind store.EventKind) store.Event {
	return store.Event{
		Seq:         seq,
		Name:        rec.Name,
		Kind:        kind,
		Holder:      rec.Holder,
		Incarnation: rec.Incarnation,
		Token:       rec.Token,
		Transfer:    rec.Transfer,
		Time:        rec.Updated,
	}
}
