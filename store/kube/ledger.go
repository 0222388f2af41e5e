package kube

import (
	"context"
	"fmt"
	"slices"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// EnsureJob implements store.Store.
func (s *Store) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	if j.Name == "" {
		return store.Job{}, fmt.Errorf("%w: empty job name", store.ErrInvalid)
	}
	if err := store.CheckName(j.Name); err != nil {
		return store.Job{}, err
	}
	if err := storedriver.CheckJob(j); err != nil {
		return store.Job{}, err
	}
	o, err := s.update(ctx, j.Name, func(o *object) error {
		if o.st.Job != nil {
			return errNoWrite
		}
		j.Created, j.Suspension = s.now(), store.Suspension{}
		o.st.Job = &j
		o.st.Seq++
		return nil
	})
	if err != nil {
		return store.Job{}, err
	}
	return o.job(j.Name), nil
}

// job returns the stored job, named name.
func (o object) job(name string) store.Job {
	j := *o.st.Job
	j.Name = name
	return j
}

// GetJob implements store.Store.
func (s *Store) GetJob(ctx context.Context, name string) (store.Job, error) {
	o, err := s.read(ctx, name)
	if err != nil {
		return store.Job{}, err
	}
	if o.st.Job == nil {
		return store.Job{}, fmt.Errorf("job %q: %w", name, store.ErrNotFound)
	}
	return o.job(name), nil
}

// run returns the ledger row of period, refusing a damaged one.
func (o object) run(period string) (store.Run, bool, error) {
	r, ok := o.st.Runs[period]
	if !ok {
		return store.Run{}, false, nil
	}
	r.Job, r.Period = o.st.Name, period
	if err := store.CheckRunState(r.Job, period, r.State); err != nil {
		return store.Run{}, true, err
	}
	return r, true, nil
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	o, err := s.read(ctx, job)
	if err != nil {
		return store.Run{}, err
	}
	r, ok, err := o.run(period)
	if err != nil {
		return store.Run{}, err
	}
	if !ok {
		return store.Run{}, fmt.Errorf("run %s/%s: %w", job, period, store.ErrNotFound)
	}
	return r, nil
}

// SwapRun implements store.Store: the row, the job's suspension and the
// election token it is fenced by are in one Lease, compared and written
// in one compare-and-swap.
func (s *Store) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	if err := store.CheckName(sw.Run.Job); err != nil {
		return store.Run{}, err
	}
	var out store.Run
	_, err := s.update(ctx, sw.Run.Job, func(o *object) error {
		cur, _, err := o.run(sw.Run.Period)
		if err != nil {
			return err
		}
		if err := storedriver.CheckRunSwap(cur, sw, o.token()); err != nil {
			return err
		}
		var job store.Job
		if o.st.Job != nil {
			job = *o.st.Job
		}
		if err := storedriver.CheckRunSuspended(sw, job, o.st.Job != nil); err != nil {
			return err
		}
		r := sw.Run
		r.Version = o.next()
		stored := r
		stored.Job, stored.Period = "", ""
		if o.st.Runs == nil {
			o.st.Runs = map[string]store.Run{}
		}
		o.st.Runs[r.Period] = stored
		out = r
		return nil
	})
	if err != nil {
		return store.Run{}, err
	}
	return out, nil
}

// keys returns the ledger's period keys, sorted.
func (o object) keys() []string {
	ks := make([]string, 0, len(o.st.Runs))
	for k := range o.st.Runs {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// rows returns the rows of keys, refusing a damaged one.
func (o object) rows(keys []string) ([]store.Run, error) {
	out := make([]store.Run, 0, len(keys))
	for _, k := range keys {
		r, _, err := o.run(k)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	o, err := s.read(ctx, job)
	if err != nil {
		return nil, err
	}
	ks := o.keys()
	i, found := slices.BinarySearch(ks, after)
	if found {
		i++
	}
	ks = ks[i:]
	if limit > 0 && len(ks) > limit {
		ks = ks[:limit]
	}
	return o.rows(ks)
}

// RecentRuns implements store.Store.
func (s *Store) RecentRuns(ctx context.Context, job, before string, limit int) ([]store.Run, error) {
	o, err := s.read(ctx, job)
	if err != nil {
		return nil, err
	}
	ks := o.keys()
	if before != "" {
		i, _ := slices.BinarySearch(ks, before)
		ks = ks[:i]
	}
	slices.Reverse(ks)
	if limit > 0 && len(ks) > limit {
		ks = ks[:limit]
	}
	return o.rows(ks)
}

// PruneRuns implements store.Store.
func (s *Store) PruneRuns(ctx context.Context, p store.Prune) (int, error) {
	n := 0
	_, err := s.update(ctx, p.Job, func(o *object) error {
		n = 0
		if err := storedriver.CheckPrune(p, o.token()); err != nil {
			return err
		}
		ks := o.keys()
		newest := "" // the newest scheduled row is kept
		for i := len(ks) - 1; i >= 0; i-- {
			if !o.st.Runs[ks[i]].Manual {
				newest = ks[i]
				break
			}
		}
		keepKey := ""
		if p.Keep > 0 && len(ks) >= p.Keep {
			keepKey = ks[len(ks)-p.Keep]
		}
		before := storedriver.PruneBound(p, keepKey)
		for _, k := range ks {
			if k >= before || n == p.Limit {
				break
			}
			if r := o.st.Runs[k]; k != newest && slices.Contains(p.States, r.State) {
				delete(o.st.Runs, k)
				n++
			}
		}
		if n == 0 {
			return errNoWrite
		}
		o.st.Seq++
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// UpdateJob implements store.Store: the job, the record's version and the
// Rescheduled event are one write of the name's Lease.
func (s *Store) UpdateJob(ctx context.Context, u store.JobUpdate) (store.Job, error) {
	o, err := s.update(ctx, u.Name, func(o *object) error {
		var cur store.Job
		if o.st.Job != nil {
			cur = *o.st.Job
		}
		if err := storedriver.CheckJobUpdate(u, cur, o.st.Job != nil); err != nil {
			return err
		}
		cur.Schedule = u.Schedule
		o.st.Job = &cur
		if rec, ok := o.record(); ok {
			rec.Version = o.next()
			rec.Updated = s.now()
			stored := rec
			stored.Name = ""
			o.st.Rec, o.recWritten = &stored, true
			o.appendEvent(func(seq uint64) store.Event { return storedriver.RescheduledEvent(seq, rec, u, rec.Updated) })
		} else {
			o.st.Seq++
		}
		return nil
	})
	if err != nil {
		return store.Job{}, err
	}
	return o.job(u.Name), nil
}
