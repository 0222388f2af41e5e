package kube

import (
	"context"

	"github.com/batonhq/baton/store/storedriver"
)

// DeleteSession implements store.Store. The session's record is removed
// from its Lease and the spec cleared, in one compare-and-swap; the Lease
// stays, holding the session's election log (the contract keeps the log),
// a few hundred bytes.
func (s *Store) DeleteSession(ctx context.Context, name string, expect int64) error {
	_, err := s.update(ctx, name, func(o *object) error {
		cur, _ := o.record()
		if err := storedriver.CheckDeleteSession(name, cur, expect); err != nil {
			return err
		}
		o.st.Rec, o.recWritten = nil, true
		o.st.Seq = max(o.st.Seq, cur.Version)
		return nil
	})
	if err == nil {
		s.holds.forget(name) // a dead session's: its names are taken over, not released
	}
	return err
}
