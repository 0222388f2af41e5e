package etcd_test

import (
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
	"github.com/batonhq/baton/store/storetest"
)

func TestLister(t *testing.T) {
	c := sharedCluster(t)
	storetest.RunLister(t, func(t *testing.T) func() store.Store {
		prefix := freshPrefix(t)
		return func() store.Store { return openStore(t, c.Endpoints(), etcd.WithPrefix(prefix)) }
	})
}
