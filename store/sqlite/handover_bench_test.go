package sqlite_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/electortest"
	"github.com/batonhq/baton/store/sqlite"
)

// BenchmarkHandoverResign measures a graceful handover between two
// handles on one file, as between two processes of one host: from the
// leader's Resign call until the contender, woken by its store's change
// poller, holds the next Term. ns/op is one handover: the release, the
// poll that sees it (woken by the -wal file's write on Linux; elsewhere
// every DefaultWatchInterval, 50ms: on average half of it), the
// contender's read and its acquisition. The contender starts
// waiting a random while before each resign, so that the resign falls at
// any moment of the poll.
func BenchmarkHandoverResign(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "baton.db")
	var els [2]*baton.Elector
	for i := range els {
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		els[i], err = baton.New(st, "handover", baton.WithNode([]string{"a", "b"}[i]))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { els[i].Close(context.Background()) })
	}
	electortest.BenchHandoverResign(b, els, func() time.Duration { return 100*time.Millisecond + rand.N(50*time.Millisecond) })
}
