package kubetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/kube"
)

// testWatchSlowReader: the change feed of a reader that does not read
// while 1,000 names are written either reports every write (each name at
// the version written or a later one) or closes, so that the reader
// reads again (the API server ends a watch that falls behind, as it ends
// one after a compaction with 410 Gone): it never stays open having lost
// a change.
func (e *env) testWatchSlowReader(t *testing.T) {
	ns := e.namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	st, err := kube.Open(ctx, e.srv.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	feed := st.WatchChanges(ctx)
	const n = 1000
	want := map[string]int64{}
	for i := range n {
		name := fmt.Sprintf("w%d", i)
		rec, err := st.Swap(ctx, store.Swap{Record: store.Record{Name: name, Holder: "n1", Incarnation: "n1-1", Token: 1, Lease: time.Minute}, Event: store.Acquired})
		if err != nil {
			t.Fatal(err)
		}
		want[name] = rec.Version
	}
	seen, closed := 0, false
	deadline := time.After(30 * time.Second)
	for !closed && len(want) > 0 {
		select {
		case batch, ok := <-feed:
			if !ok {
				closed = true
				break
			}
			for _, c := range batch {
				seen++
				if v, ok := want[c.Name]; ok && c.Version >= v {
					delete(want, c.Name)
				}
			}
		case <-deadline:
			t.Fatalf("the feed is open, and %d of %d writes were not reported 30 s after the last: changes lost", len(want), n)
		}
	}
	if closed {
		t.Logf("the feed closed after %d entries, %d writes unreported: the reader reads again", seen, len(want))
	} else {
		t.Logf("the feed reported all %d writes (%d entries)", n, seen)
	}
}
