package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/history"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

// fencedWriteArg makes the test binary the fenced command of the verify
// tests (see TestMain): "fenced-write DRIVER DSN [force|naive-slow]" writes one
// invoice line for $BATON_PERIOD through the logged fence, as a real job
// would, and exits 0 (written, or the period had landed), 3 (stale token,
// refusal logged) or 1.
const fencedWriteArg = "fenced-write"

// fencedWrite is the command: idempotent per period (a period that landed
// already is not written, nor fenced, again, so a re-run after a takeover
// logs no second acceptance) unless force, which plays a stale leader that
// wakes up and writes without looking; naive-slow does not look either,
// and takes 3 seconds to exit after its commit (a job that is not
// idempotent, deposed before it is recorded done).
func fencedWrite(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "fenced-write DRIVER DSN [force]")
		return 2
	}
	mode := ""
	if len(args) > 2 {
		mode = args[2]
	}
	driver, dsn, force := args[0], args[1], mode == "force" || mode == "naive-slow"
	d := fence.SQLite
	if driver == "pgx" {
		d = fence.Postgres
	}
	d, err := d.WithLog(fence.DefaultLogTable)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w, err := fence.WriteFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	err = writeInvoiceLine(ctx, db, d, driver == "pgx", w, force)
	if errors.Is(err, fence.ErrStaleToken) {
		if lerr := fence.LogRefusal(ctx, db, d, w, err); lerr != nil {
			fmt.Fprintln(os.Stderr, lerr)
		}
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if mode == "naive-slow" {
		time.Sleep(3 * time.Second)
	}
	return 0
}

func writeInvoiceLine(ctx context.Context, db *sql.DB, d fence.Dialect, pg bool, w fence.Write, force bool) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	q := `SELECT COUNT(*) FROM invoice WHERE period = ?`
	ins := `INSERT INTO invoice (period, token) VALUES (?, ?)`
	if pg {
		q, ins = `SELECT COUNT(*) FROM invoice WHERE period = $1`, `INSERT INTO invoice (period, token) VALUES ($1, $2)`
	}
	var n int
	if err := tx.QueryRowContext(ctx, q, w.Period).Scan(&n); err != nil {
		return err
	}
	if n > 0 && !force {
		return nil // landed already
	}
	if err := fence.CheckWriteTx(ctx, tx, d, w); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, ins, w.Period, int64(w.Token)); err != nil {
		return err
	}
	return tx.Commit()
}

// createInvoice creates the fence, its log and the invoice table.
func createInvoice(t *testing.T, db *sql.DB, d fence.Dialect) {
	t.Helper()
	ctx := context.Background()
	if err := fence.CreateTable(ctx, db, d); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE invoice (period TEXT NOT NULL, token BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
}

// The acceptance of 'baton verify': three baton run nodes on one SQLite
// store write every period's invoice line through the logged fence; the
// leader is killed (SIGKILL) and another takes over. Verify says "exactly
// once" and exits 0; a stale write, refused, shows in the table and still
// exits 0; a forged second acceptance of one period makes it name that
// period and exit 1.
func TestVerifyChaosSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Parallel() // its own files and processes; the waits have seconds of slack
	dir := t.TempDir()
	storeURL := "sqlite:" + filepath.Join(dir, "baton.db")
	resPath, dsn, res, d := sqliteResource(t, dir)
	chaosRun(t, storeURL, "sqlite", dsn)
	verifyAfterChaos(t, storeURL, "sqlite:"+resPath, "sqlite", dsn, res, d)
}

// chaosRun runs three nodes of job billing (every second, the fenced
// command) on storeURL, kills the first leader once it has done two
// periods, and stops every node once the new leader has done three more.
func chaosRun(t *testing.T, storeURL, driver, dsn string) {
	t.Helper()
	type node struct {
		cmd  *exec.Cmd
		errb *syncBuffer
	}
	nodes := map[string]node{}
	for _, id := range []string{"n1", "n2", "n3"} {
		cmd, _, errb := startBaton(t, "run", "--store", storeURL, "--node", id, "--lease", "2s", "--every", "1s",
			"billing", "--", os.Args[0], fencedWriteArg, driver, dsn)
		nodes[id] = node{cmd, errb}
	}
	ctx := context.Background()
	st, err := storeurl.OpenReadOnly(ctx, storeURL)
	for i := 0; err != nil && i < 100; i++ { // the first node creates the store
		time.Sleep(50 * time.Millisecond)
		st, err = storeurl.OpenReadOnly(ctx, storeURL)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	done := func() (n int, holder string) {
		rows, _ := st.RecentRuns(ctx, "billing", "", 0)
		for _, r := range rows {
			if r.State == store.Done {
				n++
				holder = r.Holder
			}
		}
		if len(rows) > 0 {
			holder = rows[0].Holder
		}
		return n, holder
	}
	logs := func() string {
		var b strings.Builder
		for _, id := range []string{"n1", "n2", "n3"} {
			fmt.Fprintf(&b, "%s's log:\n%s", id, nodes[id].errb.String())
		}
		return b.String()
	}
	var first string
	if !testenv.WaitFor(20*time.Second, func() bool { n, h := done(); first = h; return n >= 2 }) {
		t.Fatalf("no two periods done in 20s\n%s", logs())
	}
	leader, ok := nodes[first]
	if !ok {
		t.Fatalf("the ledger's holder %q is no node", first)
	}
	leader.cmd.Process.Signal(syscall.SIGKILL)
	leader.cmd.Wait()
	before, _ := done()
	if !testenv.WaitFor(30*time.Second, func() bool { n, h := done(); return n >= before+3 && h != first }) {
		n, h := done()
		t.Fatalf("after killing %s: %d periods done (from %d), the newest by %s, in 30s\n%s", first, n, before, h, logs())
	}
	for id, n := range nodes {
		if id != first {
			n.cmd.Process.Signal(syscall.SIGTERM)
			n.cmd.Wait()
		}
	}
	evs, _ := st.History(ctx, "billing", 0, 0)
	t.Logf("killed %s after %d periods; %d election log events", first, before, len(evs))
}

// verifyAfterChaos runs verify on the chaos run's store and fence, then
// adds a refused stale write and a forged acceptance.
func verifyAfterChaos(t *testing.T, storeURL, fenceURL, driver, dsn string, res *sql.DB, d fence.Dialect) {
	t.Helper()
	verify := func() (int, string, string) {
		return runBaton(t, "verify", "--store", storeURL, "--fence-db", fenceURL, "billing")
	}
	code, out, stderr := verify()
	if code != 0 || !strings.HasPrefix(out, "billing: exactly once\n") {
		t.Fatalf("verify after the chaos run: exit %d, want 0 and exactly once\n%s%s", code, out, stderr)
	}
	t.Logf("verify:\n%s", out)

	// A stale leader wakes up and writes a done period with token 1.
	ctx := context.Background()
	log, err := fence.ReadLog(ctx, res, d, "billing")
	if err != nil || len(log) == 0 {
		t.Fatalf("fence log: %v, %d rows", err, len(log))
	}
	// The first period the new leader's command wrote: the run went on
	// for two more, so its ledger row is done. (The last one may still
	// be running when the nodes were stopped: "at most once", seen on a
	// loaded machine.)
	var period string
	for _, e := range log {
		if e.Outcome == fence.Accepted && e.Token > 1 && e.Period != "" {
			period = e.Period
			break
		}
	}
	if period == "" {
		t.Fatalf("no period accepted with a token above 1: %+v", log)
	}
	stale := exec.Command(os.Args[0], fencedWriteArg, driver, dsn, "force")
	stale.Env = append(os.Environ(), fence.Env("billing", 1, period, "stale")...)
	if out, err := stale.CombinedOutput(); !isExit(err, 3) {
		t.Fatalf("a stale write of %s: %v, want exit 3 (refused)\n%s", period, err, out)
	}
	code, out, stderr = verify()
	if code != 0 || !strings.HasPrefix(out, "billing: exactly once\n") {
		t.Fatalf("verify after a refused stale write: exit %d, want 0\n%s%s", code, out, stderr)
	}
	t.Logf("verify after a refused stale write:\n%s", out)
	row := lineOf(out, period)
	if f := strings.Fields(row); len(f) < 7 || f[5] != "1" || f[6] != "exactly" {
		t.Fatalf("period %s's row does not show token 1 refused: %q\n%s", period, row, out)
	}

	// A forged second acceptance of that period, inserted by hand.
	ins := `INSERT INTO baton_fence_log (name, token, period, outcome, highest, at_ns) VALUES (?, ?, ?, 'accepted', ?, ?)`
	if driver == "pgx" {
		ins = `INSERT INTO baton_fence_log (name, token, period, outcome, highest, at_ns) VALUES ($1, $2, $3, 'accepted', $4, $5)`
	}
	last := log[len(log)-1].Token
	if _, err := res.ExecContext(ctx, ins, "billing", int64(last), period, int64(last), time.Now().UnixNano()); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = verify()
	if code != 1 || !strings.Contains(out, "violation: twice: period "+period+": accepted 2 times") {
		t.Fatalf("verify after a forged double acceptance of %s: exit %d, want 1 naming it\n%s%s", period, code, out, stderr)
	}
	if !strings.HasPrefix(out, "billing: VIOLATED: 1 violation\n") {
		t.Errorf("verdict line:\n%s", out)
	}
	code, jsonOut, _ := runBaton(t, "verify", "--json", "--store", storeURL, "--fence-db", fenceURL, "billing")
	if code != 1 || !strings.Contains(jsonOut, `"ok": false`) || !strings.Contains(jsonOut, `"check": "twice"`) {
		t.Errorf("verify --json after the forgery: exit %d\n%s", code, jsonOut)
	}

	// Pruning the ledger and the fence log together keeps the log rows of
	// the periods the ledger keeps, and deletes older ones.
	perPeriod := func() map[string]int {
		log, err := fence.ReadLog(ctx, res, d, "billing")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, e := range log {
			m[e.Period]++
		}
		return m
	}
	before := perPeriod()
	code, out, stderr = runBaton(t, "prune", "--store", storeURL, "--fence-db", fenceURL, "--keep", "1ms", "billing")
	if code != 0 || !strings.Contains(out, "fence log rows older than") {
		t.Fatalf("prune --fence-db: exit %d\n%s%s", code, out, stderr)
	}
	after := perPeriod()
	st, err := storeurl.OpenReadOnly(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.RecentRuns(ctx, "billing", "", 0)
	if err != nil || len(rows) == 0 || len(rows) == len(log) {
		t.Fatalf("ledger after prune: %d rows, %v", len(rows), err)
	}
	for _, r := range rows {
		if after[r.Period] != before[r.Period] {
			t.Errorf("period %s, kept in the ledger: %d fence log rows after prune, %d before", r.Period, after[r.Period], before[r.Period])
		}
	}
	if len(after) >= len(before) {
		t.Errorf("prune deleted no period's log rows: %v, before %v", after, before)
	}
	// A forgery of a period the ledger kept is still named.
	kept := rows[len(rows)-1].Period
	for range 2 {
		if _, err := res.ExecContext(ctx, ins, "billing", int64(last), kept, int64(last), time.Now().UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr = verify()
	if code != 1 || !strings.Contains(out, "violation: twice: period "+kept+": accepted ") {
		t.Fatalf("verify after prune and a forgery of %s: exit %d, want 1 naming it\n%s%s", kept, code, out, stderr)
	}
	t.Logf("prune: the log rows of %d of %d periods left; verify:\n%s", len(after), len(before), out)
}

func isExit(err error, code int) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == code
}

// lineOf returns the first line of out that starts with prefix.
func lineOf(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// The same on PostgreSQL: the store and the fence (fence.Postgres with
// the log) in one throwaway server's database. BATON_REQUIRE=postgres
// makes a missing server a failure (pgtest.Start).
func TestVerifyChaosPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	testenv.ParallelUnlessLong(t)
	dsn := pgtest.Start(t)
	res, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	d, _ := fence.Postgres.WithLog(fence.DefaultLogTable)
	createInvoice(t, res, d)
	chaosRun(t, dsn, "pgx", dsn)
	verifyAfterChaos(t, dsn, dsn, "pgx", dsn, res, d)
}

// Bad input is one line naming the flag, exit 2; an unreachable fence
// database is exit 1 and never shows its password.
func TestVerifyUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "nope", "j"}, "--from"},
		{[]string{"--to", "2026-13-01", "j"}, "--to"},
		{[]string{"--from", "2026-01-02", "--to", "2026-01-01", "j"}, "not before --to"},
		{[]string{"--fence-db", "mysql://u:PW77@h/x", "j"}, "--fence-db"},
		{[]string{"--fence-db", "sqlite:" + filepath.Join(t.TempDir(), "none.db"), "j"}, "--fence-db"},
		{[]string{"--fence-db", "sqlite:x.db", "--fence-log", "a;b", "j"}, "--fence"},
		{[]string{"--bogus"}, "bogus"},
	} {
		args := append([]string{"verify", "--store", "mem:"}, tt.args...)
		code, _, stderr := runBaton(t, args...)
		checkOneLine(t, args, code, stderr, tt.want)
		if strings.Contains(stderr, "PW77") {
			t.Errorf("baton %s: the password is shown: %s", strings.Join(args, " "), stderr)
		}
	}
	args := []string{"verify", "--store", "mem:", "--fence-db", "postgres://u:SECRET99@127.0.0.1:1/x", "j"}
	code, _, stderr := runBaton(t, args...)
	if code != exitFailure || strings.Contains(stderr, "SECRET99") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("baton %s: exit %d, want 1, one line without the password: %q", strings.Join(args, " "), code, stderr)
	}
	if code, out, _ := runBaton(t, "verify", "--help"); code != 0 || !strings.Contains(out, "exactly once") {
		t.Errorf("verify --help: exit %d\n%s", code, out)
	}
}

// Every string from a store or the fence log is printed escaped.
func TestVerifyEscapes(t *testing.T) {
	var b strings.Builder
	printVerify(&b, history.Report{Name: "job", HasLog: true,
		Periods:    []history.PeriodRow{{Period: "P\x1b[31m", State: "done\r", Accepted: []uint64{1}, Verdict: "exactly once"}},
		Violations: []history.Violation{{Check: "twice", Detail: "period \x1b]0;x\x07: accepted 2 times (n\x1b#i token 1)"}}})
	for _, r := range b.String() {
		if r < ' ' && r != '\n' {
			t.Fatalf("raw control character %q in:\n%q", r, b.String())
		}
	}
}

// The checker sees a real double run, not only a forged one: a job that
// is not idempotent commits its write and is deposed (its node killed)
// before the period is recorded done; the next leader runs the period
// again with its own token, which the fence accepts. Verify names that
// period and exits 1.
func TestVerifyCatchesDoubleRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Parallel()
	dir := t.TempDir()
	storeURL := "sqlite:" + filepath.Join(dir, "baton.db")
	resPath, dsn, res, d := sqliteResource(t, dir)
	var cmds []*exec.Cmd
	for _, id := range []string{"n1", "n2"} {
		cmd, _, _ := startBaton(t, "run", "--store", storeURL, "--node", id, "--lease", "2s", "--every", "1h",
			"billing", "--", os.Args[0], fencedWriteArg, "sqlite", dsn, "naive-slow")
		cmds = append(cmds, cmd)
	}
	// --every 1h runs nothing by itself: trigger one period by hand.
	var stderr string
	if !testenv.WaitFor(20*time.Second, func() bool { // once a node has made the store and the job
		var code int
		code, _, stderr = runBaton(t, "trigger", "--store", storeURL, "billing")
		return code == 0
	}) {
		t.Fatalf("trigger: %s", stderr)
	}
	ctx := context.Background()
	var first fence.LogEntry
	if !testenv.WaitFor(20*time.Second, func() bool {
		log, _ := fence.ReadLog(ctx, res, d, "billing")
		for _, e := range log {
			if e.Outcome == fence.Accepted && e.Period != "" {
				first = e
				return true
			}
		}
		return false
	}) {
		t.Fatal("no period accepted in 20s")
	}
	// The first writer is still in its 3 seconds: kill the leader, whose
	// period is still running in the ledger.
	st, err := storeurl.OpenReadOnly(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.GetRun(ctx, "billing", first.Period)
	if err != nil || run.State != store.Running {
		t.Fatalf("period %s after its write: %+v, %v; want running", first.Period, run, err)
	}
	leader := map[string]*exec.Cmd{"n1": cmds[0], "n2": cmds[1]}[run.Holder]
	leader.Process.Signal(syscall.SIGKILL)
	leader.Wait()
	if !testenv.WaitFor(30*time.Second, func() bool {
		r, err := st.GetRun(ctx, "billing", first.Period)
		return err == nil && r.State == store.Done
	}) {
		t.Fatalf("period %s not done by the next leader in 30s", first.Period)
	}
	code, out, stderr := runBaton(t, "verify", "--store", storeURL, "--fence-db", "sqlite:"+resPath, "billing")
	want := "violation: twice: period " + first.Period + ": accepted 2 times"
	if code != 1 || !strings.Contains(out, want) {
		t.Fatalf("verify after a double run: exit %d, want 1 and %q\n%s%s", code, want, out, stderr)
	}
	t.Logf("verify:\n%s", out)
}

// The lesson's drill writes its batches through the logged fence, so
// verify judges its files as a deployment's: the fencing+trigger column
// of a pause before the effect is exactly once, with the frozen leader's
// stale write refused; the plain column, which writes without the fence
// (so logs nothing), has every period lost.
func TestVerifyDrillFiles(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own store, files and processes
	dir := t.TempDir()
	// Batches of 200 lines, as TestDrillGuarantees: the fence and its log
	// are what verify judges, whatever a batch's size.
	if code, _, stderr := runBaton(t, "drill", "--dir", dir, "--fault", "pause-before-effect", "--invoice-lines", "200"); code != 0 {
		t.Fatalf("drill: exit %d\n%s", code, stderr)
	}
	files := func(col string) []string {
		base := filepath.Join(dir, "pause-before-effect-"+col)
		return []string{"verify", "--store", "sqlite:" + base + ".baton.db", "--fence-db", "sqlite:" + base + ".invoices.db", "billing"}
	}
	code, out, stderr := runBaton(t, files("fencing+trigger")...)
	if code != 0 || !strings.HasPrefix(out, "billing: exactly once\n") || !strings.Contains(out, "refused 1 writes") {
		t.Fatalf("verify of the fencing+trigger column: exit %d, want 0, exactly once, one refusal\n%s%s", code, out, stderr)
	}
	var refused bool
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 8 && f[2] == "done" && f[5] == "1" && f[4] == "2" {
			refused = true // accepted by 2, token 1 refused
		}
	}
	if !refused {
		t.Errorf("no period shows token 2 accepted and token 1 refused:\n%s", out)
	}
	t.Logf("fencing+trigger:\n%s", out)
	code, out, _ = runBaton(t, files("plain")...)
	if code != 1 || !strings.Contains(out, "violation: lost: period ") {
		t.Fatalf("verify of the plain column: exit %d, want 1 and lost periods\n%s", code, out)
	}
}

// sqliteResource opens the fenced resource of a verify test, an SQLite
// file in dir with the invoice table and the logged fence: its path, its
// DSN (for the nodes' jobs), a handle closed at the end of t, and the
// fence's dialect.
func sqliteResource(t *testing.T, dir string) (path, dsn string, res *sql.DB, d fence.Dialect) {
	t.Helper()
	path = filepath.Join(dir, "res.db")
	dsn = "file:" + path + "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)"
	res, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Close() })
	d, _ = fence.SQLite.WithLog(fence.DefaultLogTable)
	createInvoice(t, res, d)
	return path, dsn, res, d
}

// docs/SECURITY.md, "the fence database": a fence log row with token -1
// (issue 42: verify read it as token 0) makes verify fail in one line
// naming the row, and judges nothing.
func TestVerifyFenceLogCorruptRow(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own store, files and processes
	dir := t.TempDir()
	// Batches of 200 lines, as TestDrillGuarantees: the fence and its log
	// are what verify judges, whatever a batch's size.
	if code, _, stderr := runBaton(t, "drill", "--dir", dir, "--fault", "pause-before-effect", "--invoice-lines", "200"); code != 0 {
		t.Fatalf("drill: exit %d\n%s", code, stderr)
	}
	base := filepath.Join(dir, "pause-before-effect-fencing+trigger")
	res, err := sql.Open("sqlite", "file:"+base+".invoices.db")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	var seq int64
	if err := res.QueryRow(`INSERT INTO baton_fence_log (name, token, period, outcome, highest, at_ns)
		VALUES ('billing', -1, 'P', 'accepted', -1, 0) RETURNING seq`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	res.Close()
	args := []string{"verify", "--store", "sqlite:" + base + ".baton.db", "--fence-db", "sqlite:" + base + ".invoices.db", "billing"}
	code, out, stderr := runBaton(t, args...)
	want := fmt.Sprintf(`corrupt record at row seq %d (name "billing"): token -1 is not a fencing token`, seq)
	if code != exitFailure || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) || strings.Contains(stderr, "opened with a log") {
		t.Fatalf("verify over a log row with token -1: exit %d, stdout %q, stderr %q; want 1, nothing judged, one line saying %q", code, out, stderr, want)
	}
	t.Log(strings.TrimSpace(stderr))
}
