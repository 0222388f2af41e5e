package etcd

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
)

var _ store.SessionDeleter = (*Store)(nil)

// DeleteSession implements store.SessionDeleter: one transaction that
// deletes the key if it still has the version read (and the store its
// identity), and moves the election log events the record carries in its
// value to a log key of their own, so that History keeps them.
func (s *Store) DeleteSession(ctx context.Context, name string, expect int64) error {
	if !store.IsSession(name) {
		return fmt.Errorf("etcd: delete %q: %w: not a session record", name, store.ErrInvalid)
	}
	c, err := s.read(ctx, name)
	switch {
	case err != nil:
		return err
	case c.rec.Version == 0:
		return fmt.Errorf("etcd: delete %q: %w", name, store.ErrNotFound)
	case c.rec.Version != expect:
		return fmt.Errorf("etcd: delete %q: %w", name, store.ErrConflict)
	case !c.rec.Free():
		return fmt.Errorf("etcd: delete %q: %w: the session is held (only dead sessions are deleted)", name, store.ErrInvalid)
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
