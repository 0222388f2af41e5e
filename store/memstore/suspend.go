package memstore

import (
	"context"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// SuspendJob implements store.Store.
func (s *Store) SuspendJob(ctx context.Context, sj store.JobSuspend) (store.Job, error) {
	return s.own().SuspendJob(ctx, sj)
}

// SuspendJob implements store.Store: the job changes and the event is
// appended under the store's lock; the record does not change.
func (c *client) SuspendJob(ctx context.Context, sj store.JobSuspend) (store.Job, error) {
	return serve(ctx, c, func() (store.Job, error) {
		cur, ok := c.s.jobs[sj.Name]
		if err := storedriver.CheckSuspend(sj, cur, ok); err != nil {
			return store.Job{}, err
		}
		if err := c.s.settleLocked(sj.Name); err != nil {
			return store.Job{}, err
		}
		at := c.s.now()
		cur = storedriver.Suspend(sj, cur, at)
		c.s.jobs[sj.Name] = cur
		if rec, ok := c.s.stored(sj.Name); ok {
			log := c.s.logs[sj.Name]
			c.s.logs[sj.Name] = append(log, storedriver.SuspendEvent(uint64(len(log))+1, rec, sj, at))
		}
		return cur, nil
	})
}
