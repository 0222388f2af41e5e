package etcd_test

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// succStores opens two handles on one fresh prefix: what one process
// knows (its copies of records and sessions) is stale for the other.
func succStores(t *testing.T) (a, b *etcd.Store, prefix string) {
	t.Helper()
	c := sharedCluster(t)
	prefix = freshPrefix(t)
	a = openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
	b = openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b, prefix
}

func sessRec(node string) store.Record {
	return store.Record{Name: store.SessionPrefix + node + "/i1/1", Holder: node, Incarnation: "i1", Lease: 3 * time.Second}
}

func swapOK(t *testing.T, s store.Store, sw store.Swap) store.Record {
	t.Helper()
	rec, err := s.Swap(bg(t, 10*time.Second), sw)
	if err != nil {
		t.Fatalf("Swap(%+v): %v", sw, err)
	}
	return rec
}

// TestSuccessionStaleCopies: a handle whose copies of a name and of the
// session it is held through predate a succession made by another
// handle cannot release the name with the version it read (the write
// compares the session key), and a write prepared before another
// handle's Settle still applies (the pinned version).
func TestSuccessionStaleCopies(t *testing.T) {
	a, b, _ := succStores(t)
	ctx := bg(t, 20*time.Second)
	s1, s2 := swapOK(t, a, store.Swap{Record: sessRec("n1")}), swapOK(t, b, store.Swap{Record: sessRec("n2")})
	held := swapOK(t, a, store.Swap{Record: store.Record{Name: "tenant-1", Holder: "n1", Incarnation: "i1", Session: s1.Name, Token: 5, Lease: s1.Lease}, Event: store.Acquired})
	// b ends n1's session with its own as successor; a knows nothing of it.
	cur1, err := b.Get(ctx, s1.Name)
	if err != nil {
		t.Fatal(err)
	}
	swapOK(t, b, store.Swap{Expect: cur1.Version, Record: store.Record{Name: s1.Name, Lease: s1.Lease, Successor: s2.Name}})
	release := store.Record{Name: "tenant-1", Token: held.Token, Lease: held.Lease}
	if _, err := a.Swap(ctx, store.Swap{Expect: held.Version, Record: release, Event: store.Released}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the dead holder's release from its own copies: %v, want ErrConflict", err)
	}
	if res, err := a.SwapMany(ctx, []store.Swap{{Expect: held.Version, Record: release, Event: store.Released}}); err != nil || !errors.Is(res[0].Err, store.ErrConflict) {
		t.Fatalf("the same in a batch: %+v, %v; want ErrConflict", res, err)
	}
	got, err := b.Get(ctx, "tenant-1")
	if err != nil || got.Holder != "n2" || got.Token != 6 || got.Via != s1.Name {
		t.Fatalf("after the refused release: %+v, %v", got, err)
	}
	// a reads the passed-on record; b settles it; a's write prepared
	// from its read applies.
	seen, err := a.Get(ctx, "tenant-1")
	if err != nil || seen != got {
		t.Fatalf("a's read = %+v, %v; want %+v", seen, err, got)
	}
	if n, err := b.Settle(ctx, s1.Name, 0); n != 1 || err != nil {
		t.Fatalf("Settle = %d, %v", n, err)
	}
	if after, err := b.Get(ctx, "tenant-1"); err != nil || after.Version != got.Version || after.Via != "" || after.Token != 6 {
		t.Fatalf("after Settle: %+v, %v; want version %d", after, err, got.Version)
	}
	if _, err := a.Swap(ctx, store.Swap{Expect: got.Version, Record: store.Record{Name: "tenant-1", Token: 6, Lease: got.Lease}, Event: store.Released}); err != nil {
		t.Fatalf("a release prepared before Settle, from another handle's copies: %v", err)
	}
}

// TestSuccessionDeletingKey: a write that makes a name point at a session
// compares the session's deleting key absent (DeleteSession writes it
// before its scan), and DeleteSession removes one left behind.
func TestSuccessionDeletingKey(t *testing.T) {
	a, _, prefix := succStores(t)
	ctx := bg(t, 20*time.Second)
	s1, s2 := swapOK(t, a, store.Swap{Record: sessRec("n1")}), swapOK(t, a, store.Swap{Record: sessRec("n2")})
	dead := swapOK(t, a, store.Swap{Expect: s1.Version, Record: store.Record{Name: s1.Name, Lease: s1.Lease, Successor: s2.Name}})
	// A deleting key left behind by a DeleteSession that died mid-way.
	putRaw(t, a.Client(), prefix, "d/"+url.PathEscape(s1.Name), "")
	late := store.Record{Name: "tenant-9", Holder: "n1", Incarnation: "i1", Session: s1.Name, Token: 1, Lease: s1.Lease}
	if _, err := a.Swap(ctx, store.Swap{Record: late, Event: store.Acquired}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a write through a session being deleted: %v, want ErrConflict", err)
	}
	if err := a.DeleteSession(ctx, s1.Name, dead.Version); err != nil {
		t.Fatalf("DeleteSession of an unreferenced session over a left deleting key: %v", err)
	}
	resp, err := a.Client().Get(ctx, prefix+"d/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("deleting keys after the delete: %v, %v", resp, err)
	}
}

// TestSuccessionHostile: cycles and over-long chains are ErrInvalid
// (store.Resolve), successor fields no write makes are ErrCorrupt.
func TestSuccessionHostile(t *testing.T) {
	a, _, prefix := succStores(t)
	ctx := bg(t, 20*time.Second)
	sess := func(i int) string { return fmt.Sprintf("%sh%d/i1/1", store.SessionPrefix, i) }
	dead := func(succ string) string {
		return fmt.Sprintf(`{"token":0,"lease":3000000000,"updated":"2026-01-02T03:04:05Z","log_seq":0,"successor":%q,"successor_holder":"x","successor_incarnation":"i"}`, succ)
	}
	name := func(n, s string) string {
		return fmt.Sprintf(`{"holder":"n","incarnation":"i","token":1,"lease":3000000000,"session":%q,"updated":"2026-01-02T03:04:05Z","log_seq":0}`, s)
	}
	// A cycle of two, and a chain of MaxSuccession+1 sessions.
	putRaw(t, a.Client(), prefix, "e/"+url.PathEscape(sess(0)), dead(sess(1)), "e/"+url.PathEscape(sess(1)), dead(sess(0)), "e/cyc", name("cyc", sess(0)))
	for i := 10; i <= 10+store.MaxSuccession; i++ {
		putRaw(t, a.Client(), prefix, "e/"+url.PathEscape(sess(i)), dead(sess(i+1)))
	}
	putRaw(t, a.Client(), prefix, "e/long", name("long", sess(10)))
	for _, n := range []string{"cyc", "long"} {
		if _, err := a.Get(ctx, n); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Get(%s): %v, want ErrInvalid", n, err)
		}
		if _, err := a.GetMany(ctx, []string{n}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("GetMany(%s): %v, want ErrInvalid", n, err)
		}
		if _, err := a.History(ctx, n, 0, 0); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("History(%s): %v, want ErrInvalid", n, err)
		}
	}
	for _, bad := range []struct{ key, value string }{
		{"e/" + url.PathEscape(sess(90)), `{"token":0,"lease":1,"updated":"2026-01-02T03:04:05Z","log_seq":0,"successor_holder":"x"}`},
		{"e/" + url.PathEscape(sess(91)), `{"holder":"n","token":0,"lease":1,"updated":"2026-01-02T03:04:05Z","log_seq":0,"successor":"` + sess(1) + `","successor_holder":"x"}`},
		{"e/plain", `{"token":0,"lease":1,"updated":"2026-01-02T03:04:05Z","log_seq":0,"successor":"` + sess(1) + `","successor_holder":"x"}`},
		{"e/pinned", `{"token":0,"lease":1,"updated":"2026-01-02T03:04:05Z","log_seq":0,"pin":999999999}`},
	} {
		putRaw(t, a.Client(), prefix, bad.key, bad.value)
		n, _ := url.PathUnescape(bad.key[2:])
		if _, err := a.Get(ctx, n); !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("Get of %s = %s: %v, want ErrCorrupt", n, bad.value, err)
		}
	}
}
