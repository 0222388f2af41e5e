package kube

import (
	"context"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// SuspendJob implements store.Store: the job and the Suspended or Resumed
// event are one write of the name's Lease; the record does not change.
func (s *Store) SuspendJob(ctx context.Context, sj store.JobSuspend) (store.Job, error) {
	o, err := s.update(ctx, sj.Name, func(o *object) error {
		var cur store.Job
		if o.st.Job != nil {
			cur = *o.st.Job
		}
		if err := storedriver.CheckSuspend(sj, cur, o.st.Job != nil); err != nil {
			return err
		}
		at := s.now()
		cur = storedriver.Suspend(sj, cur, at)
		o.st.Job = &cur
		if rec, ok := o.record(); ok {
			o.appendEvent(func(seq uint64) store.Event { return storedriver.SuspendEvent(seq, rec, sj, at) })
		}
		o.st.Seq++
		return nil
	})
	if err != nil {
		return store.Job{}, err
	}
	return o.job(sj.Name), nil
}
