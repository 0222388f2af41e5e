package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/history"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

// Issue 45: verify and the SQL fence. A fence installed without --log
// keeps no log: verify --fence-db says so in its verdict, one line naming
// the fix, and exits 1 (0 with --allow-empty), where it failed with
// 'relation "baton_fence_log" does not exist'. Installed again with
// --log, the jobs' calls baton_fence(name, token, sig, period) are
// logged and verify judges them: a period accepted by none is lost, each
// accepted once is exactly once, and one accepted a second time, by
// another token, is named.
func TestVerifySQLFenceLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.Start(t)
	storeURL := "sqlite:" + filepath.Join(t.TempDir(), "baton.db")
	st, err := storeurl.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var periods []string
	base := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	for i, tok := range []uint64{1, 2} {
		ev := store.Acquired
		if i > 0 {
			ev = store.TakenOver
		}
		if _, err := st.Swap(ctx, store.Swap{Expect: int64(i), Record: store.Record{Name: "billing", Holder: "n1", Incarnation: "i1", Token: tok, Lease: time.Minute}, Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		at := base.Add(time.Duration(i) * time.Hour)
		periods = append(periods, schedule.Key(at))
		if _, err := st.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "billing", Period: periods[i], Scheduled: at, State: store.Done, Token: 2, Holder: "n1", Attempt: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	verify := func(extra ...string) (int, string, string) {
		return runBaton(t, append([]string{"verify", "--store", storeURL, "--fence-db", db}, append(extra, "billing")...)...)
	}

	if code, out, errb := runBaton(t, "fence", "install", "--db", db); code != exitOK || !strings.Contains(out, "no fence log: ") {
		t.Fatalf("fence install: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb := verify()
	first, _, _ := strings.Cut(out, "\n")
	if code != exitFailure || first != "billing: "+history.NoFenceLog || errb != "" || !strings.Contains(first, "baton fence install --log") {
		t.Fatalf("verify over a fence without a log: exit %d\n%s%s; want 1 and the verdict %q", code, out, errb, history.NoFenceLog)
	}
	t.Log(first)
	if code, v := verifyJSON(t, "--store", storeURL, "--fence-db", db, "billing"); code != exitFailure || v.OK || v.Verdict != history.NoFenceLog || len(v.NothingJudged) != 1 {
		t.Fatalf("verify --json over a fence without a log: exit %d, %+v", code, v)
	}
	if code, out, _ := verify("--allow-empty"); code != exitOK || !strings.HasPrefix(out, "billing: "+history.NoFenceLog+"\n") {
		t.Fatalf("verify --allow-empty over a fence without a log: exit %d\n%s", code, out)
	}

	if code, out, errb := runBaton(t, "fence", "install", "--db", db, "--log"); code != exitOK || !strings.Contains(out, "fence log on in ") {
		t.Fatalf("fence install --log: exit %d\n%s%s", code, out, errb)
	}
	if code, out, _ := verify(); code != exitFailure || !strings.Contains(out, "violation: lost: period "+periods[0]) {
		t.Fatalf("verify with an empty log and two done periods: exit %d\n%s; want both lost", code, out)
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, p := range periods {
		if _, err := conn.Exec(ctx, `SELECT baton_fence('billing', 2, NULL, $1)`, p); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errb := verify(); code != exitOK || !strings.HasPrefix(out, "billing: exactly once\n") {
		t.Fatalf("verify after the SQL fence logged each period once: exit %d\n%s%s", code, out, errb)
	}
	// A forged second acceptance of the first period, by token 1.
	if _, err := conn.Exec(ctx, `INSERT INTO baton_fence_log (name, token, period, outcome, highest, at_ns)
		VALUES ('billing', 1, $1, 'accepted', 1, 0)`, periods[0]); err != nil {
		t.Fatal(err)
	}
	code, out, _ = verify()
	if code != exitFailure || !strings.HasPrefix(out, "billing: VIOLATED") || !strings.Contains(out, "violation: twice: period "+periods[0]) {
		t.Fatalf("verify after a forged second acceptance: exit %d\n%s; want period %s named twice", code, out, periods[0])
	}
}
