package etcd

import (
	"context"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
)

// SchemaVersion is the layout version this package writes and reads.
const SchemaVersion = 1

// checkSchema refuses a prefix inside another baton store's, writes the
// schema version if the prefix is empty, and fails with store.ErrSchema if
// it holds another version or keys that are not a baton store's. It never
// rewrites the version. It records the store's identity (the cluster id and
// the revision that created the schema key).
func (s *Store) checkSchema(ctx context.Context) error {
	if err := s.checkOutside(ctx); err != nil {
		return err
	}
	want := strconv.Itoa(SchemaVersion)
	k := s.keys.schema()
	resp, err := s.txn(ctx, "schema check",
		// Create the schema key only in an empty prefix.
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(s.keys.prefix), "=", 0).WithPrefix()},
		[]clientv3.Op{clientv3.OpPut(k, want)},
		[]clientv3.Op{clientv3.OpGet(k), clientv3.OpGet(s.keys.prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1))})
	if err != nil {
		return err
	}
	s.clusterID = resp.Header.ClusterId
	if resp.Succeeded {
		s.schemaRev = resp.Header.Revision
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 1 && string(kvs[0].Value) == want {
		s.schemaRev = kvs[0].CreateRevision
		return nil
	}
	if len(kvs) == 0 {
		other := "?"
		if ks := resp.Responses[1].GetResponseRange().Kvs; len(ks) > 0 {
			other = string(ks[0].Key)
		}
		return fmt.Errorf("%w: etcd prefix %q holds keys that are not a baton store's (such as %q) and no schema key; choose a prefix of baton's own (WithPrefix, ?prefix=)",
			store.ErrSchema, s.keys.prefix, other)
	}
	return fmt.Errorf("%w: etcd key %q holds schema version %q, this baton supports version %d; upgrade baton, or use another prefix (WithPrefix, ?prefix=)",
		store.ErrSchema, k, string(kvs[0].Value), SchemaVersion)
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

// readSchema checks the schema version without writing it.
func (s *Store) readSchema(ctx context.Context) error {
	k := s.keys.schema()
	resp, err := s.get(ctx, "schema check", k)
	if err != nil {
		return err
	}
	kv := firstKV(resp)
	switch {
	case kv == nil:
		return store.NoStore(fmt.Sprintf("etcd prefix %q (no key %q)", s.cfg.prefix, k))
	case string(kv.Value) != strconv.Itoa(SchemaVersion):
		return fmt.Errorf("%w: etcd key %q holds schema version %q, this baton supports version %d", store.ErrSchema, k, kv.Value, SchemaVersion)
	}
	s.clusterID, s.schemaRev = resp.Header.ClusterId, kv.CreateRevision
	return nil
}
