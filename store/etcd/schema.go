package etcd

import (
	"context"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
)

// SchemaVersion is the layout version this package writes. Version 2 added
// Record.Session to the election record's value. Version 3 lets a record
// carry its newest log events and a log key hold several (see
// inlineEvents). Version 4 adds a job's suspension (store.Job.Suspension)
// to its value and the log events written without a write of the record
// (sideDir). Stores of versions 1 to 3 are upgraded when a writer opens
// them (see upgrade) and read as they are by a read-only opener: their
// records simply have no session and carry no events. A baton that knows
// only an older version refuses a newer store at Open: one that knows only
// version 1 would take a name held through a live session for a record
// nobody renews, one that knows only version 2 would drop the events a
// record carries when it rewrites the record, and one that knows only
// version 3 would claim the periods of a suspended job. Version 5 adds
// successions (store.Succeeder): a dead session record's Successor,
// SuccessorHolder and SuccessorIncarnation, and the version a settled
// record stands for (see doc.go, "Successions"); one that knows only
// version 4 would take a name passed on by a succession at its stored
// token + 1, a token already handed out, and would overwrite a settled
// record without comparing the session it was passed on through.
const SchemaVersion = 5

// olderVersion reports whether v is a schema version this package
// upgrades from.
func olderVersion(v string) bool { return v == "1" || v == "2" || v == "3" || v == "4" }

// upgradeKey returns the key that marks an upgrade from an older version
// between its two steps (see upgrade).
func (k keys) upgrade() string { return k.prefix + "schema-upgrade" }

// checkSchema refuses a prefix inside another baton store's, writes the
// schema version if the prefix is empty, upgrades an older store, and
// fails with store.ErrSchema if the prefix holds another version or keys
// that are not a baton store's. It records the store's identity (the
// cluster id and the revision that created the schema key).
func (s *Store) checkSchema(ctx context.Context) error {
	if err := s.checkOutside(ctx); err != nil {
		return err
	}
	want := strconv.Itoa(SchemaVersion)
	k := s.keys.schema()
	// Each round either ends or moves an upgrade one step on (ours or a
	// concurrent opener's); a few rounds are plenty.
	for range 5 {
		resp, err := s.txn(ctx, "schema check",
			// Create the schema key only in an empty prefix.
			[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(s.keys.prefix), "=", 0).WithPrefix()},
			[]clientv3.Op{clientv3.OpPut(k, want)},
			[]clientv3.Op{
				clientv3.OpGet(k),
				clientv3.OpGet(s.keys.prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1)),
				clientv3.OpGet(s.keys.upgrade(), clientv3.WithKeysOnly()),
			})
		if err != nil {
			return err
		}
		s.clusterID = resp.Header.ClusterId
		if resp.Succeeded {
			s.schemaRev = resp.Header.Revision
			return nil
		}
		kv, marker := rangeKV(resp, 0), rangeKV(resp, 2)
		switch {
		case kv != nil && string(kv.Value) == want:
			s.schemaRev = kv.CreateRevision
			return nil
		case kv != nil && olderVersion(string(kv.Value)):
			err = s.upgrade(ctx, string(kv.Value), kv.CreateRevision)
		case kv == nil && marker != nil:
			err = s.finishUpgrade(ctx)
		case kv == nil:
			other := "?"
			if ks := resp.Responses[1].GetResponseRange().Kvs; len(ks) > 0 {
				other = string(ks[0].Key)
			}
			return fmt.Errorf("%w: etcd prefix %q holds keys that are not a baton store's (such as %q) and no schema key; choose a prefix of baton's own (WithPrefix, ?prefix=)",
				store.ErrSchema, s.keys.prefix, other)
		default:
			return fmt.Errorf("%w: etcd key %q holds schema version %q, this baton supports versions 1 to %d; upgrade baton, or use another prefix (WithPrefix, ?prefix=)",
				store.ErrSchema, k, string(kv.Value), SchemaVersion)
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("etcd schema check: %w: the schema key under %q kept changing while this process opened the store; retry", store.ErrUnavailable, s.keys.prefix)
}

// upgrade moves a store of an older version (schema key holding from,
// created at revision rev) to SchemaVersion. The records need no rewrite:
// a version 1 record is a version 2 record without a session, and a
// version 2 record is a version 3 record that carries no log events, its
// log one event per key, a version 3 job is a version 4 job that is
// not suspended, and a version 4 session record is a version 5 one that
// names no successor. What must change is what running older processes see: a
// handle of an older baton opened before the upgrade would read a record
// held through a session as a record whose holder stopped renewing it
// (version 1), drop the log events a record carries when it rewrites it
// (version 2), claim the periods of a job suspended after the upgrade
// (version 3), or take a name passed on by a succession with a token
// already handed out (version 4). So the upgrade deletes the schema key and creates it
// afresh, which gives it a new create revision: every write of a handle
// opened before compares the old one, fails, and reports
// store.ErrReplaced (its leaders end their terms at once), and the older
// baton's Open refuses the new version. A rolling upgrade therefore stops
// the older processes when the first new one opens the store; the store's
// id (StoreID) changes once.
//
// etcd refuses a transaction that deletes and puts one key, so the upgrade
// takes two: the first deletes the schema key and writes the upgrade
// marker, the second (finishUpgrade) writes the schema key and deletes the
// marker. An opener that finds the marker without a schema key (the
// upgrading process died between the two) finishes the upgrade itself.
func (s *Store) upgrade(ctx context.Context, from string, rev int64) error {
	k := s.keys.schema()
	_, err := s.txn(ctx, "schema upgrade from version "+from,
		[]clientv3.Cmp{
			clientv3.Compare(clientv3.Value(k), "=", from),
			clientv3.Compare(clientv3.CreateRevision(k), "=", rev),
		},
		[]clientv3.Op{clientv3.OpDelete(k), clientv3.OpPut(s.keys.upgrade(), strconv.Itoa(SchemaVersion))},
		nil)
	if err != nil {
		return err
	}
	// A failed compare means another opener moved first: the caller reads
	// again either way.
	return s.finishUpgrade(ctx)
}

// finishUpgrade is the second step of upgrade: the schema key at
// SchemaVersion, written only where it is missing and the marker is
// present.
func (s *Store) finishUpgrade(ctx context.Context) error {
	k, m := s.keys.schema(), s.keys.upgrade()
	_, err := s.txn(ctx, "schema upgrade",
		[]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(k), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(m), ">", 0),
		},
		[]clientv3.Op{clientv3.OpPut(k, strconv.Itoa(SchemaVersion)), clientv3.OpDelete(m)},
		nil)
	return err
}

// checkOutside refuses a prefix that lies inside another baton store's: a
// schema key at one of its ancestors ("/baton/schema" for "/baton/r/x/")
// means another deployment's keys, and this store's, would mix.
func (s *Store) checkOutside(ctx context.Context) error {
	p := s.keys.prefix
	var ops []clientv3.Op
	var parents []string
	for i := len(p) - 2; i >= 0; i-- {
		if p[i] == '/' {
			parents = append(parents, p[:i+1])
			ops = append(ops, clientv3.OpGet(p[:i+1]+"schema", clientv3.WithKeysOnly()))
		}
	}
	if len(ops) == 0 {
		return nil
	}
	resp, err := s.txn(ctx, "prefix check", nil, ops, nil)
	if err != nil {
		return err
	}
	for i, r := range resp.Responses {
		if len(r.GetResponseRange().Kvs) > 0 {
			return fmt.Errorf("%w: etcd prefix %q lies inside the baton store at prefix %q (its key %q exists): their keys would mix; choose a prefix outside it (WithPrefix, ?prefix=)",
				store.ErrSchema, p, parents[i], parents[i]+"schema")
		}
	}
	return nil
}

// checkIdentity returns an error wrapping store.ErrReplaced when a reply
// comes from another cluster than the one the store opened (a cluster
// restored from a snapshot, or other members at the endpoints), or when a
// write's identity compare failed because the schema key is gone or was
// recreated (the prefix was deleted, or wiped and opened afresh). txn is
// the reply of a write, nil for a read.
func (s *Store) checkIdentity(op string, h *etcdserverpb.ResponseHeader, txn *clientv3.TxnResponse) error {
	if s.clusterID != 0 && h != nil && h.ClusterId != s.clusterID {
		return fmt.Errorf("etcd %s: %w: the cluster at the endpoints is %x, not the cluster %x this store opened (restored or replaced)",
			op, store.ErrReplaced, h.ClusterId, s.clusterID)
	}
	if s.schemaRev == 0 || txn == nil || txn.Succeeded || len(txn.Responses) == 0 {
		return nil
	}
	kvs := txn.Responses[len(txn.Responses)-1].GetResponseRange().Kvs
	switch {
	case len(kvs) == 0:
		return fmt.Errorf("etcd %s: %w: the store's schema key %q is gone (its prefix was deleted)", op, store.ErrReplaced, s.keys.schema())
	case kvs[0].CreateRevision != s.schemaRev:
		return fmt.Errorf("etcd %s: %w: the store at prefix %q was recreated (schema key created at revision %d, this store's at %d)",
			op, store.ErrReplaced, s.keys.prefix, kvs[0].CreateRevision, s.schemaRev)
	}
	return nil
}

// StoreID implements store.Identifier: the cluster's id and the revision
// that created the store's schema key.
func (s *Store) StoreID() string { return fmt.Sprintf("%x-%d", s.clusterID, s.schemaRev) }

// readSchema checks the schema version without writing it. An older
// store is read as it is (its records have no sessions and carry no log
// events, its jobs are not suspended, its sessions have no successors).
func (s *Store) readSchema(ctx context.Context) error {
	k := s.keys.schema()
	resp, err := s.txn(ctx, "schema check", nil, []clientv3.Op{clientv3.OpGet(k), clientv3.OpGet(s.keys.upgrade(), clientv3.WithKeysOnly())}, nil)
	if err != nil {
		return err
	}
	kv := rangeKV(resp, 0)
	switch {
	case kv == nil && rangeKV(resp, 1) != nil:
		return fmt.Errorf("etcd schema check: %w: the store at prefix %q is being upgraded to schema version %d by a writer; retry in a moment", store.ErrUnavailable, s.cfg.prefix, SchemaVersion)
	case kv == nil:
		return store.NoStore(fmt.Sprintf("etcd prefix %q (no key %q)", s.cfg.prefix, k))
	case !olderVersion(string(kv.Value)) && string(kv.Value) != strconv.Itoa(SchemaVersion):
		return fmt.Errorf("%w: etcd key %q holds schema version %q, this baton supports versions 1 to %d; upgrade baton", store.ErrSchema, k, kv.Value, SchemaVersion)
	}
	s.clusterID, s.schemaRev = resp.Header.ClusterId, kv.CreateRevision
	return nil
}
