package postgres_test

import (
	"testing"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storetest"
)

func TestLister(t *testing.T) {
	storetest.RunLister(t, func(t *testing.T) func() store.Store {
		url := withParam(t, pgtest.Start(t), "schema", "listing")
		return func() store.Store { return open(t, url) }
	})
}
