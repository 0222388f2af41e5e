package batonprom_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
)

// The timings of the root package's tests.
const (
	lease  = 3 * time.Second
	renew  = time.Second
	margin = 200 * time.Millisecond
	poll   = 100 * time.Millisecond
)

func newElector(t *testing.T, st store.Store, node string, opts ...baton.Option) *baton.Elector {
	t.Helper()
	opts = append([]baton.Option{baton.WithNode(node), baton.WithLease(lease), baton.WithRenew(renew),
		baton.WithClockMargin(margin), baton.WithPoll(poll)}, opts...)
	e, err := baton.New(st, "billing", opts...)
	if err != nil {
		t.Fatal(err)
	}
	// Inside a synctest bubble every goroutine must end before the test
	// does; Close waits for the elector's.
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// campaign starts e.Campaign in a goroutine and returns a channel with its
// result.
func campaign(ctx context.Context, e *baton.Elector) <-chan won {
	ch := make(chan won, 1)
	go func() {
		t, err := e.Campaign(ctx)
		ch <- won{t, err}
	}()
	return ch
}

type won struct {
	term *baton.Term
	err  error
}

func mustCampaign(t *testing.T, e *baton.Elector) *baton.Term {
	t.Helper()
	term, err := e.Campaign(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return term
}

func shardNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("shard-%04d", i)
	}
	return names
}

// waitHeld lets virtual time pass in steps of poll until g holds n names;
// it fails after limit.
func waitHeld(t *testing.T, g *baton.Group, n int, limit time.Duration) {
	t.Helper()
	start := time.Now()
	for g.Stats().Held < n {
		if time.Since(start) > limit {
			t.Fatalf("%v holds %d of %d names after %v", g, g.Stats().Held, n, limit)
		}
		time.Sleep(poll / 10)
	}
}
