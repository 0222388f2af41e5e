package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
	"github.com/batonhq/baton/store/storetest"
)

func TestLister(t *testing.T) {
	storetest.RunLister(t, func(t *testing.T) func() store.Store {
		path := filepath.Join(t.TempDir(), "baton.db")
		return func() store.Store {
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatalf("Open(%s): %v", path, err)
			}
			return s
		}
	})
}
