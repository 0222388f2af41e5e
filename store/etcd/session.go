package etcd

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// DeleteSession implements store.Store: one transaction that
// deletes the key if it still has the version read (and the store its
// identity), and moves the election log events the record carries in its
// value to a log key of their own, so that History keeps them.
func (s *Store) DeleteSession(ctx context.Context, name string, expect int64) error {
	if err := storedriver.CheckSessionName(name); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	c, err := s.read(ctx, name)
	if err != nil {
		return err
	}
	if err := storedriver.CheckDeleteSession(name, c.rec, expect); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	ops := []clientv3.Op{clientv3.OpDelete(s.keys.record(name))}
	if len(c.events) > 0 {
		b, _ := json.Marshal(c.events)
		ops = append(ops, clientv3.OpPut(s.keys.log(name, c.events[0].Seq), string(b)))
	}
	resp, err := s.txn(ctx, "delete "+name, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.keys.record(name)), "=", expect)}, ops, nil)
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("etcd: delete %q: %w", name, store.ErrConflict)
	}
	s.forget(name)
	return nil
}
