// The virtual-time fixtures that the tests of package baton and of
// batonprom share: electors with the tests' timings, a campaign run in a
// goroutine, shard names, and a wait for a group's holdings, meant for a
// testing/synctest bubble, where the timings cost nothing.

package electortest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
)

// The timings of the tests: a lease of 3s renewed every second, a clock
// margin of 200ms and a poll of 100ms.
const (
	Lease  = 3 * time.Second
	Renew  = time.Second
	Margin = 200 * time.Millisecond
	Poll   = 100 * time.Millisecond
)

// NewElector returns an Elector for "billing" on st as node, with the
// tests' timings before opts, closed when the test ends (inside a synctest
// bubble every goroutine must end before the test does; Close waits for
// the elector's).
func NewElector(t testing.TB, st store.Store, node string, opts ...baton.Option) *baton.Elector {
	t.Helper()
	opts = append([]baton.Option{baton.WithNode(node), baton.WithLease(Lease), baton.WithRenew(Renew),
		baton.WithClockMargin(Margin), baton.WithPoll(Poll)}, opts...)
	e, err := baton.New(st, "billing", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// Won is the result of a campaign and the (virtual) time it returned.
type Won struct {
	Term *baton.Term
	Err  error
	At   time.Time
}

// Campaign starts e.Campaign in a goroutine and returns a channel with its
// result.
func Campaign(ctx context.Context, e *baton.Elector) <-chan Won {
	ch := make(chan Won, 1)
	go func() {
		t, err := e.Campaign(ctx)
		ch <- Won{t, err, time.Now()}
	}()
	return ch
}

// MustCampaign campaigns with e and fails the test if that fails.
func MustCampaign(t testing.TB, e *baton.Elector) *baton.Term {
	t.Helper()
	term, err := e.Campaign(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return term
}

// ShardNames returns n names shard-0000, shard-0001, ...
func ShardNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("shard-%04d", i)
	}
	return names
}

// WaitHeld lets (virtual) time pass in steps of a tenth of Poll until g
// holds n names, and returns how long that took; it fails after limit.
func WaitHeld(t testing.TB, g *baton.Group, n int, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for g.Stats().Held < n {
		if time.Since(start) > limit {
			t.Fatalf("%v holds %d of %d names after %v", g, g.Stats().Held, n, limit)
		}
		time.Sleep(Poll / 10)
	}
	return time.Since(start)
}
