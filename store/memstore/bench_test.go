package memstore_test

import (
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
	"github.com/batonhq/baton/store/storetest"
)

func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(*testing.B) store.Store { return memstore.New() })
}
