package etcd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// recordValue is the stored form of an election record. Name and Version
// come from the key and its ModRevision.
type recordValue struct {
	Holder      string        `json:"holder,omitempty"`
	Incarnation string        `json:"incarnation,omitempty"`
	Token       uint64        `json:"token"`
	Lease       time.Duration `json:"lease"`
	// Session is Record.Session (schema version 2).
	Session  string    `json:"session,omitempty"`
	Transfer string    `json:"transfer,omitempty"`
	Updated  time.Time `json:"updated"`
	// LogSeq is the sequence number of the record's last log event.
	LogSeq uint64 `json:"log_seq"`
	// Events are the record's newest log events that are in no log key
	// yet, oldest first, the last of them LogSeq (schema version 3; see
	// inlineEvents).
	Events []loggedEvent `json:"events,omitempty"`
}

// inlineEvents is how many log events a record carries in its own value
// before they move to a log key. A write that logs an event puts it in the
// record it writes; the write that would make it carry more than
// inlineEvents writes them all, the new one included, to one log key
// instead. So a swap with an event is one etcd key write, not two, except
// for one in every inlineEvents+1 events of a name. On a three-member
// cluster the number of keys a bulk takeover writes, more than their
// bytes, is what sets how fast it goes (BENCHMARKS.md, "Many names per
// process"); the carried events cost a few hundred bytes per record.
const inlineEvents = 4

// loggedEvent is a log event with its sequence number, as a record or a
// log key of several events stores it.
type loggedEvent struct {
	Seq uint64 `json:"seq"`
	eventValue
}

// eventValue is the stored form of a log event. Seq and Name come from the
// key.
type eventValue struct {
	Kind        store.EventKind `json:"kind"`
	Holder      string          `json:"holder,omitempty"`
	Incarnation string          `json:"incarnation,omitempty"`
	Token       uint64          `json:"token"`
	Transfer    string          `json:"transfer,omitempty"`
	Time        time.Time       `json:"time"`
	Detail      string          `json:"detail,omitempty"`
}

func encodeRecord(r store.Record, logSeq uint64, events []loggedEvent) string {
	b, _ := json.Marshal(recordValue{
		Holder: r.Holder, Incarnation: r.Incarnation, Token: r.Token, Lease: r.Lease,
		Session: r.Session, Transfer: r.Transfer, Updated: r.Updated, LogSeq: logSeq,
		Events: events,
	})
	return string(b)
}

// logOps returns what a write of name's record does to log ev, the next
// event after the events the record carries now (held): the events the
// written record carries, and the log key to write, if any (see
// inlineEvents).
func (s *Store) logOps(name string, held []loggedEvent, ev store.Event) ([]loggedEvent, []clientv3.Op) {
	all := append(slices.Clip(held), loggedEvent{Seq: ev.Seq, eventValue: toEventValue(ev)})
	if len(all) <= inlineEvents {
		return all, nil
	}
	b, _ := json.Marshal(all)
	return nil, []clientv3.Op{clientv3.OpPut(s.keys.log(name, all[0].Seq), string(b))}
}

// decodeRecord returns the record of name held by kv (nil: the record does
// not exist, Version 0).
func decodeRecord(name string, kv *mvccpb.KeyValue) (cached, error) {
	if kv == nil {
		return cached{rec: store.Record{Name: name}}, nil
	}
	var v recordValue
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return cached{}, fmt.Errorf("%w: etcd key %q does not hold a baton election record: %v", store.ErrCorrupt, kv.Key, err)
	}
	return cached{
		rec: store.Record{
			Name: name, Holder: v.Holder, Incarnation: v.Incarnation, Token: v.Token, Lease: v.Lease,
			Session: v.Session, Transfer: v.Transfer, Version: kv.ModRevision, Updated: v.Updated,
		},
		logSeq: v.LogSeq,
		events: v.Events,
	}, nil
}

func toEventValue(ev store.Event) eventValue {
	return eventValue{
		Kind: ev.Kind, Holder: ev.Holder, Incarnation: ev.Incarnation, Token: ev.Token,
		Transfer: ev.Transfer, Time: ev.Time, Detail: ev.Detail,
	}
}

func (v eventValue) event(name string, seq uint64) store.Event {
	return store.Event{
		Seq: seq, Name: name, Kind: v.Kind, Holder: v.Holder, Incarnation: v.Incarnation,
		Token: v.Token, Transfer: v.Transfer, Time: v.Time, Detail: v.Detail,
	}
}

func firstKV(r *clientv3.GetResponse) *mvccpb.KeyValue {
	if len(r.Kvs) == 0 {
		return nil
	}
	return r.Kvs[0]
}

func rangeKV(r *clientv3.TxnResponse, i int) *mvccpb.KeyValue {
	kvs := r.Responses[i].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil
	}
	return kvs[0]
}

// Get implements store.Store with a linearizable read.
func (s *Store) Get(ctx context.Context, name string) (store.Record, error) {
	c, err := s.read(ctx, name)
	if err != nil {
		return store.Record{}, err
	}
	if c.rec.Version == 0 {
		return store.Record{}, fmt.Errorf("election %q: %w", name, store.ErrNotFound)
	}
	return c.rec, nil
}

// read returns the current record of name (Version 0 if it does not exist)
// and remembers it.
func (s *Store) read(ctx context.Context, name string) (cached, error) {
	resp, err := s.get(ctx, "get "+name, s.keys.record(name))
	if err != nil {
		return cached{}, err
	}
	c, err := decodeRecord(name, firstKV(resp))
	if err != nil {
		return cached{}, err
	}
	if c.rec.Version != 0 {
		s.remember(name, c)
	}
	return c, nil
}

// current returns the record that sw replaces, if sw.Expect is right: from
// this handle's memory of the record at that version when it has one, else
// by a linearizable read.
func (s *Store) current(ctx context.Context, sw store.Swap) (cached, error) {
	if sw.Expect == 0 {
		// A record that does not exist has no log yet: records are never
		// deleted. The transaction checks that it does not exist.
		return cached{rec: store.Record{Name: sw.Record.Name}}, nil
	}
	if c, ok := s.cachedAt(sw.Record.Name, sw.Expect); ok {
		return c, nil
	}
	return s.read(ctx, sw.Record.Name)
}

// prepared is one swap ready to be sent: its compare, its writes, and the
// record it stores.
type prepared struct {
	sw     store.Swap
	idx    int          // the swap's index in a SwapMany batch
	key    string       // the record's key
	rec    store.Record // Version set once applied
	logSeq uint64
	events []loggedEvent // the events the record carries
	cmp    clientv3.Cmp
	ops    []clientv3.Op
}

func (s *Store) prepare(cur cached, sw store.Swap, now time.Time) prepared {
	name := sw.Record.Name
	rec := sw.Record
	rec.Version, rec.Updated = 0, now
	seq, events := cur.logSeq, cur.events
	var logKey []clientv3.Op
	if sw.Event != "" {
		seq++
		events, logKey = s.logOps(name, events, storedriver.NextEvent(seq, rec, sw.Event))
	}
	ops := append([]clientv3.Op{clientv3.OpPut(s.keys.record(name), encodeRecord(rec, seq, events))}, logKey...)
	return prepared{
		sw: sw, key: s.keys.record(name), rec: rec, logSeq: seq, events: events, ops: ops,
		cmp: clientv3.Compare(clientv3.ModRevision(s.keys.record(name)), "=", sw.Expect),
	}
}

// Swap implements store.Store: one transaction that compares the record's
// ModRevision with sw.Expect and writes the record and, with an event, the
// next log entry. In steady state (the handle read or wrote the record at
// sw.Expect) that is one round trip; otherwise a read comes first.
func (s *Store) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	if sw.Record.Name == "" {
		return store.Record{}, storedriver.CheckSwap(store.Record{}, sw)
	}
	cur, err := s.current(ctx, sw)
	if err != nil {
		return store.Record{}, err
	}
	if err := storedriver.CheckSwap(cur.rec, sw); err != nil {
		return store.Record{}, err
	}
	p := s.prepare(cur, sw, s.now())
	name := sw.Record.Name
	resp, err := s.txn(ctx, "swap "+name, []clientv3.Cmp{p.cmp}, p.ops, []clientv3.Op{clientv3.OpGet(s.keys.record(name))})
	if err != nil {
		return store.Record{}, err
	}
	if !resp.Succeeded {
		return store.Record{}, s.conflict(name, sw, rangeKV(resp, 0))
	}
	p.rec.Version = resp.Header.Revision
	s.remember(name, cached{rec: p.rec, logSeq: p.logSeq, events: p.events})
	return p.rec, nil
}

// conflict builds the error of a swap whose compare failed, from the record
// read in the same transaction.
func (s *Store) conflict(name string, sw store.Swap, kv *mvccpb.KeyValue) error {
	cur, err := decodeRecord(name, kv)
	if err != nil {
		return err
	}
	if cur.rec.Version != 0 {
		s.remember(name, cur)
	}
	if err := storedriver.CheckSwap(cur.rec, sw); err != nil {
		return err
	}
	// Unreachable: the compare failed, so the versions differ.
	return fmt.Errorf("%w: %q changed during the swap", store.ErrConflict, name)
}

// History implements store.Store: one linearizable read-only transaction
// of the name's record, for the events it carries, of its log keys from
// the first that can hold an event after the given sequence number, and
// of the events logged without a write of the record (sideDir), merged
// into the log in order (mergeSide). A log key holds one event (schema
// versions 1 and 2) or several, oldest first (version 3), and is named
// after its first event's sequence number: the events a key holds are in
// order and below the next key's. A read that finds more side events than
// it allowed for reads again.
func (s *Store) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	if after == math.MaxUint64 {
		return nil, nil
	}
	for allowed := 0; ; {
		// The n side events make the merged numbers at most n above the
		// log's own, so the log from after-n on holds every event of the
		// page.
		from, lim := after-min(after, uint64(allowed)), limit
		if lim > 0 {
			lim += allowed
		}
		main, through, side, err := s.readLog(ctx, name, from, lim)
		if err != nil {
			return nil, err
		}
		if len(side) > allowed {
			allowed = len(side)
			continue
		}
		return mergeSide(name, main, through, side, after, limit), nil
	}
}

// readLog reads the log events of name numbered after after (up to limit
// of them and maybe more; limit <= 0: all), the number up to which it read
// them all (math.MaxUint64: to the log's end), and all the name's side
// events, in one transaction.
func (s *Store) readLog(ctx context.Context, name string, after uint64, limit int) ([]store.Event, uint64, []sideEvent, error) {
	dir := s.keys.logDir(name)
	// A key that holds an event after `after` is named at most
	// inlineEvents below it.
	from := uint64(1)
	if after >= inlineEvents {
		from = after + 1 - inlineEvents
	}
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(dir))}
	if limit > 0 {
		// At most inlineEvents keys hold only events up to `after`; every
		// other key holds at least one event of the page.
		opts = append(opts, clientv3.WithLimit(int64(limit+inlineEvents)))
	}
	sideDir := s.keys.sideDir(name)
	resp, err := s.txn(ctx, "history "+name, nil, []clientv3.Op{
		clientv3.OpGet(s.keys.log(name, from), opts...),
		clientv3.OpGet(s.keys.record(name)),
		clientv3.OpGet(sideDir, clientv3.WithPrefix()),
	}, nil)
	if err != nil {
		return nil, 0, nil, err
	}
	logs := resp.Responses[0].GetResponseRange()
	var out []store.Event
	var through uint64
	add := func(ev store.Event) {
		through = max(through, ev.Seq)
		if ev.Seq > after {
			out = append(out, ev)
		}
	}
	for _, kv := range logs.Kvs {
		seq, err := strconv.ParseUint(strings.TrimPrefix(string(kv.Key), dir), 10, 64)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("%w: etcd key %q is not a baton log key", store.ErrCorrupt, kv.Key)
		}
		if bytes.HasPrefix(kv.Value, []byte("[")) {
			var evs []loggedEvent
			if err := json.Unmarshal(kv.Value, &evs); err != nil {
				return nil, 0, nil, fmt.Errorf("%w: etcd key %q does not hold baton log events: %v", store.ErrCorrupt, kv.Key, err)
			}
			for _, e := range evs {
				add(e.event(name, e.Seq))
			}
			continue
		}
		var v eventValue
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			return nil, 0, nil, fmt.Errorf("%w: etcd key %q does not hold a baton log event: %v", store.ErrCorrupt, kv.Key, err)
		}
		add(v.event(name, seq))
	}
	if !logs.More {
		// The record's events come after every log key's.
		cur, err := decodeRecord(name, rangeKV(resp, 1))
		if err != nil {
			return nil, 0, nil, err
		}
		for _, e := range cur.events {
			add(e.event(name, e.Seq))
		}
	}
	side, err := decodeSide(sideDir, resp.Responses[2].GetResponseRange().Kvs)
	if err != nil {
		return nil, 0, nil, err
	}
	if !logs.More {
		through = math.MaxUint64
	}
	return out, through, side, nil
}

func (k keys) candDir(name string) string { return k.prefix + "c/" + url.PathEscape(name) + "/" }
func (k keys) cand(name, node string) string {
	return k.candDir(name) + url.PathEscape(node)
}

// candValue is the stored form of a candidate row. Times are the writing
// client's: etcd has no clock of its own to offer.
type candValue struct {
	Incarnation string        `json:"incarnation"`
	Every       time.Duration `json:"every"`
	Since       time.Time     `json:"since"`
	Seen        time.Time     `json:"seen"`
}

// Heartbeat implements store.Store. Since and Seen are this client's
// clock, so the Age that Candidates reports compares two machines' clocks
// when the reader is not the writer: it is for people and operator
// checks, which the election never relies on.
func (s *Store) Heartbeat(ctx context.Context, c store.Candidate) error {
	if c.Name == "" || c.Node == "" {
		return fmt.Errorf("%w: a candidate needs a name and a node", store.ErrInvalid)
	}
	k := s.keys.cand(c.Name, c.Node)
	op := "heartbeat " + c.Name
	if c.Gone {
		_, err := s.txn(ctx, op, nil, []clientv3.Op{clientv3.OpDelete(k)}, nil)
		return err
	}
	now := s.now()
	v := candValue{Incarnation: c.Incarnation, Every: c.Every, Since: now, Seen: now}
	resp, err := s.get(ctx, op, k)
	if err != nil {
		return err
	}
	if kv := firstKV(resp); kv != nil {
		var old candValue
		if json.Unmarshal(kv.Value, &old) == nil && old.Incarnation == c.Incarnation {
			v.Since = old.Since
		}
	}
	b, _ := json.Marshal(v)
	_, err = s.txn(ctx, op, nil, []clientv3.Op{clientv3.OpPut(k, string(b))}, nil)
	return err
}

// Candidates implements store.Store. Age is this client's clock minus the
// writer's (see Heartbeat).
func (s *Store) Candidates(ctx context.Context, name string) ([]store.Candidate, error) {
	dir := s.keys.candDir(name)
	resp, err := s.get(ctx, "candidates "+name, dir, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]store.Candidate, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		c, err := decodeCand(name, dir, kv)
		if err != nil {
			return nil, err
		}
		c.Age = now.Sub(c.Seen)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b store.Candidate) int {
		switch {
		case a.Node < b.Node:
			return -1
		case a.Node > b.Node:
			return 1
		}
		return 0
	})
	return out, nil
}

func decodeCand(name, dir string, kv *mvccpb.KeyValue) (store.Candidate, error) {
	var v candValue
	node, err := url.PathUnescape(string(kv.Key[len(dir):]))
	if err == nil {
		err = json.Unmarshal(kv.Value, &v)
	}
	if err != nil {
		return store.Candidate{}, fmt.Errorf("%w: etcd key %q does not hold a baton candidate: %v", store.ErrCorrupt, kv.Key, err)
	}
	return store.Candidate{Name: name, Node: node, Incarnation: v.Incarnation, Every: v.Every, Since: v.Since, Seen: v.Seen}, nil
}
