package memstore

import (
	"context"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// PreferJob implements store.Store.
func (s *Store) PreferJob(ctx context.Context, p store.JobPrefer) (store.Job, error) {
	return s.own().PreferJob(ctx, p)
}

// PreferJob implements store.Store: the job changes and the event is
// appended under the store's lock; the record does not change.
func (c *client) PreferJob(ctx context.Context, p store.JobPrefer) (store.Job, error) {
	return serve(ctx, c, func() (store.Job, error) {
		cur, ok := c.s.jobs[p.Name]
		if err := storedriver.CheckPrefer(p, cur, ok); err != nil {
			return store.Job{}, err
		}
		if err := c.s.settleLocked(p.Name); err != nil {
			return store.Job{}, err
		}
		at := c.s.now()
		out := storedriver.Prefer(p, cur)
		c.s.jobs[p.Name] = out
		if rec, ok := c.s.stored(p.Name); ok {
			log := c.s.logs[p.Name]
			c.s.logs[p.Name] = append(log, storedriver.PreferEvent(uint64(len(log))+1, rec, p, cur, at))
		}
		return out, nil
	})
}
