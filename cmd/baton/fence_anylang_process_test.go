//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store/postgres"
)

// debianPython is the python3 that Debian's python3-psycopg2 serves; the
// first python3 on PATH may be another.
const debianPython = "/usr/bin/python3"

// periodStartedRE finds the period of each "period started" line of
// baton run's log: the job started next bills it.
var periodStartedRE = regexp.MustCompile(`msg="period started" .*period=(\S+)`)

// The acceptance test of fencing from other languages (issue 27): baton
// run on 3 nodes, store and resource on PostgreSQL, runs a billing job
// (examples/anylang: Python with psycopg2, or sh with psql) every second;
// each run writes its period's invoice lines in one transaction that
// first calls baton_fence($BATON_NAME, $BATON_TOKEN). Five times, the
// leader's node is frozen whole (baton, its supervisor and the job: a
// paused VM, the case no supervisor covers) while its job does its work,
// before its transaction; another node takes over and bills; then the
// frozen job is let go first, so that it writes with its stale token,
// and then the rest of its node. At the end: no period/customer billed
// twice, every refused write recorded with SQLSTATE BF001 and none of its
// lines landed, and every frozen job's write refused. The Python job runs
// with signed tokens (baton run --fence-key-file, baton fence install
// --key-file). The jobs connect as a role granted baton_fence (baton fence
// install --grant), not as its owner. The fence keeps its log (install
// --log) and the jobs pass $BATON_PERIOD: at the end, baton verify
// --fence-db says "exactly once" (issue 45), and after a second
// acceptance of a period is forged into the log, under another token,
// names that period and exits 1.
//
// Two rounds per language, the two side by side (at three it was the
// last of the package's tests to end, 30 s beside the suite's other
// packages); under testenv.Long (CI) ten, one language after the other.
func TestProcessFenceAnyLanguage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	// Beside the package's other parallel tests too: run serially, this
	// test held every one of them back for its 15-20 s (one at a time in
	// CI: testenv.ParallelUnlessLong).
	testenv.ParallelUnlessLong(t)
	rounds := 2
	if testenv.Long() {
		rounds = 10
	}
	dir, err := filepath.Abs("../../examples/anylang")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("python", func(t *testing.T) {
		testenv.ParallelUnlessLong(t)
		if out, err := exec.Command(debianPython, "-c", "import psycopg2").CombinedOutput(); err != nil {
			testenv.Require(t, pgtest.Component, fmt.Sprintf("%s cannot import psycopg2 (install python3-psycopg2): %v %s", debianPython, err, strings.TrimSpace(string(out))))
		}
		fenceRounds(t, rounds, true, debianPython, filepath.Join(dir, "billing.py"))
	})
	t.Run("psql", func(t *testing.T) {
		testenv.ParallelUnlessLong(t)
		if _, err := exec.LookPath("psql"); err != nil {
			testenv.Require(t, pgtest.Component, "psql is not on PATH (install postgresql-client)")
		}
		fenceRounds(t, rounds, false, "sh", filepath.Join(dir, "billing.sh"))
	})
}

// fenceNode is one node of fenceRounds: its baton process and log.
type fenceNode struct {
	id      string
	cmd     *exec.Cmd
	errb    *syncBuffer
	started int // "command started" lines already used for a round
}

func fenceRounds(t *testing.T, rounds int, signed bool, command ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db := pgtest.Start(t)
	schema, err := os.ReadFile("../../examples/anylang/schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, string(schema)); err != nil {
		t.Fatal(err)
	}
	// The jobs connect as a role of their own, with the grants schema.sql
	// names and EXECUTE on baton_fence from install --grant.
	job, jobURL := pgtest.NewRole(t, db)
	if _, err := pool.Exec(ctx, `GRANT SELECT, INSERT ON invoice_line, fence_refusal TO `+job+`;
		GRANT USAGE ON SEQUENCE invoice_line_id_seq TO `+job); err != nil {
		t.Fatal(err)
	}
	install := []string{"fence", "install", "--db", db, "--grant", job, "--log"}
	var runArgs []string
	if signed {
		keyFile := filepath.Join(t.TempDir(), "fence.key")
		if err := os.WriteFile(keyFile, []byte("4f3c2a1b0e9d8c7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa01\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		install = append(install, "--key-file", keyFile)
		runArgs = append(runArgs, "--fence-key-file", keyFile)
	}
	if code, stderr, _ := exitCode(t, install...); code != exitOK {
		t.Fatalf("baton %s: exit %d: %s", strings.Join(install, " "), code, stderr)
	}
	u, _ := url.Parse(db)
	q := u.Query()
	q.Set("schema", "baton")
	u.RawQuery = q.Encode()
	storeURL := u.String()
	st, err := postgres.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	nodes := map[string]*fenceNode{}
	for _, id := range []string{"A", "B", "C"} {
		args := append([]string{"run", "--store", storeURL, "--node", id, "--lease", "2s", "--clock-margin", "100ms",
			"--every", "1s"}, runArgs...)
		args = append(append(args, "billing", "--"), command...)
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "BATON_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0",
			"DATABASE_URL="+jobURL, "BILLING_WORK_SECONDS=0.6")
		n := &fenceNode{id: id, cmd: cmd, errb: &syncBuffer{}}
		cmd.Stdout, cmd.Stderr = &syncBuffer{}, n.errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// Never leave a node or its job stopped.
			syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
			cmd.Process.Kill()
			cmd.Wait()
		})
		nodes[id] = n
	}
	fenceToken := func() int64 {
		var tok int64
		pool.QueryRow(ctx, `SELECT token FROM baton_fence WHERE name = 'billing'`).Scan(&tok)
		return tok
	}

	began := time.Now()
	done, attempts := 0, 0
	for done < rounds {
		if attempts++; attempts > 3*rounds {
			t.Fatalf("%d rounds of %d after %d attempts: the freezes kept landing inside the job's transaction", done, rounds, attempts)
		}
		// The leader's next job start.
		var (
			n      *fenceNode
			pid    int
			token  int64
			period string // of the job started
		)
		if !testenv.WaitFor(20*time.Second, func() bool {
			rec, err := st.Get(ctx, "billing")
			if err != nil || nodes[rec.Holder] == nil {
				return false
			}
			n = nodes[rec.Holder]
			m := pgidRE.FindAllStringSubmatch(n.errb.String(), -1)
			if len(m) <= n.started {
				return false
			}
			n.started = len(m)
			pid, _ = strconv.Atoi(m[len(m)-1][1])
			token = int64(rec.Token)
			if ps := periodStartedRE.FindAllStringSubmatch(n.errb.String(), -1); len(ps) > 0 {
				period = ps[len(ps)-1][1]
			}
			return true
		}) {
			t.Fatalf("round %d: no job started on the leader", done+1)
		}
		time.Sleep(100 * time.Millisecond) // into the job's work, before its transaction
		super := parentOf(pid)
		if syscall.Kill(-pid, syscall.SIGSTOP) != nil || super <= 1 {
			continue // the job ended already
		}
		syscall.Kill(super, syscall.SIGSTOP)
		syscall.Kill(n.cmd.Process.Pid, syscall.SIGSTOP)
		thawNode := func() {
			syscall.Kill(n.cmd.Process.Pid, syscall.SIGCONT)
			syscall.Kill(super, syscall.SIGCONT)
		}
		// The freeze must have caught the job before it connected.
		var conns int
		pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`,
			fmt.Sprintf("billing %s token %d", n.id, token)).Scan(&conns)
		if conns > 0 {
			syscall.Kill(-pid, syscall.SIGCONT)
			thawNode()
			t.Logf("attempt %d: node %s's job was frozen connected; thawed, trying again", attempts, n.id)
			continue
		}
		// Nor after it wrote and disconnected: on a loaded machine this
		// process can be late by the job's whole 0.6 s of work.
		var lines int
		pool.QueryRow(ctx, `SELECT count(*) FROM invoice_line WHERE period = $1 AND token = $2 AND node = $3`, period, token, n.id).Scan(&lines)
		if period == "" || lines > 0 {
			syscall.Kill(-pid, syscall.SIGCONT)
			thawNode()
			t.Logf("attempt %d: node %s's job of period %q was frozen after it wrote; thawed, trying again", attempts, n.id, period)
			continue
		}
		frozen := time.Now()
		if !testenv.WaitFor(20*time.Second, func() bool { return fenceToken() > token }) {
			syscall.Kill(-pid, syscall.SIGCONT)
			thawNode()
			t.Fatalf("round %d: node %s frozen with token %d, and no other node wrote within 20s; logs:\n%s", done+1, n.id, token, allLogs(nodes))
		}
		took := time.Since(frozen)
		// The frozen job first: it writes with its stale token.
		syscall.Kill(-pid, syscall.SIGCONT)
		refused := testenv.WaitFor(15*time.Second, func() bool {
			var k int
			pool.QueryRow(ctx, `SELECT count(*) FROM fence_refusal WHERE node = $1 AND token = $2`, n.id, token).Scan(&k)
			return k > 0
		})
		thawNode()
		if !refused {
			t.Fatalf("round %d: node %s's job, let go with stale token %d (the fence at %d), recorded no refusal; logs:\n%s", done+1, n.id, token, fenceToken(), allLogs(nodes))
		}
		done++
		t.Logf("round %d: node %s frozen at token %d; another node wrote %v later; the frozen job's write refused", done, n.id, token, took.Round(time.Millisecond))
	}
	for _, n := range nodes {
		n.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, n := range nodes {
		n.cmd.Wait()
	}
	t.Logf("%d rounds in %v", rounds, time.Since(began).Round(100*time.Millisecond))

	var dups int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT period, customer FROM invoice_line
		GROUP BY period, customer HAVING count(*) > 1) d`).Scan(&dups); err != nil || dups != 0 {
		t.Errorf("%d period/customer pairs billed more than once (%v)", dups, err)
	}
	rows, _ := pool.Query(ctx, `SELECT r.period, r.token, r.node, r.sqlstate, r.message,
		(SELECT count(*) FROM invoice_line l WHERE l.period = r.period AND l.token = r.token AND l.node = r.node)
		FROM fence_refusal r ORDER BY r.token`)
	type refusal struct {
		period, node, state, msg string
		token, landed            int64
	}
	refusals, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (refusal, error) {
		var f refusal
		err := r.Scan(&f.period, &f.token, &f.node, &f.state, &f.msg, &f.landed)
		return f, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(refusals) < rounds {
		t.Errorf("%d refusals recorded, want at least %d (one per frozen leader)", len(refusals), rounds)
	}
	for _, r := range refusals {
		if r.state != pgfence.SQLStateStale || r.landed != 0 || !strings.Contains(r.msg, "stale token") {
			t.Errorf("refusal %+v: want SQLSTATE %s and none of its lines landed", r, pgfence.SQLStateStale)
		}
	}
	var periods, tokens int
	pool.QueryRow(ctx, `SELECT count(DISTINCT period), count(DISTINCT token) FROM invoice_line`).Scan(&periods, &tokens)
	t.Logf("%d periods billed under %d tokens; %d stale writes refused, e.g. %q", periods, tokens, len(refusals), refusals[0].msg)
	if tokens < 2 {
		t.Errorf("invoice lines under %d tokens: no takeover billed", tokens)
	}
	for _, n := range nodes {
		for _, l := range strings.Split(n.errb.String(), "\n") {
			if strings.Contains(l, "Traceback") || strings.Contains(l, "ERROR:  ") && !strings.Contains(l, "stale token") {
				t.Errorf("node %s: the job failed otherwise than on a stale token: %s", n.id, l)
			}
		}
	}
	verifyFencedJob(t, ctx, pool, storeURL, db)
}

// verifyFencedJob runs baton verify --fence-db over the billing job that
// fenceRounds ran: "exactly once", from the log baton_fence wrote; then
// it forges a second acceptance of the first period logged, under the
// highest token accepted (another term's), and verify names the period.
func verifyFencedJob(t *testing.T, ctx context.Context, pool *pgxpool.Pool, storeURL, db string) {
	t.Helper()
	var logged, periods int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT period) FROM baton_fence_log WHERE name = 'billing' AND outcome = 'accepted' AND period <> ''`).Scan(&logged, &periods); err != nil {
		t.Fatal(err)
	}
	if logged == 0 {
		t.Fatal("the fence log holds no accepted call with a period: the jobs' calls were not logged")
	}
	args := []string{"verify", "--store", storeURL, "--fence-db", db, "billing"}
	code, stderr, _ := exitCode(t, args...)
	out := runOut(t, args...)
	if code != exitOK || !strings.HasPrefix(out, "billing: exactly once\n") {
		t.Fatalf("baton verify --fence-db: exit %d\n%s%s", code, out, stderr)
	}
	first, _, _ := strings.Cut(out, "\n")
	second, _, _ := strings.Cut(strings.TrimPrefix(out, first+"\n"), "\n")
	t.Logf("verify: %s; %s (%d accepted calls logged for %d periods)", first, strings.TrimSpace(second), logged, periods)

	var period string
	var token, top int64
	if err := pool.QueryRow(ctx, `SELECT period, token, (SELECT max(token) FROM baton_fence_log WHERE name = 'billing' AND outcome = 'accepted')
		FROM baton_fence_log WHERE name = 'billing' AND outcome = 'accepted' AND period <> '' ORDER BY seq LIMIT 1`).Scan(&period, &token, &top); err != nil {
		t.Fatal(err)
	}
	if token == top {
		t.Fatalf("the first period logged, %s, was accepted under the highest token %d: no takeover to forge with", period, top)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO baton_fence_log (name, token, period, outcome, highest, at_ns)
		VALUES ('billing', $1, $2, 'accepted', $1, 0)`, top, period); err != nil {
		t.Fatal(err)
	}
	code, _, _ = exitCode(t, args...)
	out = runOut(t, args...)
	if code != exitFailure || !strings.HasPrefix(out, "billing: VIOLATED") || !strings.Contains(out, "violation: twice: period "+period) {
		t.Fatalf("verify after a forged second acceptance of %s under token %d: exit %d\n%s; want 1 and the period named", period, top, code, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "violation: ") {
			t.Logf("forged: %s", l)
		}
	}
}

// runOut runs the baton binary with args and returns its stdout.
func runOut(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "BATON_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
	out, _ := cmd.Output()
	return string(out)
}

// parentOf returns the parent process id of pid, 0 if it is gone.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

func allLogs(nodes map[string]*fenceNode) string {
	var b strings.Builder
	for _, id := range []string{"A", "B", "C"} {
		fmt.Fprintf(&b, "--- node %s\n%s", id, nodes[id].errb.String())
	}
	return b.String()
}

// A Go writer (pgfence.Check) and a psql writer on one name: a stale
// token from either is refused by the other's fence.
func TestProcessFenceGoAndPsql(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own store, files and processes
	if _, err := exec.LookPath("psql"); err != nil {
		testenv.Require(t, pgtest.Component, "psql is not on PATH (install postgresql-client)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.Start(t)
	if code, stderr, _ := exitCode(t, "fence", "install", "--db", db); code != exitOK {
		t.Fatalf("fence install: exit %d: %s", code, stderr)
	}
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE invoice (token bigint NOT NULL, writer text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	goWrite := func(token uint64) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := pgfence.Check(ctx, tx, "billing", token); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO invoice VALUES ($1, 'go')`, int64(token))
			return err
		})
	}
	psqlWrite := func(token int) (string, error) {
		cmd := exec.Command("psql", db, "-X", "-q", "-1", "-f", "-", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose",
			"-v", "token="+strconv.Itoa(token))
		cmd.Stdin = strings.NewReader("SELECT baton_fence('billing', :'token');\nINSERT INTO invoice VALUES (:'token', 'psql');\n")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if err := goWrite(5); err != nil {
		t.Fatal(err)
	}
	out, err := psqlWrite(4)
	if err == nil || !strings.Contains(out, "ERROR:  "+pgfence.SQLStateStale+":") {
		t.Fatalf("psql with token 4 after Go's 5: %v, %q; want SQLSTATE %s", err, out, pgfence.SQLStateStale)
	}
	t.Logf("psql, stale: %s", strings.TrimSpace(out))
	if out, err := psqlWrite(7); err != nil {
		t.Fatalf("psql with token 7: %v: %s", err, out)
	}
	if err := goWrite(6); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("Go with token 6 after psql's 7: %v, want ErrStaleToken", err)
	}
	var got string
	pool.QueryRow(ctx, `SELECT string_agg(writer || ':' || token, ',' ORDER BY token) FROM invoice`).Scan(&got)
	if got != "go:5,psql:7" {
		t.Fatalf("invoice %q, want go:5,psql:7: a refused write landed", got)
	}
}
