package memstore_test

import (
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
	"github.com/batonhq/baton/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() store.Store {
		s := memstore.New()
		return func() store.Store { return s.Client("") }
	})
}

func TestSuccessionConformance(t *testing.T) {
	storetest.RunSuccession(t, func(t *testing.T) func() store.Store {
		s := memstore.New()
		return func() store.Store { return s.Client("") }
	})
}
