package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// jobValue is the stored form of a job; Name comes from the key.
type jobValue struct {
	Schedule string    `json:"schedule,omitempty"`
	Created  time.Time `json:"created"`
	// Suspension is the job's suspension (schema version 4); nil: none.
	Suspension *suspensionValue `json:"suspension,omitempty"`
	// Prefer and PreferHysteresis are the job's preference
	// (store.Job.Prefer); absent: none, as a baton without preferences
	// wrote it (which, reading the job, leaves them out).
	Prefer           string        `json:"prefer,omitempty"`
	PreferHysteresis time.Duration `json:"prefer_hysteresis,omitempty"`
}

// runValue is the stored form of a run ledger row; Job and Period come from
// the key, Version from its ModRevision.
type runValue struct {
	Scheduled time.Time      `json:"scheduled"`
	State     store.RunState `json:"state"`
	Token     uint64         `json:"token"`
	Holder    string         `json:"holder,omitempty"`
	Attempt   int            `json:"attempt"`
	Manual    bool           `json:"manual,omitempty"`
	Started   time.Time      `json:"started"`
	Finished  time.Time      `json:"finished"`
	ExitCode  int            `json:"exit_code"`
	Output    string         `json:"output,omitempty"`
}

func encodeRun(r store.Run) string {
	b, _ := json.Marshal(runValue{
		Scheduled: r.Scheduled, State: r.State, Token: r.Token, Holder: r.Holder, Attempt: r.Attempt,
		Manual: r.Manual, Started: r.Started, Finished: r.Finished, ExitCode: r.ExitCode, Output: r.Output,
	})
	return string(b)
}

// decodeRun returns the row held by kv, or a row with Version 0 if kv is
// nil (the row does not exist).
func decodeRun(job, period string, kv *mvccpb.KeyValue) (store.Run, error) {
	if kv == nil {
		return store.Run{Job: job, Period: period}, nil
	}
	var v runValue
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return store.Run{}, fmt.Errorf("%w: etcd key %q does not hold a baton run: %v", store.ErrCorrupt, kv.Key, err)
	}
	if err := store.CheckRunState(job, period, v.State); err != nil {
		return store.Run{}, fmt.Errorf("etcd key %q: %w", kv.Key, err)
	}
	return store.Run{
		Job: job, Period: period, Scheduled: v.Scheduled, State: v.State, Token: v.Token, Holder: v.Holder,
		Attempt: v.Attempt, Manual: v.Manual, Started: v.Started, Finished: v.Finished, ExitCode: v.ExitCode,
		Output: v.Output, Version: kv.ModRevision,
	}, nil
}

// EnsureJob implements store.Store: one transaction that creates the job if
// its key does not exist and reads it otherwise.
func (s *Store) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	if j.Name == "" {
		return store.Job{}, fmt.Errorf("%w: empty job name", store.ErrInvalid)
	}
	if err := storedriver.CheckJob(j); err != nil {
		return store.Job{}, fmt.Errorf("etcd: %w", err)
	}
	j.Created, j.Suspension = s.now(), store.Suspension{}
	k := s.keys.job(j.Name)
	resp, err := s.txn(ctx, "ensure job "+j.Name,
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k), "=", 0)},
		[]clientv3.Op{clientv3.OpPut(k, encodeJob(j))},
		[]clientv3.Op{clientv3.OpGet(k)})
	if err != nil {
		return store.Job{}, err
	}
	if resp.Succeeded {
		return j, nil
	}
	kv := rangeKV(resp, 0)
	var v jobValue
	if kv == nil {
		return store.Job{}, fmt.Errorf("etcd ensure job %s: %w: job vanished during the call", j.Name, store.ErrUnavailable)
	}
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return store.Job{}, fmt.Errorf("%w: etcd key %q does not hold a baton job: %v", store.ErrCorrupt, kv.Key, err)
	}
	return v.job(j.Name), nil
}

// decodeJob returns the job name held by kv (nil: no such job, the zero
// job).
func decodeJob(name string, kv *mvccpb.KeyValue) (store.Job, error) {
	if kv == nil {
		return store.Job{Name: name}, nil
	}
	var v jobValue
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return store.Job{}, fmt.Errorf("%w: etcd key %q does not hold a baton job: %v", store.ErrCorrupt, kv.Key, err)
	}
	return v.job(name), nil
}

// GetRun implements store.Store with a linearizable read.
func (s *Store) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	resp, err := s.get(ctx, "get run "+job+"/"+period, s.keys.run(job, period))
	if err != nil {
		return store.Run{}, err
	}
	r, err := decodeRun(job, period, firstKV(resp))
	if err != nil {
		return store.Run{}, err
	}
	if r.Version == 0 {
		return store.Run{}, fmt.Errorf("run %s/%s: %w", job, period, store.ErrNotFound)
	}
	return r, nil
}

// fenceRetries is how many times a fenced SwapRun is sent again when only
// the election record changed under it (a renewal, most likely).
const fenceRetries = 3

// SwapRun implements store.Store. It reads the row (and, when fenced, the
// election record; for a claim or skip, the job) in one linearizable
// read, checks them with storedriver.CheckRunSwap and CheckRunSuspended,
// then writes the row in a transaction that compares the row's ModRevision
// with sw.Expect and, when fenced, the record's ModRevision with the one
// just read, and those of the session records its resolution read: a
// record unchanged since the check, whose sessions are unchanged too,
// still resolves to the token that was checked (store.Resolve). A claim or skip compares the job's ModRevision too (0
// when there is none): a job unchanged since the check is not suspended.
// If only the record or the job changed (a renewal, a suspension), the
// check is repeated with the values the transaction read, up to three
// times.
func (s *Store) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	r := sw.Run
	if r.Job == "" || r.Period == "" {
		return store.Run{}, storedriver.CheckRunSwap(store.Run{}, sw, 0)
	}
	op := "swap run " + r.Job + "/" + r.Period
	runKey, recKey, jobKey := s.keys.run(r.Job, r.Period), s.keys.record(r.Job), s.keys.job(r.Job)
	reads := []clientv3.Op{clientv3.OpGet(runKey)}
	recAt, jobAt := -1, -1 // the record's and the job's index among reads
	if sw.Fenced {
		recAt = len(reads)
		reads = append(reads, clientv3.OpGet(recKey))
	}
	if sw.Claims() {
		jobAt = len(reads)
		reads = append(reads, clientv3.OpGet(jobKey))
	}
	resp, err := s.txn(ctx, op, nil, reads, nil)
	if err != nil {
		return store.Run{}, err
	}
	for attempt := 0; ; attempt++ {
		cur, err := decodeRun(r.Job, r.Period, rangeKV(resp, 0))
		if err != nil {
			return store.Run{}, err
		}
		var rec cached
		if sw.Fenced {
			// The resolved token: the record's and its chain's sessions at
			// the read's revision, all compared below.
			if rec, err = decodeRecord(r.Job, rangeKV(resp, recAt)); err != nil {
				return store.Run{}, err
			}
			if err := s.resolveAt(ctx, resp.Header.Revision, []*cached{&rec}, nil); err != nil {
				return store.Run{}, err
			}
		}
		if err := storedriver.CheckRunSwap(cur, sw, rec.rec.Token); err != nil {
			return store.Run{}, err
		}
		var jobRev int64 // 0: no such job
		if sw.Claims() {
			jkv := rangeKV(resp, jobAt)
			job, err := decodeJob(r.Job, jkv)
			if err != nil {
				return store.Run{}, err
			}
			if jkv != nil {
				jobRev = jkv.ModRevision
			}
			if err := storedriver.CheckRunSuspended(sw, job, jkv != nil); err != nil {
				return store.Run{}, err
			}
		}
		if attempt == fenceRetries {
			return store.Run{}, fmt.Errorf("etcd %s: %w: the election record or the job of %q changed %d times during the write; try again",
				op, store.ErrUnavailable, r.Job, fenceRetries)
		}
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(runKey), "=", sw.Expect)}
		if sw.Fenced {
			for _, g := range s.guards(&rec) {
				cmps = append(cmps, g.cmp())
			}
		}
		if sw.Claims() {
			// A job unchanged since the check is still not suspended.
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(jobKey), "=", jobRev))
		}
		resp, err = s.txn(ctx, op, cmps, []clientv3.Op{clientv3.OpPut(runKey, encodeRun(r))}, reads)
		if err != nil {
			return store.Run{}, err
		}
		if resp.Succeeded {
			r.Version = resp.Header.Revision
			return r, nil
		}
		// resp holds the row and record as they are now: check again.
	}
}

// Runs implements store.Store: a linearizable range read over the job's
// rows after the given period key.
func (s *Store) Runs(ctx context.Context, job string, after string, limit int) ([]store.Run, error) {
	dir := s.keys.runDir(job)
	from := dir
	if after != "" {
		from = dir + after + "\x00" // the smallest key greater than after
	}
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(dir))}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(int64(limit)))
	}
	resp, err := s.get(ctx, "runs "+job, from, opts...)
	if err != nil {
		return nil, err
	}
	return decodeRuns(job, dir, resp.Kvs)
}

// RecentRuns implements store.Store. etcd sorts a descending range on the
// server by reading all of it, so the cost is that of the job's ledger,
// which retention bounds (see PruneRuns).
func (s *Store) RecentRuns(ctx context.Context, job, before string, limit int) ([]store.Run, error) {
	dir := s.keys.runDir(job)
	end := clientv3.GetPrefixRangeEnd(dir)
	if before != "" {
		end = dir + before
	}
	opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend)}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(int64(limit)))
	}
	resp, err := s.get(ctx, "recent runs "+job, dir, opts...)
	if err != nil {
		return nil, err
	}
	return decodeRuns(job, dir, resp.Kvs)
}

// decodeRuns decodes the ledger rows kvs of job, whose keys are under dir.
func decodeRuns(job, dir string, kvs []*mvccpb.KeyValue) ([]store.Run, error) {
	out := make([]store.Run, 0, len(kvs))
	for _, kv := range kvs {
		r, err := decodeRun(job, string(kv.Key[len(dir):]), kv)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// pruneBatch is the most rows one prune transaction deletes: etcd limits
// the operations of a transaction (128 by default).
const pruneBatch = 64

// PruneRuns implements store.Store: transactions of at most pruneBatch
// deletes, each of which compares every row's ModRevision (a row that
// changed since it was read is not deleted by mistake) and, for a fenced
// prune, the election record's ModRevision with the one whose token was
// checked.
func (s *Store) PruneRuns(ctx context.Context, p store.Prune) (int, error) {
	if err := storedriver.CheckPrune(p, p.Token); err != nil {
		return 0, err
	}
	op := "prune runs " + p.Job
	dir := s.keys.runDir(p.Job)
	// The newest scheduled row stays.
	keep := ""
	recent, err := s.RecentRuns(ctx, p.Job, "", 0)
	if err != nil {
		return 0, err
	}
	for _, r := range recent {
		if !r.Manual {
			keep = r.Period
			break
		}
	}
	var rec cached
	if p.Fenced {
		if rec, err = s.read(ctx, p.Job); err != nil {
			return 0, err
		}
		if err := storedriver.CheckPrune(p, rec.rec.Token); err != nil {
			return 0, err
		}
	}
	keepKey := ""
	if p.Keep > 0 {
		resp, err := s.get(ctx, op, dir, clientv3.WithRange(clientv3.GetPrefixRangeEnd(dir)), clientv3.WithKeysOnly(),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(int64(p.Keep)))
		if err != nil {
			return 0, err
		}
		if len(resp.Kvs) == p.Keep {
			keepKey = string(resp.Kvs[p.Keep-1].Key[len(dir):])
		}
	}
	before := storedriver.PruneBound(p, keepKey)
	if before == "" {
		return 0, nil
	}
	n := 0
	from := dir
	for n < p.Limit {
		resp, err := s.get(ctx, op, from, clientv3.WithRange(dir+before), clientv3.WithLimit(pruneBatch))
		if err != nil {
			return n, err
		}
		var cmps []clientv3.Cmp
		var dels []clientv3.Op
		for _, kv := range resp.Kvs {
			r, err := decodeRun(p.Job, string(kv.Key[len(dir):]), kv)
			if err != nil {
				return n, err
			}
			if r.Period == keep || !slices.Contains(p.States, r.State) || n+len(dels) == p.Limit {
				continue
			}
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
			dels = append(dels, clientv3.OpDelete(string(kv.Key)))
		}
		if len(dels) > 0 {
			if p.Fenced {
				for _, g := range s.guards(&rec) {
					cmps = append(cmps, g.cmp())
				}
			}
			tr, err := s.txn(ctx, op, cmps, dels, nil)
			if err != nil {
				return n, err
			}
			if !tr.Succeeded {
				// A row or the record changed: stop here; the next
				// prune starts again from what is stored then.
				if p.Fenced {
					if now, err := s.read(ctx, p.Job); err == nil {
						if err := storedriver.CheckPrune(p, now.rec.Token); err != nil {
							return n, err
						}
					}
				}
				return n, nil
			}
			n += len(dels)
		}
		if len(resp.Kvs) < pruneBatch {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return n, nil
}

// UpdateJob implements store.Store: one transaction that compares the
// job's and the record's ModRevisions with those read, and writes the job,
// the record (same values, the next log sequence number) and the event.
func (s *Store) UpdateJob(ctx context.Context, u store.JobUpdate) (store.Job, error) {
	if err := storedriver.CheckJobUpdate(u, store.Job{Schedule: u.Expect}, true); err != nil {
		return store.Job{}, err
	}
	op := "update job " + u.Name
	jobKey, recKey := s.keys.job(u.Name), s.keys.record(u.Name)
	for attempt := 0; attempt < fenceRetries; attempt++ {
		_, jkv, cur, rec, err := s.readJob(ctx, op, u.Name)
		if err != nil {
			return store.Job{}, err
		}
		if err := storedriver.CheckJobUpdate(u, cur, jkv != nil); err != nil {
			return store.Job{}, err
		}
		cur.Schedule = u.Schedule
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(jobKey), "=", jkv.ModRevision)}
		for _, g := range s.guards(&rec) {
			cmps = append(cmps, g.cmp())
		}
		ops := []clientv3.Op{clientv3.OpPut(jobKey, encodeJob(cur))}
		var next store.Record
		var events []loggedEvent
		seq := rec.logSeq + uint64(len(rec.implied)) + 1
		if rec.modRev != 0 {
			// The record as resolved (settled on write), after the events
			// of the successions that passed it on.
			next = rec.rec
			next.Updated, next.Via = s.now(), ""
			held, err := rec.heldEvents()
			if err != nil {
				return store.Job{}, err
			}
			var logKey []clientv3.Op
			events, logKey = s.logOps(u.Name, held, append(slices.Clip(rec.implied), storedriver.RescheduledEvent(seq, next, u, next.Updated))...)
			ops = append(ops, clientv3.OpPut(recKey, encodeRecord(next, seq, events, 0)))
			ops = append(ops, logKey...)
			if next.Session != "" {
				cmps = append(cmps, s.notDeleting(next.Session).cmp())
			}
		}
		tr, err := s.txn(ctx, op, cmps, ops, nil)
		if err != nil {
			return store.Job{}, err
		}
		if tr.Succeeded {
			if rec.modRev != 0 {
				next.Version = tr.Header.Revision
				s.remember(u.Name, cached{stored: next, modRev: tr.Header.Revision, logSeq: seq, events: events})
			}
			return cur, nil
		}
	}
	return store.Job{}, fmt.Errorf("etcd %s: %w: the job or its election record changed %d times during the write; try again", op, store.ErrUnavailable, fenceRetries)
}

// GetJob implements store.Store with a linearizable read.
func (s *Store) GetJob(ctx context.Context, name string) (store.Job, error) {
	resp, err := s.get(ctx, "get job "+name, s.keys.job(name))
	if err != nil {
		return store.Job{}, err
	}
	kv := firstKV(resp)
	if kv == nil {
		return store.Job{}, fmt.Errorf("job %q: %w", name, store.ErrNotFound)
	}
	return decodeJob(name, kv)
}
