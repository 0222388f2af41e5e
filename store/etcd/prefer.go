package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// PreferJob implements store.Store, as SuspendJob does: one transaction that compares the
// job's and the record's ModRevisions with those read, and writes the job
// and, when the record exists, the event as a key of the side directory
// (sideDir). The record itself is not written, so its version, and its
// holder's term, stay as they were; History merges the side events into
// the log, numbered in order after the event each one follows.
func (s *Store) PreferJob(ctx context.Context, sj store.JobPrefer) (store.Job, error) {
	op := "prefer job " + sj.Name
	jobKey, dir := s.keys.job(sj.Name), s.keys.sideDir(sj.Name)
	for attempt := 0; attempt < fenceRetries; attempt++ {
		resp, jkv, cur, rec, err := s.readJob(ctx, op, sj.Name, clientv3.OpGet(dir, clientv3.WithPrefix(), clientv3.WithKeysOnly()))
		if err != nil {
			return store.Job{}, err
		}
		if err := storedriver.CheckPrefer(sj, cur, jkv != nil); err != nil {
			return store.Job{}, err
		}
		if len(rec.implied) > 0 {
			// Passed on by a succession: settled first (Settle, for this
			// name), so that the log shows the succession's event, then
			// the change of policy under the holder it was passed on to, as on the
			// other stores; then read again.
			if _, err := s.settle(ctx, []*cached{&rec}); err != nil {
				return store.Job{}, err
			}
			continue
		}
		at := s.now()
		out := storedriver.Prefer(sj, cur)
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(jobKey), "=", jkv.ModRevision)}
		for _, g := range s.guards(&rec) {
			cmps = append(cmps, g.cmp())
		}
		ops := []clientv3.Op{clientv3.OpPut(jobKey, encodeJob(out))}
		if rec.modRev != 0 {
			n := 1
			for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
				if strings.HasPrefix(string(kv.Key), fmt.Sprintf("%s%020d/", dir, rec.logSeq)) {
					n++
				}
			}
			ev := storedriver.PreferEvent(0, rec.rec, sj, cur, at)
			b, _ := json.Marshal(toEventValue(ev))
			ops = append(ops, clientv3.OpPut(s.keys.side(sj.Name, rec.logSeq, n), string(b)))
		}
		tr, err := s.txn(ctx, op, cmps, ops, nil)
		if err != nil {
			return store.Job{}, err
		}
		if tr.Succeeded {
			return out, nil
		}
	}
	return store.Job{}, fmt.Errorf("etcd %s: %w: the job or its election record changed %d times during the write; try again", op, store.ErrUnavailable, fenceRetries)
}
