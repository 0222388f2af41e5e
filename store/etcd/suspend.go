package etcd

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// suspensionValue is the stored form of a job's suspension (schema
// version 4), absent when the job is not suspended.
type suspensionValue struct {
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// job returns the job of name that v stores.
func (v jobValue) job(name string) store.Job {
	j := store.Job{Name: name, Schedule: v.Schedule, Created: v.Created, Prefer: v.Prefer, PreferHysteresis: v.PreferHysteresis}
	if v.Suspension != nil {
		j.Suspension = store.Suspension{By: v.Suspension.By, Reason: v.Suspension.Reason, At: v.Suspension.At}
	}
	return j
}

// encodeJob returns the stored form of j.
func encodeJob(j store.Job) string {
	v := jobValue{Schedule: j.Schedule, Created: j.Created, Prefer: j.Prefer, PreferHysteresis: j.PreferHysteresis}
	if s := j.Suspension; s.Active() {
		v.Suspension = &suspensionValue{By: s.By, Reason: s.Reason, At: s.At}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// sideDir is the directory of the election log events of name that were
// logged without a write of its record (Suspended, Resumed): a write of
// the record would change its version and so end its holder's term.
// Each key is named after the record's last log sequence number when the
// event was logged (its anchor: the event comes after that one) and the
// event's number among those of that anchor, so that the keys sort in log
// order.
func (k keys) sideDir(name string) string { return k.prefix + "x/" + url.PathEscape(name) + "/" }

func (k keys) side(name string, anchor uint64, n int) string {
	return fmt.Sprintf("%s%020d/%020d", k.sideDir(name), anchor, n)
}

// sideEvent is one event of the side directory.
type sideEvent struct {
	anchor uint64
	ev     eventValue
}

// decodeSide returns the side events of name held by kvs, in log order.
func decodeSide(dir string, kvs []*mvccpb.KeyValue) ([]sideEvent, error) {
	out := make([]sideEvent, 0, len(kvs))
	for _, kv := range kvs {
		a, _, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), dir), "/")
		anchor, err := strconv.ParseUint(a, 10, 64)
		var v eventValue
		if err == nil && ok {
			err = json.Unmarshal(kv.Value, &v)
		}
		if err != nil || !ok {
			return nil, fmt.Errorf("%w: etcd key %q is not a baton log key", store.ErrCorrupt, kv.Key)
		}
		out = append(out, sideEvent{anchor: anchor, ev: v})
	}
	return out, nil
}

// readJob reads the job name (jkv nil: no such job) and its election
// record (Version 0: none), and what more reads, in one transaction
// whose response it returns too.
func (s *Store) readJob(ctx context.Context, op, name string, more ...clientv3.Op) (*clientv3.TxnResponse, *mvccpb.KeyValue, store.Job, cached, error) {
	resp, err := s.txn(ctx, op, nil, append([]clientv3.Op{clientv3.OpGet(s.keys.job(name)), clientv3.OpGet(s.keys.record(name))}, more...), nil)
	if err != nil {
		return nil, nil, store.Job{}, cached{}, err
	}
	jkv := rangeKV(resp, 0)
	cur, err := decodeJob(name, jkv)
	if err != nil {
		return nil, nil, store.Job{}, cached{}, err
	}
	rec, err := decodeRecord(name, rangeKV(resp, 1))
	if err != nil {
		return nil, nil, store.Job{}, cached{}, err
	}
	if err := s.resolveAt(ctx, resp.Header.Revision, []*cached{&rec}, nil); err != nil {
		return nil, nil, store.Job{}, cached{}, err
	}
	return resp, jkv, cur, rec, nil
}

// SuspendJob implements store.Store: one transaction that compares the
// job's and the record's ModRevisions with those read, and writes the job
// and, when the record exists, the event as a key of the side directory
// (sideDir). The record itself is not written, so its version, and its
// holder's term, stay as they were; History merges the side events into
// the log, numbered in order after the event each one follows.
func (s *Store) SuspendJob(ctx context.Context, sj store.JobSuspend) (store.Job, error) {
	op := "suspend job " + sj.Name
	jobKey, dir := s.keys.job(sj.Name), s.keys.sideDir(sj.Name)
	for attempt := 0; attempt < fenceRetries; attempt++ {
		resp, jkv, cur, rec, err := s.readJob(ctx, op, sj.Name, clientv3.OpGet(dir, clientv3.WithPrefix(), clientv3.WithKeysOnly()))
		if err != nil {
			return store.Job{}, err
		}
		if err := storedriver.CheckSuspend(sj, cur, jkv != nil); err != nil {
			return store.Job{}, err
		}
		if len(rec.implied) > 0 {
			// Passed on by a succession: settled first (Settle, for this
			// name), so that the log shows the succession's event, then
			// the suspension by the holder it was passed on to, as on the
			// other stores; then read again.
			if _, err := s.settle(ctx, []*cached{&rec}); err != nil {
				return store.Job{}, err
			}
			continue
		}
		at := s.now()
		out := storedriver.Suspend(sj, cur, at)
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
			ev := storedriver.SuspendEvent(0, rec.rec, sj, at)
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

// mergeSide numbers the events of one History read: main are the log's
// events with their own sequence numbers, all of those up to through
// among them, side every side event of the name in log order. A side event comes right after the event it is
// anchored at, so an event's number in the merged log is its own number
// plus the side events anchored before it, and the i-th side event's is
// its anchor plus i+1. It returns the merged events numbered after after,
// up to limit (<= 0: no limit).
func mergeSide(name string, main []store.Event, through uint64, side []sideEvent, after uint64, limit int) []store.Event {
	out := make([]store.Event, 0, len(main)+len(side))
	for _, ev := range main {
		ev.Seq += uint64(sort.Search(len(side), func(i int) bool { return side[i].anchor >= ev.Seq }))
		out = append(out, ev)
	}
	for i, se := range side {
		if se.anchor <= through {
			out = append(out, se.ev.event(name, se.anchor+uint64(i)+1))
		}
	}
	slices.SortFunc(out, func(a, b store.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	out = slices.DeleteFunc(out, func(ev store.Event) bool { return ev.Seq <= after })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}
