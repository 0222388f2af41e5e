package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// TestRowStatementsPreparedOnFirstUse: Open prepares the multi-row
// statements of 1 and 2 rows only; a batch that needs a larger one runs
// it from its text, and the Store's next write prepares it. Both batches
// are written in full, with the smallest pool too (the poller holding one
// of its two connections), where preparing inside the transaction would
// wait for a connection forever.
func TestRowStatementsPreparedOnFirstUse(t *testing.T) {
	for _, conns := range []int{2, DefaultMaxConns} {
		t.Run(fmt.Sprintf("conns=%d", conns), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := Open(ctx, filepath.Join(t.TempDir(), "baton.db"), WithMaxConns(conns))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			feed := s.WatchChanges(ctx) // the poller takes a connection
			_ = feed
			prepared := func() (n int) {
				for k := range blockKinds {
					for _, r := range []*rowStmts{&s.st.upsert, &s.st.logEvent} {
						if r.st[k].Load() != nil {
							n++
						}
					}
				}
				return n
			}
			if got := prepared(); got != 2*eagerKinds {
				t.Fatalf("after Open: %d multi-row statements prepared, want %d", got, 2*eagerKinds)
			}
			batch := func(prefix string) {
				t.Helper()
				swaps := make([]store.Swap, 100) // 64 + 32 + 4 rows
				for i := range swaps {
					swaps[i] = store.Swap{Event: store.Acquired, Record: store.Record{
						Name: fmt.Sprintf("%s-%03d", prefix, i), Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Minute}}
				}
				res, err := s.SwapMany(ctx, swaps)
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range res {
					if r.Err != nil {
						t.Fatalf("swap %d: %v", i, r.Err)
					}
					got, err := s.Get(ctx, swaps[i].Record.Name)
					if err != nil || got.Holder != "n1" || got.Version != r.Record.Version {
						t.Fatalf("%s after the batch: %+v, %v; want holder n1, version %d", swaps[i].Record.Name, got, err, r.Record.Version)
					}
					evs, err := s.History(ctx, swaps[i].Record.Name, 0, 0)
					if err != nil || len(evs) != 1 || evs[0].Kind != store.Acquired {
						t.Fatalf("%s's log after the batch: %+v, %v; want one acquired event", swaps[i].Record.Name, evs, err)
					}
				}
			}
			batch("a")
			if got := prepared(); got != 2*eagerKinds {
				t.Fatalf("after the first batch: %d prepared, want still %d (run from their text)", got, 2*eagerKinds)
			}
			if !s.st.wanted.Load() {
				t.Fatal("after the first batch: no statement wanted")
			}
			batch("b") // its write prepares them first
			if got, want := prepared(), 2*(eagerKinds+3); got != want {
				t.Fatalf("after the second batch: %d prepared, want %d (4, 32 and 64 rows of each table)", got, want)
			}
			if s.st.wanted.Load() {
				t.Fatal("after the second batch: a statement still wanted")
			}
		})
	}
}
