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

	jsonv1 "github.com/go-json-experiment/json/v1"
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
	// inlineEvents): a JSON array of loggedEvent, decoded only when a
	// write or the log needs them (cached.heldEvents), not by every read.
	Events json.RawMessage `json:"events,omitempty"`
	// Successor, SuccessorHolder and SuccessorIncarnation are those of a
	// dead session record (schema version 5).
	Successor            string `json:"successor,omitempty"`
	SuccessorHolder      string `json:"successor_holder,omitempty"`
	SuccessorIncarnation string `json:"successor_incarnation,omitempty"`
	// Pin, on a record that Settle wrote, is the version it stands for:
	// Record.Version while it is the newest write of its key (schema
	// version 5; see doc.go, "Successions"). 0: none, the version is the
	// key's ModRevision.
	Pin int64 `json:"pin,omitempty"`
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

// encodeRecord returns the stored form of r, whose last log event is
// logSeq and which carries events; pin is the version a settled record
// stands for (0: none).
func encodeRecord(r store.Record, logSeq uint64, events []loggedEvent, pin int64) string {
	var raw json.RawMessage
	if len(events) > 0 {
		raw, _ = json.Marshal(events)
	}
	b, _ := json.Marshal(recordValue{
		Holder: r.Holder, Incarnation: r.Incarnation, Token: r.Token, Lease: r.Lease,
		Session: r.Session, Transfer: r.Transfer, Updated: r.Updated, LogSeq: logSeq,
		Events: raw, Successor: r.Successor, SuccessorHolder: r.SuccessorHolder,
		SuccessorIncarnation: r.SuccessorIncarnation, Pin: pin,
	})
	return string(b)
}

// logOps returns what a write of name's record does to log evs, the next
// events after the events the record carries now (held): the events the
// written record carries, and the log keys to write, if any (see
// inlineEvents). A log key holds at most inlineEvents+1 events, so that
// a key holding an event after n is named at most inlineEvents below it
// (readLog relies on it).
func (s *Store) logOps(name string, held []loggedEvent, evs ...store.Event) ([]loggedEvent, []clientv3.Op) {
	all := slices.Clip(held)
	for _, ev := range evs {
		all = append(all, loggedEvent{Seq: ev.Seq, eventValue: toEventValue(ev)})
	}
	if len(all) <= inlineEvents {
		return all, nil
	}
	var ops []clientv3.Op
	for len(all) > 0 {
		n := min(len(all), inlineEvents+1)
		b, _ := json.Marshal(all[:n])
		ops = append(ops, clientv3.OpPut(s.keys.log(name, all[0].Seq), string(b)))
		all = all[n:]
	}
	return nil, ops
}

// decodeRecord returns the record of name held by kv (nil: the record does
// not exist, Version 0), unresolved (c.rec is c.stored; see resolveIn).
// Successor fields that no write of this package makes (a successor on a
// held record or on a name, holder fields without a successor, a pin at
// or above the key's ModRevision) are store.ErrCorrupt.
func decodeRecord(name string, kv *mvccpb.KeyValue) (cached, error) {
	if kv == nil {
		r := store.Record{Name: name}
		return cached{stored: r, rec: r}, nil
	}
	var v recordValue
	// The v1 semantics of encoding/json, on the faster decoder of its
	// successor: every read of a name decodes its value, and a bulk
	// takeover's reads spent most of their client CPU in encoding/json
	// (BENCHMARKS.md).
	if err := jsonv1.Unmarshal(kv.Value, &v); err != nil {
		return cached{}, fmt.Errorf("%w: etcd key %q does not hold a baton election record: %v", store.ErrCorrupt, kv.Key, err)
	}
	r := store.Record{
		Name: name, Holder: v.Holder, Incarnation: v.Incarnation, Token: v.Token, Lease: v.Lease,
		Session: v.Session, Transfer: v.Transfer, Version: kv.ModRevision, Updated: v.Updated,
		Successor: v.Successor, SuccessorHolder: v.SuccessorHolder, SuccessorIncarnation: v.SuccessorIncarnation,
	}
	bad := storedriver.SuccessorFault(r)
	switch {
	case bad != "":
	case v.Pin < 0 || (v.Pin != 0 && (v.Pin >= kv.ModRevision || store.IsSession(name))):
		bad = fmt.Sprintf("pinned version %d, at revision %d", v.Pin, kv.ModRevision)
	}
	if bad != "" {
		return cached{}, fmt.Errorf("%w: etcd key %q holds an election record with %s", store.ErrCorrupt, kv.Key, bad)
	}
	if v.Pin != 0 {
		r.Version = v.Pin
	}
	return cached{stored: r, rec: r, modRev: kv.ModRevision, logSeq: v.LogSeq, rawEvents: v.Events}, nil
}

// heldEvents returns the log events the record carries, decoding them
// from the stored value at the first call.
func (c *cached) heldEvents() ([]loggedEvent, error) {
	if c.rawEvents != nil {
		var evs []loggedEvent
		if err := json.Unmarshal(c.rawEvents, &evs); err != nil {
			return nil, fmt.Errorf("%w: etcd election record %q carries log events that are not baton's: %v", store.ErrCorrupt, c.stored.Name, err)
		}
		c.events, c.rawEvents = evs, nil
	}
	return c.events, nil
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

// Get implements store.Store with a linearizable read, and, for a record
// held through a session, one read of its chain's session records per
// hop at the revision of the first (see resolveAt).
func (s *Store) Get(ctx context.Context, name string) (store.Record, error) {
	c, err := s.read(ctx, name)
	if err != nil {
		return store.Record{}, err
	}
	if c.modRev == 0 {
		return store.Record{}, fmt.Errorf("election %q: %w", name, store.ErrNotFound)
	}
	return c.rec, nil
}

// read returns the current record of name (modRev 0 if it does not exist),
// resolved, and remembers it.
func (s *Store) read(ctx context.Context, name string) (cached, error) {
	resp, err := s.get(ctx, "get "+name, s.keys.record(name))
	if err != nil {
		return cached{}, err
	}
	c, err := decodeRecord(name, firstKV(resp))
	if err != nil {
		return cached{}, err
	}
	if err := s.resolveAt(ctx, resp.Header.Revision, []*cached{&c}, nil); err != nil {
		return cached{}, err
	}
	s.remember(name, c)
	return c, nil
}

// prepared is one write ready to be sent: its compares, its writes, and
// the record it stores.
type prepared struct {
	sw     store.Swap
	idx    int          // the swap's index in a SwapMany batch
	key    string       // the record's key
	rec    store.Record // as stored; Version set once applied
	logSeq uint64
	events []loggedEvent // the events the record carries
	guards []guard
	ops    []clientv3.Op
}

// prepare checks sw against cur, the record it replaces as resolved, and
// returns its write: the record, after the log events of the successions
// cur was passed on by (settle on write) and the swap's own, compared
// with what cur was resolved from (guards). got holds session records
// read for the batch; the new record's own session and a successor are
// looked up there and then in this handle's copies. A session the handle
// does not know is taken as not passed on: its resolution could only
// raise the new record's token, so the token rule is never checked with
// a higher one than the store's.
func (s *Store) prepare(cur cached, sw store.Swap, now time.Time, got map[string]cached) (prepared, error) {
	name := sw.Record.Name
	rec := sw.Record
	rec.Version, rec.Updated, rec.Via = 0, now, ""
	rec.SuccessorHolder, rec.SuccessorIncarnation = "", ""
	lookup := s.known(got)
	next := cached{stored: rec}
	if _, err := resolveIn(&next, lookup); err != nil {
		return prepared{}, err
	}
	var succ cached
	found := false
	if rec.Successor != "" {
		succ, found = lookup(rec.Successor)
		found = found && succ.modRev != 0
	}
	if err := storedriver.CheckSuccessionSwap(cur.rec, sw, next.rec.Token, succ.stored, found); err != nil {
		return prepared{}, err
	}
	gs := s.guards(&cur)
	rec = storedriver.WithSuccessor(rec, cur.stored, succ.stored)
	if rec.Successor != "" && cur.stored.Successor == "" {
		// The successor as held at this moment: the write compares it.
		gs = append(gs, guard{key: s.keys.record(rec.Successor), name: rec.Successor, rev: succ.modRev})
	}
	if rec.Session != "" {
		gs = append(gs, s.notDeleting(rec.Session))
	}
	evs := slices.Clip(cur.implied)
	seq := cur.logSeq + uint64(len(evs))
	if sw.Event != "" {
		seq++
		evs = append(evs, storedriver.NextEvent(seq, rec, sw.Event))
	}
	events, err := cur.heldEvents()
	if err != nil {
		return prepared{}, err
	}
	var logKeys []clientv3.Op
	if len(evs) > 0 {
		events, logKeys = s.logOps(name, events, evs...)
	}
	ops := append([]clientv3.Op{clientv3.OpPut(s.keys.record(name), encodeRecord(rec, seq, events, 0))}, logKeys...)
	return prepared{sw: sw, key: s.keys.record(name), rec: rec, logSeq: seq, events: events, guards: gs, ops: ops}, nil
}

// Swap implements store.Store: one transaction that compares the record's
// ModRevision with the one read and, for a record held through a session,
// the ModRevisions of the session records its resolution read (see
// guards), and writes the record and, with an event, the next log entry.
// The resolved version is compared with sw.Expect before it is sent. In
// steady state (the handle read or wrote the record at sw.Expect, and
// knows its sessions) that is one round trip; otherwise a read comes
// first. It is SwapMany of one swap.
func (s *Store) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	res, err := s.SwapMany(ctx, []store.Swap{sw})
	if err != nil {
		return store.Record{}, err
	}
	return res[0].Record, res[0].Err
}

// conflict builds the error of a swap whose compare failed, from the record
// as it is now, resolved.
func (s *Store) conflict(cur cached, p prepared) error {
	if err := storedriver.CheckSuccessionSwap(cur.rec, p.sw, p.sw.Record.Token, store.Record{}, false); err != nil {
		return err
	}
	return fmt.Errorf("%w: %q changed during the swap", store.ErrConflict, p.sw.Record.Name)
}

// History implements store.Store: one linearizable read-only transaction
// of the name's record, for the events it carries, of its log keys from
// the first that can hold an event after the given sequence number, and
// of the events logged without a write of the record (sideDir), merged
// into the log in order (mergeSide), and the events of the successions
// that passed the record on, not stored yet (numbered as the record's
// next write stores them: see prepare). A log key holds one event (schema
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
		held, err := cur.heldEvents()
		if err != nil {
			return nil, 0, nil, err
		}
		for _, e := range held {
			add(e.event(name, e.Seq))
		}
		// Then the events of the successions that passed it on, with the
		// numbers its next write stores them under.
		if err := s.resolveAt(ctx, resp.Header.Revision, []*cached{&cur}, nil); err != nil {
			return nil, 0, nil, err
		}
		for _, ev := range cur.implied {
			add(ev)
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
	Attrs       string        `json:"attrs,omitempty"`
}

// Heartbeat implements store.Store. Since and Seen are this client's
// clock, so the Age that Candidates reports compares two machines' clocks
// when the reader is not the writer: it is for people and operator
// checks, which the election never relies on.
func (s *Store) Heartbeat(ctx context.Context, c store.Candidate) error {
	if c.Name == "" || c.Node == "" {
		return fmt.Errorf("%w: a candidate needs a name and a node", store.ErrInvalid)
	}
	if err := store.CheckAttrs(c.Attrs); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	k := s.keys.cand(c.Name, c.Node)
	op := "heartbeat " + c.Name
	if c.Gone {
		_, err := s.txn(ctx, op, nil, []clientv3.Op{clientv3.OpDelete(k)}, nil)
		return err
	}
	now := s.now()
	v := candValue{Incarnation: c.Incarnation, Every: c.Every, Since: now, Seen: now, Attrs: c.Attrs}
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
	return store.Candidate{Name: name, Node: node, Incarnation: v.Incarnation, Every: v.Every, Since: v.Since, Seen: v.Seen, Attrs: v.Attrs}, nil
}
