package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// meta reads the counter and the changed column of name.
func counterAndChanged(t *testing.T, s *Store, name string) (counter, changed int64) {
	t.Helper()
	ctx := context.Background()
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM baton_meta WHERE key = '`+counterKey+`'`).Scan(&counter); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT changed FROM baton_election WHERE name = ?`, name).Scan(&changed); err != nil {
		t.Fatal(err)
	}
	return counter, changed
}

// TestRenewalWritesOneRow: a renewal of a name's own record, alone (Swap)
// or in a batch (SwapMany), raises the record's version above the counter
// and its own and writes neither the counter nor the changed column, so it
// is not on the change feed; the record's next other write gets a version
// above every version it had. A session's renewal (Swap) writes one row
// as well, and is on the feed all the same (its observers learn of it
// there: the poller reads the session records' versions), and a session
// renewed, freed, deleted and made again gets a version above every
// version it had.
func TestRenewalWritesOneRow(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "baton.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	name := "billing"
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: name, Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	counter0, changed0 := counterAndChanged(t, s, name)
	if changed0 != rec.Version || counter0 != rec.Version {
		t.Fatalf("after the creation: counter %d, changed %d, version %d; want all equal", counter0, changed0, rec.Version)
	}
	feed := s.WatchChanges(ctx)
	prev := rec.Version
	for i := range 6 {
		if i%2 == 0 {
			rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec})
		} else {
			var res []store.SwapResult
			res, err = s.SwapMany(ctx, []store.Swap{{Expect: rec.Version, Record: rec}})
			if err == nil {
				rec, err = res[0].Record, res[0].Err
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Version <= prev {
			t.Fatalf("renewal %d: version %d after %d", i, rec.Version, prev)
		}
		prev = rec.Version
		if got, err := s.Get(ctx, name); err != nil || got != rec {
			t.Fatalf("Get after renewal %d = %+v, %v; want %+v", i, got, err, rec)
		}
		if c, ch := counterAndChanged(t, s, name); c != counter0 || ch != changed0 {
			t.Fatalf("renewal %d wrote the counter (%d, was %d) or changed (%d, was %d)", i, c, counter0, ch, changed0)
		}
	}
	// A stale renewal is a conflict.
	if _, err := s.Swap(ctx, store.Swap{Expect: rec.Version - 1, Record: rec}); err == nil {
		t.Fatal("a renewal at an old version applied")
	}
	select {
	case b := <-feed:
		t.Fatalf("the change feed named renewals: %v", b)
	case <-time.After(3 * s.cfg.watchInterval):
	}
	// The release is a change: on the feed, above every version.
	free := rec
	free.Holder, free.Incarnation = "", ""
	if free, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: free}); err != nil {
		t.Fatal(err)
	}
	if free.Version <= rec.Version {
		t.Fatalf("release at version %d after renewals to %d", free.Version, rec.Version)
	}
	if c, ch := counterAndChanged(t, s, name); c != free.Version || ch != free.Version {
		t.Fatalf("after the release: counter %d, changed %d; want %d", c, ch, free.Version)
	}
	select {
	case b := <-feed:
		if len(b) != 1 || b[0].Name != name || b[0].Version != free.Version {
			t.Fatalf("feed after the release: %v", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the change feed did not name the release")
	}

	// A session: its renewal writes one row, and is on the feed.
	sess := store.SessionPrefix + "n1/i1/1"
	srec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: sess, Holder: "n1", Incarnation: "i1", Lease: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	<-feed // its creation
	c1, ch1 := counterAndChanged(t, s, sess)
	for i := range 3 {
		if srec, err = s.Swap(ctx, store.Swap{Expect: srec.Version, Record: srec}); err != nil {
			t.Fatal(err)
		}
		if c, ch := counterAndChanged(t, s, sess); c != c1 || ch != ch1 {
			t.Fatalf("session renewal %d wrote the counter (%d, was %d) or changed (%d, was %d)", i, c, c1, ch, ch1)
		}
		select {
		case b := <-feed:
			if len(b) != 1 || b[0].Name != sess || b[0].Version != srec.Version {
				t.Fatalf("feed after the session's renewal %d (version %d): %v", i, srec.Version, b)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the change feed did not name the session's renewal %d", i)
		}
	}
	sfree := srec
	sfree.Holder, sfree.Incarnation = "", ""
	if sfree, err = s.Swap(ctx, store.Swap{Expect: srec.Version, Record: sfree}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, sess, sfree.Version); err != nil {
		t.Fatal(err)
	}
	again, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: sess, Holder: "n1", Incarnation: "i1", Lease: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if again.Version <= sfree.Version {
		t.Fatalf("session made again at version %d, at most its old %d", again.Version, sfree.Version)
	}
}

// TestSessionPrefixEnd: sessionPrefixEnd bounds exactly the names that
// begin with store.SessionPrefix, in byte order.
func TestSessionPrefixEnd(t *testing.T) {
	p := store.SessionPrefix
	if want := p[:len(p)-1] + string(rune(p[len(p)-1]+1)); sessionPrefixEnd != want {
		t.Fatalf("sessionPrefixEnd = %q, want %q", sessionPrefixEnd, want)
	}
}
