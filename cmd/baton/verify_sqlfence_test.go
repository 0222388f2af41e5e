package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/history"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
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
	testenv.ParallelUnlessLong(t) // its own store and files
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

// 'baton fence sql --dialect postgres --log', run as printed, makes what
// install --log makes: the function logs an accepted call, and install
// --log afterwards changes nothing. --log with sqlite is a usage error.
func TestFenceSQLPostgresLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.Start(t)
	code, ddl, errb := runBaton(t, "fence", "sql", "--dialect", "postgres", "--log")
	if code != exitOK || !strings.Contains(ddl, "baton_fence_log") {
		t.Fatalf("fence sql --log: exit %d: %s", code, errb)
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, ddl); return err }); err != nil {
		t.Fatalf("the printed DDL: %v", err)
	}
	if code, out, errb := runBaton(t, "fence", "install", "--db", db, "--log"); code != exitOK || !strings.HasSuffix(out, "nothing changed\n") {
		t.Fatalf("install --log after the printed DDL: exit %d\n%s%s", code, out, errb)
	}
	if _, err := conn.Exec(ctx, `SELECT baton_fence('n', 2, NULL, 'P')`); err != nil {
		t.Fatal(err)
	}
	var period string
	if err := conn.QueryRow(ctx, `SELECT period FROM baton_fence_log WHERE name = 'n'`).Scan(&period); err != nil || period != "P" {
		t.Fatalf("the log of the printed DDL: %q, %v; want period P", period, err)
	}
	if code, _, errb := runBaton(t, "fence", "sql", "--dialect", "sqlite", "--log"); code != exitUsage || strings.Count(errb, "\n") != 1 {
		t.Fatalf("fence sql --dialect sqlite --log: exit %d, %q; want 2 and one line", code, errb)
	}
}

// 'baton fence install --log' over a version 1 fence (as the baton before
// issue 45 installed it) upgrades it in place and says so: the job's role
// keeps its right, its token is kept, and its calls are logged.
func TestFenceInstallUpgrade(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v1, err := os.ReadFile("../../fence/pgfence/testdata/fence_v1.sql")
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.Start(t)
	job, jobURL := pgtest.NewRole(t, db)
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, string(v1)+`;GRANT EXECUTE ON FUNCTION baton_fence(text, bigint, text) TO `+pgx.Identifier{job}.Sanitize()+
		`;SELECT baton_fence('billing', 3)`); err != nil {
		t.Fatal(err)
	}
	code, out, errb := runBaton(t, "fence", "install", "--db", db, "--log")
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("from version 1 to %d", pgfence.Version)) || !strings.Contains(out, "fence log on in ") {
		t.Fatalf("install --log over version 1: exit %d\n%s%s", code, out, errb)
	}
	t.Log(strings.TrimSpace(out))
	jc, err := pgx.Connect(ctx, jobURL)
	if err != nil {
		t.Fatal(err)
	}
	defer jc.Close(ctx)
	if _, err := jc.Exec(ctx, `SELECT baton_fence('billing', 2)`); sqlStateOf(err) != pgfence.SQLStateStale {
		t.Fatalf("token 2 after version 1 accepted 3: %v, want %s", err, pgfence.SQLStateStale)
	}
	if _, err := jc.Exec(ctx, `SELECT baton_fence('billing', 4, NULL, 'P')`); err != nil {
		t.Fatalf("the job's role after the upgrade: %v", err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM baton_fence_log WHERE name = 'billing' AND token = 4 AND period = 'P'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d log rows of the call after the upgrade (%v), want 1", n, err)
	}
}
