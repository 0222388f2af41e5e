package kube

import (
	"context"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// PreferJob implements store.Store: the job and the PreferChanged event
// are one write of the name's Lease; the record does not change.
func (s *Store) PreferJob(ctx context.Context, p store.JobPrefer) (store.Job, error) {
	o, err := s.update(ctx, p.Name, func(o *object) error {
		var cur store.Job
		if o.st.Job != nil {
			cur = *o.st.Job
		}
		if err := storedriver.CheckPrefer(p, cur, o.st.Job != nil); err != nil {
			return err
		}
		at := s.now()
		out := storedriver.Prefer(p, cur)
		o.st.Job = &out
		if rec, ok := o.record(); ok {
			o.appendEvent(func(seq uint64) store.Event { return storedriver.PreferEvent(seq, rec, p, cur, at) })
		}
		o.st.Seq++
		return nil
	})
	if err != nil {
		return store.Job{}, err
	}
	return o.job(p.Name), nil
}
