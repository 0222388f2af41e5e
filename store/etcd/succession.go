package etcd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

var _ store.Succeeder = (*Store)(nil)

// resolveIn resolves c.stored (store.Resolve, the one rule) with the
// session records lookup knows (a cached with modRev 0: known to be
// absent), and fills c.rec, c.chain and c.implied. It returns the name of
// the first session record lookup does not know, "" when it knew them all;
// c is then resolved only up to it (read it, and call again).
func resolveIn(c *cached, lookup func(string) (cached, bool)) (string, error) {
	c.chain, c.implied, c.rec = nil, nil, c.stored
	if c.stored.Session == "" || c.stored.Free() {
		return "", nil // the common case: nothing to look up
	}
	if c.logSeq > math.MaxUint64-store.MaxSuccession-1 {
		return "", fmt.Errorf("%w: etcd record %q is at log sequence number %d, too near the largest", store.ErrCorrupt, c.stored.Name, c.logSeq)
	}
	missing := ""
	seq := c.logSeq
	rec, err := store.Resolve(c.stored, func(name string) (store.Record, bool) {
		sc, ok := lookup(name)
		if !ok {
			missing = name
			return store.Record{}, false
		}
		c.chain = append(c.chain, sessionRev{name: name, rev: sc.modRev})
		return sc.stored, sc.modRev != 0
	}, func(now, dead store.Record) {
		seq++
		c.implied = append(c.implied, storedriver.SuccessionEvent(seq, now, dead))
	})
	if err != nil {
		return "", err
	}
	if missing != "" {
		c.chain, c.implied = nil, nil
		return missing, nil
	}
	c.rec = rec
	return "", nil
}

// resolveAt resolves the records cs, read at revision rev, reading the
// session records their chains pass (one read of the distinct ones per
// hop) at that same revision, so that each record and its chain are one
// snapshot: the record as the store showed it at rev. got holds session
// records already read at rev (it may be nil). rev 0 reads the latest
// revision instead, and then also uses this handle's copies of the
// session records (for a write, whose transaction compares them: see
// guards).
func (s *Store) resolveAt(ctx context.Context, rev int64, cs []*cached, got map[string]cached) error {
	if got == nil {
		got = map[string]cached{}
	}
	lookup := func(name string) (cached, bool) { c, ok := got[name]; return c, ok }
	if rev == 0 {
		lookup = s.known(got)
	}
	for pass := 0; ; pass++ {
		var need []string
		seen := map[string]bool{}
		for _, c := range cs {
			miss, err := resolveIn(c, lookup)
			if err != nil {
				return err
			}
			if miss != "" && !seen[miss] {
				seen[miss] = true
				need = append(need, miss)
			}
		}
		if len(need) == 0 {
			return nil
		}
		if pass > store.MaxSuccession {
			// Each pass reads one more hop; Resolve refuses a longer chain.
			return fmt.Errorf("etcd resolve: %w: more than %d hops read", store.ErrInvalid, store.MaxSuccession)
		}
		if err := s.readSessions(ctx, rev, need, got); err != nil {
			return err
		}
	}
}

// readSessions reads the session records names at revision rev (0: the
// latest) into got (modRev 0: absent), and remembers them.
func (s *Store) readSessions(ctx context.Context, rev int64, names []string, got map[string]cached) error {
	out := make([]cached, len(names))
	if len(names) == 1 {
		// A plain read, as Get's: a read-only handle opened before an
		// upgrade keeps reading.
		var opts []clientv3.OpOption
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.get(ctx, "read session "+names[0], s.keys.record(names[0]), opts...)
		if err != nil {
			return err
		}
		if out[0], err = decodeRecord(names[0], firstKV(resp)); err != nil {
			return err
		}
		got[names[0]] = out[0]
		s.remember(names[0], out[0])
		return nil
	}
	err := s.inParallel(ctx, s.chunks(len(names), one, func(i int) int { return 2*len(names[i]) + 16 }),
		func(ctx context.Context, c chunk) error {
			ops := make([]clientv3.Op, 0, c.hi-c.lo)
			for _, name := range names[c.lo:c.hi] {
				if rev != 0 {
					ops = append(ops, clientv3.OpGet(s.keys.record(name), clientv3.WithRev(rev)))
				} else {
					ops = append(ops, clientv3.OpGet(s.keys.record(name)))
				}
			}
			resp, err := s.txn(ctx, fmt.Sprintf("read %d session records", len(ops)), nil, ops, nil)
			if err != nil {
				return err
			}
			for j, name := range names[c.lo:c.hi] {
				if out[c.lo+j], err = decodeRecord(name, rangeKV(resp, j)); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	for i, name := range names {
		got[name] = out[i]
		s.remember(name, out[i])
	}
	return nil
}

// guard is one compare of a write: the key is at ModRevision rev (0:
// absent). name is the record the key holds ("" for another key).
type guard struct {
	key  string
	name string
	rev  int64
}

func (g guard) cmp() clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(g.key), "=", g.rev)
}

// guards returns what a write that relies on c (resolved) compares: the
// record's own key at the ModRevision read, and every session record its
// resolution read, at the ModRevision read. A succession of the session
// the record is held through (or of any session of its chain), a
// deletion, or any other write of them between the read and the write
// fails it.
func (s *Store) guards(c *cached) []guard {
	out := make([]guard, 0, 1+len(c.chain))
	out = append(out, guard{key: s.keys.record(c.stored.Name), name: c.stored.Name, rev: c.modRev})
	for _, sr := range c.chain {
		out = append(out, guard{key: s.keys.record(sr.name), name: sr.name, rev: sr.rev})
	}
	return out
}

// notDeleting is the guard of a write that makes a record point at the
// session record session: no DeleteSession of it is under way (see
// DeleteSession).
func (s *Store) notDeleting(session string) guard {
	return guard{key: s.keys.deleting(session)}
}

// scan calls f with every record of the election prefix whose key is
// above from (in key order), read at one revision in pages of rangePage,
// until f returns false; it returns that revision.
func (s *Store) scan(ctx context.Context, from string, f func(name string, kv *mvccpb.KeyValue) (bool, error)) (int64, error) {
	dir := s.keys.prefix + "e/"
	end := clientv3.GetPrefixRangeEnd(dir)
	var rev int64
	for key := from; ; {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(rangePage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.get(ctx, fmt.Sprintf("scan up to %d records", rangePage), key, opts...)
		if err != nil {
			return 0, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			name, err := url.PathUnescape(strings.TrimPrefix(string(kv.Key), dir))
			if err != nil {
				return 0, fmt.Errorf("etcd: key %q: %w: %v", kv.Key, store.ErrCorrupt, err)
			}
			more, err := f(name, kv)
			if err != nil || !more {
				return rev, err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// quoted returns the JSON form of a string value as encodeRecord writes
// it, after field: what a scan looks for before it decodes a value.
func quoted(field, v string) []byte {
	b, _ := json.Marshal(v)
	return append([]byte(`"`+field+`":`), b...)
}

// chainInto returns session and the dead session records whose chain of
// successors reaches it (storedriver.ChainInto), read from the range of
// the session records (few: the collector deletes the dead ones).
func (s *Store) chainInto(ctx context.Context, session string) ([]string, error) {
	successors := map[string]string{}
	field := []byte(`"successor":`)
	_, err := s.scan(ctx, s.keys.record(store.SessionPrefix), func(name string, kv *mvccpb.KeyValue) (bool, error) {
		if !store.IsSession(name) {
			return false, nil
		}
		if !bytes.Contains(kv.Value, field) {
			return true, nil
		}
		c, err := decodeRecord(name, kv)
		if err != nil {
			return false, err
		}
		if c.stored.Successor != "" {
			successors[name] = c.stored.Successor
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return storedriver.ChainInto(session, successors), nil
}

// heldThrough returns up to limit records (limit <= 0: all) whose stored
// record points at one of sessions, with keys after the key of after,
// resolved, all read at one revision.
func (s *Store) heldThrough(ctx context.Context, sessions []string, after string, limit int) ([]*cached, error) {
	from := s.keys.prefix + "e/"
	if after != "" {
		from = s.keys.record(after) + "\x00"
	}
	needles := make([][]byte, len(sessions))
	for i, sess := range sessions {
		needles[i] = quoted("session", sess)
	}
	var out []*cached
	rev, err := s.scan(ctx, from, func(name string, kv *mvccpb.KeyValue) (bool, error) {
		if store.IsSession(name) || !slices.ContainsFunc(needles, func(n []byte) bool { return bytes.Contains(kv.Value, n) }) {
			return true, nil
		}
		c, err := decodeRecord(name, kv)
		if err != nil {
			return false, err
		}
		if slices.Contains(sessions, c.stored.Session) {
			out = append(out, &c)
		}
		return limit <= 0 || len(out) < limit, nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.resolveAt(ctx, rev, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// HeldThrough implements store.Succeeder: a range read of the session
// records (chainInto), then a range read of the election records from
// after on, in pages of rangePage at one revision, keeping those whose
// stored record points at session or at a dead session chaining into it, until limit of them (or
// the end), and then one read of their chains' session records per hop
// at that revision. It costs a read of every record between the first
// and the last it returns: a successor listing the names it was passed
// on reads the election records once, page by page (see doc.go,
// "Successions", for why there is no index key). The order is that of
// the escaped keys, byte order of the name for names of letters, digits
// and "-._~" (as NamesPage), and a page continues after the last name of
// the one before.
func (s *Store) HeldThrough(ctx context.Context, session, after string, limit int) ([]store.Record, error) {
	sessions, err := s.chainInto(ctx, session)
	if err != nil {
		return nil, err
	}
	cs, err := s.heldThrough(ctx, sessions, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]store.Record, len(cs))
	for i, c := range cs {
		s.remember(c.stored.Name, *c)
		out[i] = c.rec
	}
	return out, nil
}

// settlePage is how many names Settle reads at a time.
const settlePage = 500

// Settle implements store.Succeeder. It reads the names held through
// session a page at a time (as HeldThrough) and rewrites each in its
// resolved form, with the log events of the successions it passed, in
// transactions of many names that compare each name's key and its
// chain's session keys at the ModRevisions read; a transaction that fails
// (a name written meanwhile) is read and sent again. The rewritten value
// carries the resolved version, which it reports as Record.Version
// while it is the newest write of the name (see doc.go, "Successions"):
// so its version does not change.
func (s *Store) Settle(ctx context.Context, session string, limit int) (int, error) {
	if !store.IsSession(session) {
		return 0, nil
	}
	dead, err := s.read(ctx, session)
	if err != nil {
		return 0, err
	}
	if dead.modRev == 0 || !dead.stored.Free() || dead.stored.Successor == "" {
		return 0, nil
	}
	n, failed := 0, 0
	for limit <= 0 || n < limit {
		page := settlePage
		if limit > 0 {
			page = min(page, limit-n)
		}
		cs, err := s.heldThrough(ctx, []string{session}, "", page)
		if err != nil || len(cs) == 0 {
			return n, err
		}
		done, err := s.settle(ctx, cs)
		n += done
		if err != nil {
			return n, err
		}
		if done < len(cs) {
			if failed++; failed == fenceRetries {
				return n, fmt.Errorf("etcd settle %s: %w: its names kept changing during the rewrite; try again", session, store.ErrUnavailable)
			}
		}
	}
	return n, nil
}

// settle rewrites the records cs (resolved) in their resolved form, a
// transaction per chunk, and returns how many it rewrote.
func (s *Store) settle(ctx context.Context, cs []*cached) (int, error) {
	ready := make([]prepared, 0, len(cs))
	for _, c := range cs {
		if len(c.implied) == 0 {
			continue // not passed on after all (its chain ends at once)
		}
		rec := c.rec
		rec.Via = ""
		held, err := c.heldEvents()
		if err != nil {
			return 0, err
		}
		events, logKeys := s.logOps(rec.Name, held, c.implied...)
		seq := c.logSeq + uint64(len(c.implied))
		gs := append(s.guards(c), s.notDeleting(rec.Session))
		ops := append([]clientv3.Op{clientv3.OpPut(s.keys.record(rec.Name), encodeRecord(rec, seq, events, rec.Version))}, logKeys...)
		ready = append(ready, prepared{key: s.keys.record(rec.Name), rec: rec, logSeq: seq, events: events, guards: gs, ops: ops})
	}
	var mu = make(chan struct{}, 1)
	done := 0
	err := s.inParallel(ctx, s.swapChunks(ready), func(ctx context.Context, c chunk) error {
		part := ready[c.lo:c.hi]
		gs := distinctGuards(part)
		cmps := make([]clientv3.Cmp, len(gs))
		for i, g := range gs {
			cmps[i] = g.cmp()
		}
		var then []clientv3.Op
		for _, p := range part {
			then = append(then, p.ops...)
		}
		resp, err := s.txn(ctx, fmt.Sprintf("settle %d records", len(part)), cmps, then, nil)
		if err != nil || !resp.Succeeded {
			return err
		}
		for _, p := range part {
			s.remember(p.rec.Name, cached{stored: p.rec, modRev: resp.Header.Revision, logSeq: p.logSeq, events: p.events})
		}
		mu <- struct{}{}
		done += len(part)
		<-mu
		return nil
	})
	return done, err
}

// referenced reports whether a stored record points at the session record
// session: a name held through it, or a dead session it succeeded. It
// reads every election record, a page at a time.
func (s *Store) referenced(ctx context.Context, session string) (bool, error) {
	held, succ := quoted("session", session), quoted("successor", session)
	found := false
	_, err := s.scan(ctx, s.keys.prefix+"e/", func(name string, kv *mvccpb.KeyValue) (bool, error) {
		if !bytes.Contains(kv.Value, held) && !bytes.Contains(kv.Value, succ) {
			return true, nil
		}
		c, err := decodeRecord(name, kv)
		if err != nil {
			return false, err
		}
		found = (c.stored.Session == session && !store.IsSession(name)) || c.stored.Successor == session
		return !found, nil
	})
	return found, err
}
