package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// putRaw writes keys under prefix as they are, bypassing the store.
func putRaw(t *testing.T, cli *clientv3.Client, prefix string, kvs ...string) {
	t.Helper()
	ctx := bg(t, 10*time.Second)
	for i := 0; i < len(kvs); i += 2 {
		if _, err := cli.Put(ctx, prefix+kvs[i], kvs[i+1]); err != nil {
			t.Fatal(err)
		}
	}
}

// olderStore writes, key by key, a store as a baton of schema version 1
// or 2 left it: one election record with its log, a job and a run. A
// version 2 record is held through a session and its log has six events,
// one per key.
func olderStore(t *testing.T, cli *clientv3.Client, prefix string, version int) {
	if version == 1 {
		putRaw(t, cli, prefix,
			"schema", "1",
			"e/billing", `{"holder":"n1","incarnation":"i1","token":3,"lease":15000000000,"updated":"2026-01-02T03:04:05Z","log_seq":1}`,
			"l/billing/00000000000000000001", `{"kind":"acquired","holder":"n1","incarnation":"i1","token":3,"time":"2026-01-02T03:04:05Z"}`,
		)
	} else {
		putRaw(t, cli, prefix,
			"schema", strconv.Itoa(version),
			"e/@session/n1/i1/1", `{"holder":"n1","incarnation":"i1","token":1,"lease":15000000000,"updated":"2026-01-02T03:04:05Z","log_seq":1}`,
			"l/@session/n1/i1/1/00000000000000000001", `{"kind":"acquired","holder":"n1","incarnation":"i1","token":1,"time":"2026-01-02T03:04:05Z"}`,
			"e/billing", `{"holder":"n1","incarnation":"i1","token":3,"lease":15000000000,"session":"@session/n1/i1/1","updated":"2026-01-02T03:04:05Z","log_seq":6}`,
		)
		for seq := 1; seq <= 6; seq++ {
			kind, holder, token := "released", "", seq/2
			if seq%2 == 0 {
				kind, holder, token = "acquired", "n1", seq/2
			}
			putRaw(t, cli, prefix, fmt.Sprintf("l/billing/%020d", seq),
				fmt.Sprintf(`{"kind":%q,"holder":%q,"token":%d,"time":"2026-01-02T03:04:05Z"}`, kind, holder, token))
		}
	}
	putRaw(t, cli, prefix,
		"j/billing", `{"schedule":"every 24h","created":"2026-01-01T00:00:00Z"}`,
		"r/billing/2026-01-02T00:00:00Z", `{"scheduled":"2026-01-02T00:00:00Z","state":"done","token":3,"holder":"n1","attempt":1,"started":"2026-01-02T00:00:01Z","finished":"2026-01-02T00:00:02Z","exit_code":0}`,
	)
}

func schemaKey(t *testing.T, cli *clientv3.Client, prefix string) (value string, createRev int64) {
	t.Helper()
	resp, err := cli.Get(bg(t, 10*time.Second), prefix+"schema")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "", 0
	}
	return string(resp.Kvs[0].Value), resp.Kvs[0].CreateRevision
}

// TestUpgrade opens stores written by schema versions 1 to 4 (3 and 4
// with the records of a version 2 store, which they read as they are): a
// read-only open reads one as it is; a writable open upgrades it in place,
// keeping records, log, jobs and runs, and a handle opened before the
// upgrade (as an older baton's would be) can no longer write. The log
// written before and after reads as one, page by page.
func TestUpgrade(t *testing.T) {
	for _, version := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("FromVersion%d", version), func(t *testing.T) { testUpgrade(t, version) })
	}
}

func testUpgrade(t *testing.T, version int) {
	c := sharedCluster(t)
	prefix := freshPrefix(t)
	raw := openStore(t, c.Endpoints(), etcd.WithPrefix("/raw-"+prefix[1:]))
	defer raw.Close()
	cli := raw.Client()
	olderStore(t, cli, prefix, version)
	_, oldRev := schemaKey(t, cli, prefix)
	ctx := bg(t, 20*time.Second)
	oldLog := 1
	wantSession := ""
	if version >= 2 {
		oldLog, wantSession = 6, store.SessionPrefix+"n1/i1/1"
	}

	ro := openStore(t, c.Endpoints(), etcd.WithPrefix(prefix), etcd.WithReadOnly())
	defer ro.Close()
	if rec, err := ro.Get(ctx, "billing"); err != nil || rec.Holder != "n1" || rec.Token != 3 || rec.Session != wantSession {
		t.Fatalf("read-only Get of a version %d record = %+v, %v", version, rec, err)
	}
	if evs, err := ro.History(ctx, "billing", 0, 0); err != nil || len(evs) != oldLog {
		t.Fatalf("read-only History of a version %d store = %+v, %v", version, evs, err)
	}
	if v, rev := schemaKey(t, cli, prefix); v != strconv.Itoa(version) || rev != oldRev {
		t.Fatalf("a read-only open changed the schema key: %q at %d", v, rev)
	}

	s := openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
	defer s.Close()
	v, newRev := schemaKey(t, cli, prefix)
	if v != strconv.Itoa(etcd.SchemaVersion) || newRev == oldRev {
		t.Fatalf("after a writable open the schema key is %q created at %d (was created at %d), want %d created afresh", v, newRev, oldRev, etcd.SchemaVersion)
	}
	// A handle of the older baton compares the schema key's old create
	// revision in every write: its takeover is not applied.
	old, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(prefix+"schema"), "=", oldRev)).
		Then(clientv3.OpPut(prefix+"e/billing", `{"holder":"old","incarnation":"i9","token":4,"lease":15000000000,"log_seq":1}`)).Commit()
	if err != nil || old.Succeeded {
		t.Fatalf("a write of a handle opened before the upgrade: succeeded %v, %v", old != nil && old.Succeeded, err)
	}
	if _, err := etcd.Open(ctx, c.Endpoints(), etcd.WithPrefix(prefix)); err != nil {
		t.Fatalf("a second open of the upgraded store: %v", err)
	}

	rec, err := s.Get(ctx, "billing")
	if err != nil || rec.Holder != "n1" || rec.Incarnation != "i1" || rec.Token != 3 || rec.Lease != 15*time.Second {
		t.Fatalf("record after the upgrade = %+v, %v", rec, err)
	}
	if job, err := s.GetJob(ctx, "billing"); err != nil || job.Schedule != "every 24h" {
		t.Fatalf("job after the upgrade = %+v, %v", job, err)
	}
	if runs, err := s.Runs(ctx, "billing", "", 0); err != nil || len(runs) != 1 || runs[0].State != store.Done {
		t.Fatalf("runs after the upgrade = %+v, %v", runs, err)
	}
	// It runs: takeovers through a session continue the log, seven events
	// (more than a record carries) after the older ones.
	sess, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: store.SessionPrefix + "n2/i1/1", Holder: "n2", Incarnation: "i1", Lease: 15 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	const more = 7
	for i := range more {
		rec, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Event: store.TakenOver,
			Record: store.Record{Name: "billing", Holder: "n2", Incarnation: "i1", Session: sess.Name, Token: rec.Token + 1, Lease: 15 * time.Second}})
		if err != nil {
			t.Fatalf("takeover %d: %v", i, err)
		}
	}
	full, err := s.History(ctx, "billing", 0, 0)
	if err != nil || len(full) != oldLog+more {
		t.Fatalf("History after the upgrade = %+v, %v", full, err)
	}
	for i, ev := range full {
		if ev.Seq != uint64(i+1) || (i >= oldLog && (ev.Kind != store.TakenOver || ev.Token != uint64(4+i-oldLog))) {
			t.Fatalf("event %d after the upgrade = %+v", i, ev)
		}
	}
	for after := range len(full) + 1 {
		for limit := range 4 {
			got, err := s.History(ctx, "billing", uint64(after), limit)
			want := full[after:]
			if limit > 0 && len(want) > limit {
				want = want[:limit]
			}
			if err != nil || len(got) != len(want) || (len(got) > 0 && got[0].Seq != want[0].Seq) {
				t.Fatalf("History(after %d, limit %d) = %+v, %v; want %d events from seq %d", after, limit, got, err, len(want), after+1)
			}
		}
	}
	if got, err := ro.Get(ctx, "billing"); err != nil || got.Session != sess.Name {
		t.Fatalf("the read-only handle opened before the upgrade reads %+v, %v", got, err)
	}
}

// TestUpgradeInterrupted: a process that died between the upgrade's two
// transactions left the marker and no schema key; the next open finishes
// the upgrade, and a read-only open asks to retry meanwhile.
func TestUpgradeInterrupted(t *testing.T) {
	c := sharedCluster(t)
	prefix := freshPrefix(t)
	raw := openStore(t, c.Endpoints(), etcd.WithPrefix("/raw-"+prefix[1:]))
	defer raw.Close()
	cli := raw.Client()
	olderStore(t, cli, prefix, 1)
	ctx := bg(t, 20*time.Second)
	if _, err := cli.Delete(ctx, prefix+"schema"); err != nil {
		t.Fatal(err)
	}
	putRaw(t, cli, prefix, "schema-upgrade", "2")

	if _, err := etcd.Open(ctx, c.Endpoints(), etcd.WithPrefix(prefix), etcd.WithReadOnly()); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("read-only open during an upgrade: %v, want ErrUnavailable", err)
	}
	s := openStore(t, c.Endpoints(), etcd.WithPrefix(prefix))
	defer s.Close()
	if v, _ := schemaKey(t, cli, prefix); v != strconv.Itoa(etcd.SchemaVersion) {
		t.Fatalf("schema key after the upgrade was finished: %q", v)
	}
	if resp, err := cli.Get(ctx, prefix+"schema-upgrade"); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("the upgrade marker is left: %v %v", resp, err)
	}
	if rec, err := s.Get(ctx, "billing"); err != nil || rec.Token != 3 {
		t.Fatalf("record after the upgrade = %+v, %v", rec, err)
	}
}

// watchers returns the number of watchers the process's embedded members
// have (the members' own gauge; every member in this process adds to it).
func watchers(t *testing.T) int {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "etcd_debugging_mvcc_watcher_total" {
			return int(mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	t.Fatal("the members report no etcd_debugging_mvcc_watcher_total")
	return 0
}

// TestOneWatchPerHandle follows 1,000 change feeds through one handle: the
// member has one watcher more, not 1,000; every feed names every record
// written, and nothing else; when the callers are done the watcher is
// gone.
func TestOneWatchPerHandle(t *testing.T) {
	c := sharedCluster(t)
	s := openStore(t, c.Endpoints(), etcd.WithPrefix(freshPrefix(t)))
	defer s.Close()
	ctx := bg(t, 20*time.Second)
	before := watchers(t)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const nfeeds, n = 1000, 100
	feeds := make([]<-chan []store.Change, nfeeds)
	for i := range feeds {
		feeds[i] = s.WatchChanges(wctx)
	}
	if got := watchers(t) - before; got > 1 {
		t.Fatalf("%d feeds on one handle made %d etcd watchers, want 1", nfeeds, got)
	}
	swaps := make([]store.Swap, n)
	for i := range swaps {
		swaps[i] = store.Swap{Record: acquire(fmt.Sprintf("w%04d", i), "n1", 1), Event: store.Acquired}
	}
	if _, err := s.SwapMany(ctx, swaps); err != nil {
		t.Fatal(err)
	}
	written := map[string]bool{}
	for _, sw := range swaps {
		written[sw.Record.Name] = true
	}
	for i, f := range feeds {
		seen := map[string]bool{}
		for len(seen) < n {
			select {
			case batch, ok := <-f:
				if !ok {
					t.Fatalf("feed %d closed", i)
				}
				for _, c := range batch {
					if !written[c.Name] {
						t.Fatalf("feed %d named %s, not written", i, c.Name)
					}
					seen[c.Name] = true
				}
			case <-ctx.Done():
				t.Fatalf("feed %d named %d of %d changed records", i, len(seen), n)
			}
		}
	}
	cancel()
	for _, f := range feeds {
		<-drain(f)
	}
	// The member removes the watcher when the cancel reaches it.
	for w := watchers(t); w > before; w = watchers(t) {
		select {
		case <-ctx.Done():
			t.Fatalf("the handle's watcher did not end: %d watchers, %d before", w, before)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestLowTxnLimits runs batches on a member that allows 16 operations per
// transaction (etcd's default is 128): the calls cut their transactions
// smaller and every swap and read is done.
func TestLowTxnLimits(t *testing.T) {
	ep := startMember(t, func(cfg *embed.Config) { cfg.MaxTxnOps = 16 })
	s := openStore(t, []string{ep}, etcd.WithPrefix("/low/"))
	defer s.Close()
	ctx := bg(t, 30*time.Second)
	const n = 300
	names := make([]string, n)
	swaps := make([]store.Swap, n)
	for i := range swaps {
		names[i] = fmt.Sprintf("low-%03d", i)
		swaps[i] = store.Swap{Record: acquire(names[i], "n1", 1), Event: store.Acquired}
	}
	res, err := s.SwapMany(ctx, swaps)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("swap %d: %v", i, r.Err)
		}
	}
	fresh := openStore(t, []string{ep}, etcd.WithPrefix("/low/"))
	defer fresh.Close()
	defer etcd.SetRangeMinNames(etcd.SetRangeMinNames(1 << 30)) // gets in transactions
	got, err := fresh.GetMany(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if r.Err != nil || r.Record.Version != res[i].Record.Version {
			t.Fatalf("GetMany %d = %+v", i, r)
		}
	}
}

// startMember starts a single etcd member configured by set, for the
// test, and returns its client endpoint.
func startMember(t *testing.T, set func(*embed.Config)) string {
	t.Helper()
	port := func() url.URL {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return url.URL{Scheme: "http", Host: l.Addr().String()}
	}
	client, peer := port(), port()
	cfg := embed.NewConfig()
	cfg.Name = "low"
	cfg.Dir = t.TempDir()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = "low=" + peer.String()
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true
	set(cfg)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		testenv.Require(t, "etcd", err.Error())
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("the member did not become ready within 30s")
	}
	return client.Host
}

// TestGetManyPaths reads many names whose keys lie together (a range read)
// and names spread among many other records (gets in transactions), with
// a missing name and a repeated one each time: both ways give what Get
// gives.
func TestGetManyPaths(t *testing.T) {
	c := sharedCluster(t)
	s := openStore(t, c.Endpoints(), etcd.WithPrefix(freshPrefix(t)))
	defer s.Close()
	ctx := bg(t, 30*time.Second)
	var swaps []store.Swap
	for i := range 900 {
		swaps = append(swaps, store.Swap{Record: acquire(fmt.Sprintf("p-%03d", i), "n1", uint64(i)), Event: store.Acquired})
	}
	if _, err := s.SwapMany(ctx, swaps); err != nil {
		t.Fatal(err)
	}
	for _, every := range []int{2, 3} { // 2: dense enough for a range read; 3: not
		t.Run(fmt.Sprintf("every-%d", every), func(t *testing.T) {
			var names []string
			for i := 0; i < 900; i += every {
				names = append(names, fmt.Sprintf("p-%03d", i))
			}
			names = append(names, "p-0000", names[5]) // missing (sorts inside the range), repeated
			fresh := openStore(t, c.Endpoints(), etcd.WithPrefix(s.Prefix()))
			defer fresh.Close()
			got, err := fresh.GetMany(ctx, names)
			if err != nil {
				t.Fatal(err)
			}
			for i, name := range names {
				want, werr := s.Get(ctx, name)
				if (werr == nil) != (got[i].Err == nil) || !errors.Is(got[i].Err, store.ErrNotFound) && got[i].Err != nil || want != got[i].Record {
					t.Fatalf("GetMany %s = %+v, %v; Get = %+v, %v", name, got[i].Record, got[i].Err, want, werr)
				}
			}
		})
	}
}
