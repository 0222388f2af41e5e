package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

// verifyFixture is a clean deployment of job billing on SQLite, as
// verify reads it: n1 elected with token 1; three hourly periods of the
// last hours done in the ledger with token 1, each accepted once by the
// logged fence of an SQLite resource. It returns the store's URL, the
// fence database's URL and path, and the periods.
func verifyFixture(t *testing.T) (storeURL, fenceURL, storePath string, res *sql.DB, periods []string) {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	storePath = filepath.Join(dir, "baton.db")
	storeURL = "sqlite:" + storePath
	st, err := storeurl.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Minute}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	resPath, _, res, d := sqliteResource(t, dir)
	base := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	for i := range 3 {
		at := base.Add(time.Duration(i) * time.Hour)
		k := schedule.Key(at)
		periods = append(periods, k)
		if _, err := st.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "billing", Period: k, Scheduled: at, State: store.Done, Token: 1, Holder: "n1", Attempt: 1}}); err != nil {
			t.Fatal(err)
		}
		if err := writeInvoiceLine(ctx, res, d, false, fence.Write{Name: "billing", Token: 1, Period: k}, false); err != nil {
			t.Fatal(err)
		}
	}
	return storeURL, "sqlite:" + resPath, storePath, res, periods
}

// verifyJSON runs verify --json with args and decodes its answer.
func verifyJSON(t *testing.T, args ...string) (code int, v struct {
	Verdict       string   `json:"verdict"`
	OK            bool     `json:"ok"`
	NothingJudged []string `json:"nothing_judged"`
	Names         []struct {
		Verdict string `json:"verdict"`
		Judged  int    `json:"judged"`
		Pruned  int    `json:"pruned"`
	} `json:"names"`
}) {
	t.Helper()
	code, out, stderr := runBaton(t, append([]string{"verify", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("verify --json %v: exit %d, %v\n%s%s", args, code, err, out, stderr)
	}
	return code, v
}

func execSQLite(t *testing.T, path, q string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// Issue 42, item 2: verify never says "exactly once" when it judged
// nothing. With the ledger emptied, the fence's acceptances are missing
// rows, not "pruned" (a prune never deletes the newest row); with the
// fence log emptied too, or with --from 2030-01-01, nothing is judged:
// that is its own verdict, exit 1 and "ok": false, unless --allow-empty
// (exit 0, the verdict still "nothing judged").
func TestVerifyNothingJudgedIsNoProof(t *testing.T) {
	storeURL, fenceURL, storePath, res, periods := verifyFixture(t)
	base := []string{"--store", storeURL, "--fence-db", fenceURL}
	if code, out, stderr := runBaton(t, append(append([]string{"verify"}, base...), "billing")...); code != 0 || !strings.HasPrefix(out, "billing: exactly once\n") {
		t.Fatalf("the clean fixture: exit %d\n%s%s", code, out, stderr)
	}

	// Without --fence-db no period is judged: that proves nothing, and
	// says so, with the way to judge them.
	for _, tt := range []struct {
		args []string
		code int
	}{{nil, exitFailure}, {[]string{"--allow-empty"}, exitOK}} {
		args := append([]string{"verify", "--store", storeURL}, tt.args...)
		code, out, stderr := runBaton(t, append(args, "billing")...)
		if code != tt.code || !strings.HasPrefix(out, "billing: terms and tokens consistent; periods not judged (no --fence-db): give the fence's database") {
			t.Errorf("baton %s billing: exit %d, want %d, saying periods were not judged and how to judge them:\n%s%s", strings.Join(args, " "), code, tt.code, out, stderr)
		}
	}

	// A range that holds no period.
	code, out, _ := runBaton(t, append(append([]string{"verify"}, base...), "--from", "2030-01-01", "billing")...)
	if code != exitFailure || !strings.HasPrefix(out, "billing: nothing judged: ") || strings.Contains(out, "exactly once") {
		t.Fatalf("--from 2030-01-01: exit %d, want 1 and nothing judged\n%s", code, out)
	}
	if code, v := verifyJSON(t, append(base, "--from", "2030-01-01", "billing")...); code != exitFailure || v.OK || v.Verdict != "nothing judged" ||
		len(v.NothingJudged) != 1 || v.Names[0].Verdict != "nothing judged" || v.Names[0].Judged != 0 {
		t.Fatalf("--json --from 2030-01-01: exit %d, %+v", code, v)
	}
	if code, v := verifyJSON(t, append(base, "--from", "2030-01-01", "--allow-empty", "billing")...); code != exitOK || !v.OK || v.Verdict != "nothing judged" {
		t.Fatalf("--allow-empty: exit %d, %+v; want 0, ok, the verdict still nothing judged", code, v)
	}

	// The ledger emptied: every acceptance is a missing row.
	execSQLite(t, storePath, `DELETE FROM baton_runs`)
	code, out, _ = runBaton(t, append(append([]string{"verify"}, base...), "billing")...)
	if code != exitFailure || !strings.HasPrefix(out, "billing: VIOLATED: 3 violations\n") || strings.Contains(out, "pruned") {
		t.Fatalf("emptied ledger: exit %d, want 1 and three missing rows\n%s", code, out)
	}
	for _, p := range periods {
		if !strings.Contains(out, "violation: not-in-ledger: period "+p+": accepted 1 times, and the ledger has no such period (the ledger is empty") {
			t.Errorf("emptied ledger: period %s not named missing\n%s", p, out)
		}
	}
	if code, v := verifyJSON(t, append(base, "billing")...); code != exitFailure || v.OK || !strings.HasPrefix(v.Verdict, "VIOLATED") || v.Names[0].Pruned != 0 {
		t.Fatalf("--json, emptied ledger: exit %d, %+v", code, v)
	}

	// The fence log emptied too: nothing judged.
	if _, err := res.Exec(`DELETE FROM ` + fence.DefaultLogTable); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runBaton(t, append(append([]string{"verify"}, base...), "billing")...)
	if code != exitFailure || !strings.HasPrefix(out, "billing: nothing judged: ") {
		t.Fatalf("emptied ledger and fence log: exit %d, want 1 and nothing judged\n%s", code, out)
	}
}

// Acceptances of periods the ledger no longer has count as pruned only
// when the retention verify is given explains them: after 'baton prune
// --keep 0 --keep-rows 1' (the two older periods deleted, the newest
// kept), verify with the same retention says exactly once with 2 pruned;
// with the default retention (30 days, 10,000 rows), which would not have
// deleted rows of the last hours, they are missing rows.
func TestVerifyPrunedOnlyByRetention(t *testing.T) {
	storeURL, fenceURL, _, _, periods := verifyFixture(t)
	if code, out, stderr := runBaton(t, "prune", "--store", storeURL, "--keep", "0", "--keep-rows", "1", "billing"); code != 0 || !strings.Contains(out, "deleted 2 ") {
		t.Fatalf("prune: exit %d\n%s%s", code, out, stderr)
	}
	base := []string{"--store", storeURL, "--fence-db", fenceURL}
	code, out, stderr := runBaton(t, append(append([]string{"verify"}, base...), "--keep", "0", "--keep-rows", "1", "billing")...)
	if code != 0 || !strings.HasPrefix(out, "billing: exactly once\n") || !strings.Contains(out, "2 accepted periods pruned from the ledger by its retention") {
		t.Fatalf("verify with the retention pruned by: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runBaton(t, append(append([]string{"verify"}, base...), "billing")...)
	if code != exitFailure || !strings.Contains(out, "violation: not-in-ledger: period "+periods[0]) || !strings.Contains(out, "the retention (30d or 10000 rows) does not explain it") {
		t.Fatalf("verify with the default retention: exit %d, want the pruned periods missing\n%s", code, out)
	}
	if code, _, stderr := runBaton(t, append(append([]string{"verify"}, base...), "--keep-rows", "-1", "billing")...); code != exitUsage || !strings.Contains(stderr, "--keep-rows") {
		t.Errorf("--keep-rows -1: exit %d\n%s", code, stderr)
	}
}

// Issue 42, item 4: verify checks the election record against its log.
// A record at token 2^63-1, held by "ghost" with a lease of -5s, while the
// log's last event left n1 with token 2, is a violation naming each
// fault, the lease one in the words 'baton status' flags it with.
func TestVerifyRecordAgainstLog(t *testing.T) {
	storeURL, fenceURL, storePath, _, _ := verifyFixture(t)
	base := []string{"verify", "--store", storeURL, "--fence-db", fenceURL, "billing"}
	execSQLite(t, storePath, `UPDATE baton_election SET token = 9223372036854775807, holder = 'ghost', incarnation = 'g1', lease_ns = -5000000000 WHERE name = 'billing'`)
	code, out, stderr := runBaton(t, base...)
	if code != exitFailure || !strings.HasPrefix(out, "billing: VIOLATED: 3 violations\n") {
		t.Fatalf("a forged record: exit %d, want 1 and three violations\n%s%s", code, out, stderr)
	}
	_, status, _ := runBaton(t, "status", "--store", storeURL, "billing")
	for _, want := range []string{
		"violation: record: billing: the election record is damaged: lease -5s outside [",
		"violation: record: billing: the election record holds token 9223372036854775807, the log's last event (seq 1, acquired) token 1",
		`violation: record: billing: the election record is held by "ghost" (incarnation "g1"), the log's last event (seq 1, acquired) left "n1" (incarnation "i1")`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify lacks %q\n%s", want, out)
		}
	}
	if !strings.Contains(status, "DAMAGED: lease -5s outside [") {
		t.Errorf("status does not flag the record the same way:\n%s", status)
	}
}
