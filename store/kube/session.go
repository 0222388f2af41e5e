package kube

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batonhq/baton/store/storedriver"
)

// DeleteSession implements store.Store: the session's Lease is deleted
// with its resourceVersion as precondition, so a write that came between
// the check and the delete makes it check again.
func (s *Store) DeleteSession(ctx context.Context, name string, expect int64) error {
	if s.readOnly {
		return errReadOnly
	}
	objName := objectName(name)
	for {
		o, err := s.read(ctx, name)
		if err != nil {
			return err
		}
		cur, _ := o.record()
		if err := storedriver.CheckDeleteSession(name, cur, expect); err != nil {
			return err
		}
		rv := o.lease.ResourceVersion
		err = s.leases.Delete(ctx, objName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		switch {
		case err == nil:
			return nil
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			continue // read again: changed or gone
		default:
			return s.apiError(ctx, "delete", objName, err)
		}
	}
}
