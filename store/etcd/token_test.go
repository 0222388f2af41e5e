package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// etcd's JSON could hold a token above store.MaxToken (written by hand, or
// by a baton that allowed it): no swap of that record is applied, and each
// is refused with a permanent error, so that a leader or contender stops
// instead of retrying forever. The next token would wrap to 0.
func TestStoredTokenAboveMaximum(t *testing.T) {
	c := sharedCluster(t)
	prefix := freshPrefix(t)
	s := openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := s.Client().Put(ctx, prefix+"e/big", `{"holder":"n1","incarnation":"n1-1","token":18446744073709551615,"lease":3000000000,"updated":"2026-01-01T00:00:00Z","log_seq":0}`)
	if err != nil {
		t.Fatal(err)
	}
	version := resp.Header.Revision
	for _, tok := range []uint64{1<<64 - 1, 0, store.MaxToken} {
		_, err := s.Swap(ctx, store.Swap{Expect: version, Record: acquire("big", "n1", tok)})
		if !store.Permanent(err) {
			t.Errorf("a swap to token %d of a record at 2^64-1: %v, want a permanent error", tok, err)
		}
		res, err := s.SwapMany(ctx, []store.Swap{{Expect: version, Record: acquire("big", "n2", tok), Event: store.TakenOver}})
		if err != nil || len(res) != 1 || !store.Permanent(res[0].Err) {
			t.Errorf("SwapMany to token %d of a record at 2^64-1: %+v, %v; want a permanent error", tok, res, err)
		}
	}
	got, err := s.Client().Get(ctx, prefix+"e/big")
	if err != nil || len(got.Kvs) != 1 || got.Kvs[0].ModRevision != version {
		t.Fatalf("the record was written: %+v, %v", got, err)
	}
}
