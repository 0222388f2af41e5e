package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
	"github.com/batonhq/baton/store/storetest"
)

func benchStore(b *testing.B) *sqlite.Store {
	b.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "baton.db"))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) store.Store { return benchStore(b) })
}
