package memstore_test

import (
	"context"
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

func TestDamagedConformance(t *testing.T) {
	storetest.RunDamaged(t, func(t *testing.T) (func() store.Store, storetest.Planter) {
		s := memstore.New()
		return func() store.Store { return s.Client("") }, func(t *testing.T, job, period string, state store.RunState) {
			r, err := s.GetRun(context.Background(), job, period)
			if err != nil {
				t.Fatal(err)
			}
			r.State = state
			memstore.PlantRun(s, r)
		}
	})
}
