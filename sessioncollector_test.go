package baton_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// sessionRecords counts the session records in st.
func sessionRecords(t *testing.T, st store.Store) int {
	t.Helper()
	n, after := 0, ""
	for {
		p, err := st.NamesPage(context.Background(), store.NameQuery{After: after, Prefix: store.SessionPrefix, Limit: store.MaxPage})
		if err != nil {
			t.Fatal(err)
		}
		n += len(p)
		if len(p) < store.MaxPage {
			return n
		}
		after = p[len(p)-1]
	}
}

// 1,000 restarts of a Group process on one store, one in ten of them a
// process that dies without releasing (its store calls fail from then on):
// the session records left number no more than the live process's plus
// those that ended within one collection window, and then only the live
// one; every restart took every name with the next token, so none was
// lost or reused.
func TestGroupRestartsLeaveFewSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		names := shardNames(10)
		// The collector deletes a session dead for more than the grace
		// (lease + 2e + 4 leases), first one lease after a process
		// starts, then every 4 leases: a session is gone about this
		// long after it ended.
		window := lease + 2*margin + 4*lease + 2*4*lease
		var ended []time.Time
		var prev *baton.Group
		for i := 1; i <= 1000; i++ {
			node := fmt.Sprintf("p%d", i)
			g, err := baton.NewGroup(st.Client(node), baton.WithNode(node), baton.WithLease(lease), baton.WithRenew(renew),
				baton.WithClockMargin(margin), baton.WithPoll(poll))
			if err != nil {
				t.Fatal(err)
			}
			if prev != nil {
				// The previous process goes: cleanly (its session is
				// released), or dies (its session stays held until this
				// one ends it to take the names).
				if i%10 == 0 {
					st.SetUnreachable(fmt.Sprintf("p%d", i-1), true)
				} else if err := prev.Close(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			if err := g.Hold(t.Context(), names, nil); err != nil {
				t.Fatal(err)
			}
			waitHeld(t, g, len(names), 10*lease)
			ended = append(ended, time.Now())
			if prev != nil && i%10 == 0 {
				ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
				prev.Close(ctx)
				cancel()
			}
			for _, n := range names {
				if term := g.Term(n); term == nil || term.Token() != uint64(i) {
					t.Fatalf("restart %d: %s held with %v; want token %d", i, n, term, i)
				}
			}
			prev = g
			time.Sleep(2 * lease) // a process lives shorter than the grace
		}
		recent := 0
		for _, at := range ended {
			if time.Since(at) <= window {
				recent++
			}
		}
		left := sessionRecords(t, st)
		t.Logf("after 1000 restarts: %d session records (1 live, %d ended within the last %v); %d collected by the last process",
			left, recent, window, prev.Stats().SessionsCollected)
		if left > 1+recent {
			prev.Close(t.Context())
			t.Fatalf("%d session records after 1000 restarts; want at most %d (1 live + %d that ended within %v)", left, 1+recent, recent, window)
		}
		time.Sleep(window + 4*lease)
		if left := sessionRecords(t, st); left != 1 {
			prev.Close(t.Context())
			t.Fatalf("%d session records once the window passed; want 1 (the live one)", left)
		}
		prev.Close(t.Context())
	})
}

// 100 processes in a row, each dying without releasing (its store calls
// fail from then on) and each taken over by succession: every name is
// passed on 100 times without being written, further than the longest
// chain a store follows (store.MaxSuccession), and yet every process holds
// every name with the next token, because the collector settles each dead
// session's names onto its successor and then deletes it. Without the
// settling, the names' chains would grow by one a failover and no dead
// session would ever be deleted.
func TestGroupSuccessionsKeepChainsShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		names := shardNames(10)
		window := lease + 2*margin + 4*lease + 2*4*lease
		const processes = 100
		var prev *baton.Group
		var longest int
		for i := 1; i <= processes; i++ {
			node := fmt.Sprintf("p%d", i)
			g, err := baton.NewGroup(st.Client(node), baton.WithNode(node), baton.WithLease(lease), baton.WithRenew(renew),
				baton.WithClockMargin(margin), baton.WithPoll(poll), baton.WithSuccession())
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Hold(t.Context(), names, nil); err != nil {
				t.Fatal(err)
			}
			if prev != nil {
				time.Sleep(2 * renew) // g's session is live, and held long enough to succeed
				st.SetUnreachable(fmt.Sprintf("p%d", i-1), true)
			}
			waitHeld(t, g, len(names), 10*lease)
			if prev != nil {
				ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
				prev.Close(ctx)
				cancel()
			}
			for _, n := range names {
				if term := g.Term(n); term == nil || term.Token() != uint64(i) {
					t.Fatalf("process %d: %s held with %v; want token %d", i, n, term, i)
				}
			}
			longest = max(longest, sessionRecords(t, st))
			prev = g
			time.Sleep(2 * lease)
		}
		time.Sleep(window + 4*lease)
		left := sessionRecords(t, st)
		t.Logf("after %d successions: %d session records, at most %d at once; %d collected by the last process",
			processes, left, longest, prev.Stats().SessionsCollected)
		prev.Close(t.Context())
		if left != 1 {
			t.Fatalf("%d session records once the window passed; want 1 (the live one)", left)
		}
		if longest >= store.MaxSuccession {
			t.Fatalf("%d session records at once: chains that long are refused as corrupt", longest)
		}
	})
}
