package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// EnsureJob implements store.Store.
func (s *Store) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	return s.own().EnsureJob(ctx, j)
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	return s.own().GetRun(ctx, job, period)
}

// SwapRun implements store.Store.
func (s *Store) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	var r store.Run
	err := s.swapRun(ctx, "", &r, &sw)
	return r, err
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	return s.own().Runs(ctx, job, after, limit)
}
func (c *client) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	if j.Name == "" {
		return store.Job{}, fmt.Errorf("%w: empty job name", store.ErrInvalid)
	}
	if err := storedriver.CheckJob(j); err != nil {
		return store.Job{}, err
	}
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Job{}, err
	}
	c.s.mu.Lock()
	got, ok := c.s.jobs[j.Name]
	if !ok {
		j.Created, j.Suspension = c.s.now(), store.Suspension{}
		c.s.jobs[j.Name] = j
		got = j
	}
	c.s.mu.Unlock()
	return got, c.s.leave(ctx, c.node)
}

func (c *client) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Run{}, err
	}
	c.s.mu.Lock()
	var r store.Run
	rows := c.s.runs[job]
	i, ok := findRun(rows, period)
	if ok {
		r = rows[i]
	}
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return store.Run{}, err
	}
	if !ok {
		return store.Run{}, fmt.Errorf("run %s/%s: %w", job, period, store.ErrNotFound)
	}
	if err := store.CheckRunState(job, period, r.State); err != nil {
		return store.Run{}, err
	}
	return r, nil
}

func (c *client) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	var r store.Run
	err := c.s.swapRun(ctx, c.node, &r, &sw)
	return r, err
}

// swapRun is SwapRun through node's view (Client), into *dst (the zero
// row on an error): serve's steps, written out, as swap's.
func (s *Store) swapRun(ctx context.Context, node string, dst *store.Run, sw *store.RunSwap) error {
	if err := s.enter(ctx, node); err != nil {
		return err
	}
	s.mu.Lock()
	err := s.swapRunLocked(dst, sw)
	s.mu.Unlock()
	if lerr := s.leave(ctx, node); lerr != nil {
		err = lerr
	}
	if err != nil {
		*dst = store.Run{}
	}
	return err
}

// swapRunLocked applies the ledger write *sw, which it does not change,
// and writes the row it stored to *dst, left as it is on an error; s.mu
// must be held.
func (s *Store) swapRunLocked(dst *store.Run, sw *store.RunSwap) error {
	var none store.Run // the row of a period without one
	cur := &none
	rows := s.runs[sw.Run.Job]
	i, had := findRun(rows, sw.Run.Period)
	if had {
		cur = &rows[i] // read in place: a row is large to copy
	}
	if cur.Version != 0 && !cur.State.Known() { // a damaged row (a new one has no state)
		return store.CheckRunState(sw.Run.Job, sw.Run.Period, cur.State)
	}
	token, err := s.tokenLocked(sw.Run.Job)
	if err != nil {
		return err
	}
	if err := storedriver.CheckRunSwap(*cur, *sw, token); err != nil {
		return err
	}
	job, found := s.jobs[sw.Run.Job]
	if err := storedriver.CheckRunSuspended(*sw, job, found); err != nil && !s.ignoreSuspension {
		return err
	}
	s.version++
	r := sw.Run
	r.Version = s.version
	if had {
		rows[i] = r
	} else {
		s.runs[r.Job] = slices.Insert(rows, i, r)
	}
	*dst = r
	return nil
}

// findRun returns the index of the row of period in rows (one job's, in
// period order) and true, or where it would be inserted and false. A new
// period is mostly the newest: that is looked at first.
func findRun(rows []store.Run, period string) (int, bool) {
	i, j := 0, len(rows)
	if j > 0 && rows[j-1].Period < period {
		return j, false
	}
	for i < j { // by index: a row is large to copy for its key
		h := int(uint(i+j) >> 1)
		if rows[h].Period < period {
			i = h + 1
		} else {
			j = h
		}
	}
	return i, i < len(rows) && rows[i].Period == period
}

// putRun writes r, as given, into its job's rows; s.mu must be held.
func (s *Store) putRun(r store.Run) {
	rows := s.runs[r.Job]
	if i, found := findRun(rows, r.Period); found {
		rows[i] = r
	} else {
		s.runs[r.Job] = slices.Insert(rows, i, r)
	}
}

// checkRuns refuses rows read in a state no write makes (SwapRun refuses
// them; a test plants them): store.CheckRunState, as every backend's read.
func checkRuns(rows []store.Run) error {
	for i := range rows { // by index: a row is large to copy for its state
		if r := &rows[i]; !r.State.Known() {
			return store.CheckRunState(r.Job, r.Period, r.State)
		}
	}
	return nil
}

func (c *client) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	return c.runs(ctx, nil, job, after, limit)
}

// RunsAppend is Runs with the rows appended to dst (pass dst[:0] to reuse
// a slice), for a caller that is done with one read's rows before it
// reads into the same slice again: the simulator, whose leaders read the
// ledger at every pass, a new slice of rows each otherwise.
func (s *Store) RunsAppend(ctx context.Context, dst []store.Run, job, after string, limit int) ([]store.Run, error) {
	c := client{s: s}
	return c.runs(ctx, dst, job, after, limit)
}

// runs is Runs, its rows appended to out (nil: a new slice).
func (c *client) runs(ctx context.Context, out []store.Run, job, after string, limit int) ([]store.Run, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	rows := c.s.runs[job]
	i, found := findRun(rows, after)
	if found {
		i++
	}
	n := len(rows) - i
	if limit > 0 {
		n = min(n, limit)
	}
	if out == nil {
		out = make([]store.Run, 0, n) // one allocation: the rows are large
	}
	k := len(out)
	out = append(out, rows[i:i+n]...) // one copy: the rows lie in period order
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return out, err
	}
	return out, checkRuns(out[k:])
}

// RecentRuns implements store.Store.
func (s *Store) RecentRuns(ctx context.Context, job, before string, limit int) ([]store.Run, error) {
	return s.own().RecentRuns(ctx, job, before, limit)
}

// PruneRuns implements store.Store.
func (s *Store) PruneRuns(ctx context.Context, p store.Prune) (int, error) {
	return s.own().PruneRuns(ctx, p)
}

// UpdateJob implements store.Store.
func (s *Store) UpdateJob(ctx context.Context, u store.JobUpdate) (store.Job, error) {
	return s.own().UpdateJob(ctx, u)
}

func (c *client) RecentRuns(ctx context.Context, job, before string, limit int) ([]store.Run, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	rows := c.s.runs[job]
	i := len(rows)
	if before != "" {
		i, _ = findRun(rows, before) // the first key not below before
	}
	var out []store.Run
	for i--; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		out = append(out, rows[i])
	}
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return out, err
	}
	return out, checkRuns(out)
}

func (c *client) PruneRuns(ctx context.Context, p store.Prune) (int, error) {
	return serve(ctx, c, func() (int, error) { return c.s.pruneLocked(p) })
}

func (s *Store) pruneLocked(p store.Prune) (int, error) {
	token, err := s.tokenLocked(p.Job)
	if err != nil {
		return 0, err
	}
	if err := storedriver.CheckPrune(p, token); err != nil {
		return 0, err
	}
	rows := s.runs[p.Job]
	ks := make([]string, len(rows))
	for i := range rows {
		ks[i] = rows[i].Period
	}
	del := storedriver.PruneDeletes(ks, func(k string) store.Run {
		i, _ := findRun(rows, k)
		return rows[i]
	}, p)
	if len(del) == 0 {
		return 0, nil
	}
	kept, d := rows[:0], 0
	for i := range rows {
		if d < len(del) && del[d] == rows[i].Period {
			d++
			continue
		}
		kept = append(kept, rows[i])
	}
	clear(rows[len(kept):]) // the rows deleted hold on to no strings
	s.runs[p.Job] = kept
	return len(del), nil
}

func (c *client) UpdateJob(ctx context.Context, u store.JobUpdate) (store.Job, error) {
	return serve(ctx, c, func() (store.Job, error) {
		cur, ok := c.s.jobs[u.Name]
		if err := storedriver.CheckJobUpdate(u, cur, ok); err != nil {
			return store.Job{}, err
		}
		cur.Schedule = u.Schedule
		c.s.jobs[u.Name] = cur
		if err := c.s.settleLocked(u.Name); err != nil {
			return store.Job{}, err
		}
		if rec, ok := c.s.stored(u.Name); ok {
			c.s.version++
			rec.Version = c.s.version
			rec.Updated = c.s.now()
			c.s.storeLocked(u.Name, &rec)
			log := c.s.logs[u.Name]
			c.s.logs[u.Name] = append(log, storedriver.RescheduledEvent(uint64(len(log))+1, rec, u, rec.Updated))
			c.s.notifyLocked(u.Name, rec.Version)
		}
		return cur, nil
	})
}

// GetJob implements store.Store.
func (s *Store) GetJob(ctx context.Context, name string) (store.Job, error) {
	return s.own().GetJob(ctx, name)
}

func (c *client) GetJob(ctx context.Context, name string) (store.Job, error) {
	if err := c.s.enter(ctx, c.node); err != nil {
		return store.Job{}, err
	}
	c.s.mu.Lock()
	j, ok := c.s.jobs[name]
	c.s.mu.Unlock()
	if err := c.s.leave(ctx, c.node); err != nil {
		return store.Job{}, err
	}
	if !ok {
		return store.Job{}, fmt.Errorf("job %q: %w", name, store.ErrNotFound)
	}
	return j, nil
}
