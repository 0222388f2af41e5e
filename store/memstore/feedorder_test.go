package memstore_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
	"github.com/batonhq/baton/store/storetest"
)

// orderedStore is a store whose feed says how far it reported.
type orderedStore interface {
	store.Store
	store.OrderedFeed
}

// aheadFeed breaks store.OrderedFeed's promise: its feed's Through runs
// 40 versions ahead of what it reported, and comes before the changes it
// covers. It hands each batch on one change at a time, the first with the
// batch's Through plus 40: the case's reader then holds a Through that
// claims the rest of the batch (and more) while it has seen one change,
// whatever the machine's load. (Forty ahead on the batch's last change
// alone was not enough: on a loaded machine the feed can deliver the
// whole run in one batch, which names every write, and the lie went
// unseen.)
type aheadFeed struct{ orderedStore }

func (a aheadFeed) WatchChanges(ctx context.Context) <-chan []store.Change {
	in, out := a.orderedStore.WatchChanges(ctx), make(chan []store.Change)
	go func() {
		defer close(out)
		for b := range in {
			through := int64(0)
			if n := len(b); n > 0 && b[n-1].Through > 0 {
				through = b[n-1].Through + 40
				b[n-1].Through = 0
			}
			for i, c := range b {
				if i == 0 {
					c.Through = through
				}
				select {
				case out <- []store.Change{c}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// TestFeedInOrderSeesAFeedAhead: the conformance case FeedInOrder fails
// a store whose feed claims more than it reported. It runs the case in a
// child process (a failed case fails its test), which must fail with the
// case's message.
func TestFeedInOrderSeesAFeedAhead(t *testing.T) {
	if os.Getenv("BATON_FEED_AHEAD") == "1" {
		storetest.Run(t, func(t *testing.T) func() store.Store {
			s := memstore.New()
			return func() store.Store { return aheadFeed{s.Client("").(orderedStore)} }
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestFeedInOrderSeesAFeedAhead$/^FeedInOrder$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "BATON_FEED_AHEAD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "was not named by then") {
		t.Fatalf("FeedInOrder on a feed 40 versions ahead: %v, want it to fail naming a write not reported:\n%s", err, out)
	}
}
