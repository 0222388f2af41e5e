package etcd

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
)

// SchemaVersion is the layout version this package writes and reads.
const SchemaVersion = 1

// checkSchema writes the schema version if the prefix has none and fails
// with store.ErrSchema if it holds another one. It never rewrites it.
func (s *Store) checkSchema(ctx context.Context) error {
	want := strconv.Itoa(SchemaVersion)
	k := s.keys.schema()
	resp, err := s.txn(ctx, "schema check",
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k), "=", 0)},
		[]clientv3.Op{clientv3.OpPut(k, want)},
		[]clientv3.Op{clientv3.OpGet(k)})
	if err != nil {
		return err
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 1 && string(kvs[0].Value) == want {
		return nil
	}
	found := "?"
	if len(kvs) == 1 {
		found = string(kvs[0].Value)
	}
	return fmt.Errorf("%w: etcd key %q holds schema version %q, this baton supports version %d; upgrade baton, or use another prefix (WithPrefix, ?prefix=)",
		store.ErrSchema, k, found, SchemaVersion)
}
