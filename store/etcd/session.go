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
//
// A dead session with a successor is deleted only when no record points
// at it (storedriver.CheckDeleteSucceeded), which takes a scan of the
// election records, and a write may make a name point at it meanwhile (a
// late write through it). So it goes in three steps: a transaction
// writes a deleting key for the session (if the session is still at the
// version expected); the scan reads at a revision after it; and the
// delete compares the deleting key and the session at the revisions
// written and read. Every write that makes a record point at a session
// compares that session's deleting key absent (notDeleting): it either
// committed before the deleting key, and the scan sees it, or it fails.
// The deleting key is removed with the session, or when the scan finds a
// record; a process that dies between the steps leaves it behind, which
// only refuses writes through that dead session (ErrConflict) until a
// DeleteSession of it runs again.
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
	key := s.keys.record(name)
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", c.modRev)}
	ops := []clientv3.Op{clientv3.OpDelete(key)}
	if c.stored.Successor != "" {
		mark := s.keys.deleting(name)
		resp, err := s.txn(ctx, "delete "+name, cmps, []clientv3.Op{clientv3.OpPut(mark, "")}, nil)
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			return fmt.Errorf("etcd: delete %q: %w", name, store.ErrConflict)
		}
		markRev := resp.Header.Revision
		ref, err := s.referenced(ctx, name)
		if err == nil && ref {
			err = storedriver.CheckDeleteSucceeded(name, c.stored, true)
		}
		if err != nil {
			// Best effort: a deleting key left behind is removed by the
			// next DeleteSession of the session.
			_, _ = s.txn(ctx, "delete "+name, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(mark), "=", markRev)}, []clientv3.Op{clientv3.OpDelete(mark)}, nil)
			return fmt.Errorf("etcd: %w", err)
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(mark), "=", markRev))
		ops = append(ops, clientv3.OpDelete(mark))
	}
	held, err := c.heldEvents()
	if err != nil {
		return err
	}
	if len(held) > 0 {
		b, _ := json.Marshal(held)
		ops = append(ops, clientv3.OpPut(s.keys.log(name, held[0].Seq), string(b)))
	}
	resp, err := s.txn(ctx, "delete "+name, cmps, ops, nil)
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("etcd: delete %q: %w", name, store.ErrConflict)
	}
	s.forget(name)
	return nil
}
