package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", for the job's fence database

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store/kube"
)

// The job of testRunFailover: the test binary run again by baton run as
// its command, with these set (see runJobChild).
const (
	jobDSN  = "KUBETEST_JOB_DSN"  // the fence database
	jobFile = "KUBETEST_JOB_FILE" // the file each run appends its line to
)

// The timings of the baton run nodes: lease + 2e = 2.2 s.
const (
	runLease  = 2 * time.Second
	runMargin = 100 * time.Millisecond
	runRenew  = runLease / 3 // baton run's default
)

// runJobChild runs this process as the job of testRunFailover if jobDSN
// is set, and exits. The job is what a billing job does: in one
// transaction, it bills $BATON_PERIOD unless it was billed already (a
// period re-run after its leader died mid-run), through the fence that
// logs what it accepts (baton verify reads the log). Then it appends
// "PERIOD TOKEN NODE STARTNS OUTCOME" to the job file: OUTCOME is billed,
// again (found billed) or refused (a stale token). It exits 3 on a
// refusal.
func runJobChild() {
	dsn := os.Getenv(jobDSN)
	if dsn == "" {
		return
	}
	started := time.Now()
	outcome, err := billPeriod(dsn)
	code := 0
	switch {
	case errors.Is(err, fence.ErrStaleToken):
		outcome, code = "refused", 3
	case err != nil:
		fmt.Fprintln(os.Stderr, "job:", err)
		os.Exit(1)
	}
	line := fmt.Sprintf("%s %s %s %d %s\n", os.Getenv(fence.EnvPeriod), os.Getenv(fence.EnvToken), os.Getenv("BATON_NODE"), started.UnixNano(), outcome)
	f, err := os.OpenFile(os.Getenv(jobFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err == nil {
		_, err = f.WriteString(line) // one write: lines of two runs never mix
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "job:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// jobDialect is the job's fence: SQLite's, with its log.
func jobDialect() fence.Dialect {
	d, err := fence.SQLite.WithLog(fence.DefaultLogTable)
	if err != nil {
		panic(err)
	}
	return d
}

// billPeriod is the job's transaction.
func billPeriod(dsn string) (outcome string, err error) {
	w, err := fence.WriteFromEnv()
	if err != nil {
		return "", err
	}
	ctx := context.Background()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	d := jobDialect()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM invoice WHERE period = ?`, w.Period).Scan(&n); err != nil {
		return "", err
	}
	if n > 0 {
		return "again", nil
	}
	if err := fence.CheckWriteTx(ctx, tx, d, w); err != nil {
		if errors.Is(err, fence.ErrStaleToken) {
			tx.Rollback()
			if lerr := fence.LogRefusal(ctx, db, d, w, err); lerr != nil {
				fmt.Fprintln(os.Stderr, "job:", lerr)
			}
		}
		return "", err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO invoice (period, token) VALUES (?, ?)`, w.Period, int64(w.Token)); err != nil {
		return "", err
	}
	return "billed", tx.Commit()
}

// kubeconfig writes a kubeconfig file for the server's loopback superuser
// and returns its path: what the CLI's kube:// URL names.
func (e *env) kubeconfig(t testing.TB) string {
	t.Helper()
	cfg := e.srv.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify: cfg.Insecure, TLSServerName: cfg.ServerName}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// batonCLI builds the CLI with the Lease store (go build -tags kube) from
// the root module, once per test binary, and returns its path.
func (e *env) batonCLI(t testing.TB) string {
	t.Helper()
	e.cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubetest-baton")
		if err != nil {
			e.cliErr = err
			return
		}
		e.cliDir = dir
		bin := filepath.Join(dir, "baton")
		cmd := exec.Command("go", "build", "-tags", "kube", "-o", bin, "./cmd/baton")
		cmd.Dir = ".." // the root module
		if out, err := cmd.CombinedOutput(); err != nil {
			e.cliErr = fmt.Errorf("go build -tags kube ./cmd/baton: %v\n%s", err, out)
			return
		}
		e.cli = bin
	})
	if e.cliErr != nil {
		t.Fatal(e.cliErr)
	}
	return e.cli
}

// jobLine is one line of the job file.
type jobLine struct {
	period  string
	token   uint64
	node    string
	start   time.Time
	outcome string
}

func readJobFile(t *testing.T, path string) []jobLine {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []jobLine
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 {
			t.Fatalf("job file line %q: want PERIOD TOKEN NODE STARTNS OUTCOME", sc.Text())
		}
		tok, err1 := strconv.ParseUint(f[1], 10, 64)
		ns, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("job file line %q: %v %v", sc.Text(), err1, err2)
		}
		out = append(out, jobLine{period: f[0], token: tok, node: f[2], start: time.Unix(0, ns), outcome: f[4]})
	}
	return out
}

// runNode is one baton run process of testRunFailover.
type runNode struct {
	id   string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

// testRunFailover is issue #46's acceptance of baton run on the API
// server: three `baton run --every 1s` processes (the CLI built with
// -tags kube; --keep-rows at the store's bound, kube.LedgerRows) on
// kube://NAMESPACE run a job that bills each period
// through a logged fence and appends a line to a file. The leader is
// killed with SIGKILL twice (its node started again 0.5 s later), then
// stopped with SIGSTOP past its lease and let go. Then `baton verify`
// must exit 0 saying exactly once; the job file must show each period
// billed once, every period from the first billed to the last billed
// (catch-up all: periods due while nobody could lead are run by the next
// leader), and no run refused except a stale leader's. Each kill's
// failover (the kill to the first period another node's baton started) is logged
// against lease + 2e and bounded by lease + 2e + the renew interval (the
// takeover grace when the dead leader was mid-run) + 0.5 s, plus the
// scheduling delay measured meanwhile.
func (e *env) testRunFailover(t *testing.T) {
	cli := e.batonCLI(t)
	ns := e.namespace(t)
	storeURL := "kube://" + ns + "?kubeconfig=" + e.kubeconfig(t)
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "res.db")
	dsn := "file:" + dbPath + "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)"
	res, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	ctx := context.Background()
	if err := fence.CreateTable(ctx, res, jobDialect()); err != nil {
		t.Fatal(err)
	}
	if _, err := res.ExecContext(ctx, `CREATE TABLE invoice (period TEXT NOT NULL, token BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "runs.txt")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	nodes := map[string]*runNode{}
	start := func(id string) {
		logf, err := os.OpenFile(filepath.Join(dir, id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(cli, "run", "--store", storeURL, "--node", id, "--lease", runLease.String(),
			"--clock-margin", runMargin.String(), "--log-format", "json", "--every", "1s", "--keep-rows", strconv.Itoa(kube.LedgerRows), "billing", "--", self, "-test.run=^$")
		cmd.Env = append(os.Environ(), jobDSN+"="+dsn, jobFile+"="+file)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		n := &runNode{id: id, cmd: cmd, log: logf, done: make(chan struct{})}
		go func() { cmd.Wait(); logf.Close(); close(n.done) }()
		mu.Lock()
		nodes[id] = n
		mu.Unlock()
	}
	ids := []string{"n1", "n2", "n3"}
	for _, id := range ids {
		start(id)
	}
	logs := func() string {
		var b strings.Builder
		for _, id := range ids {
			raw, _ := os.ReadFile(filepath.Join(dir, id+".log"))
			fmt.Fprintf(&b, "--- %s's log (the last 3000 bytes):\n%s\n", id, raw[max(0, len(raw)-3000):])
		}
		return b.String()
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range nodes {
			n.cmd.Process.Signal(syscall.SIGCONT)
			n.cmd.Process.Kill()
			<-n.done
		}
	}()
	// billedBy waits until the job file shows want billed periods after
	// from, the newest by a node other than not, and returns that node
	// and token.
	billedBy := func(want int, from int, not string) (string, uint64) {
		var node string
		var token uint64
		if !testenv.WaitFor(30*time.Second, func() bool {
			lines := readJobFile(t, file)
			n := 0
			for _, l := range lines[min(from, len(lines)):] {
				if l.outcome == "billed" {
					n++
				}
			}
			if n < want || len(lines) == 0 {
				return false
			}
			last := lines[len(lines)-1]
			node, token = last.node, last.token
			return last.outcome == "billed" && last.node != not
		}) {
			t.Fatalf("no %d periods billed in 30 s (after line %d, by another node than %q)\n%s", want, from, not, logs())
		}
		return node, token
	}
	leader, _ := billedBy(2, 0, "")

	delay := testenv.MeasureDelay(t)
	type failover struct {
		killed    string
		token     uint64
		at        time.Time
		lastRenew time.Time // the killed holder's last renewal, from the Lease
	}
	var kills []failover
	for range 2 {
		n := len(readJobFile(t, file))
		lines := readJobFile(t, file)
		tok := lines[len(lines)-1].token
		mu.Lock()
		victim := nodes[leader]
		mu.Unlock()
		victim.cmd.Process.Signal(syscall.SIGKILL)
		at := time.Now()
		<-victim.done
		// Its last renewal: the renewTime it wrote (baton writes the
		// Lease's spec at every renewal of a name of its own).
		l, err := e.cs.CoordinationV1().Leases(ns).Get(ctx, "billing", metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != leader {
			t.Fatalf("the Lease after the kill of %s: %v (holder %v)", leader, err, l.Spec.HolderIdentity)
		}
		kills = append(kills, failover{killed: leader, token: tok, at: at, lastRenew: l.Spec.RenewTime.Time})
		time.Sleep(500 * time.Millisecond)
		start(leader)
		leader, _ = billedBy(2, n, leader)
	}
	// A pause of the leader past its lease: another node takes over; the
	// paused one, let go, finds itself deposed (a run it had under way
	// is refused by the fence or found billed).
	n := len(readJobFile(t, file))
	mu.Lock()
	paused := nodes[leader]
	mu.Unlock()
	paused.cmd.Process.Signal(syscall.SIGSTOP)
	newLeader, _ := billedBy(2, n, leader)
	paused.cmd.Process.Signal(syscall.SIGCONT)
	n = len(readJobFile(t, file))
	billedBy(3, n, "")
	t.Logf("killed %s and %s, paused %s; %s leads at the end", kills[0].killed, kills[1].killed, paused.id, newLeader)

	// Stop every node (SIGTERM: a clean resign), then judge.
	mu.Lock()
	for _, n := range nodes {
		n.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, n := range nodes {
		select {
		case <-n.done:
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not exit 30 s after SIGTERM", n.id)
		}
	}
	mu.Unlock()

	lines := readJobFile(t, file)
	billed := map[string]int{}
	var first, last time.Time
	for _, l := range lines {
		if l.outcome != "billed" {
			continue
		}
		billed[l.period]++
		p, err := schedule.ParseKey(l.period)
		if err != nil {
			t.Fatalf("period %q: %v", l.period, err)
		}
		if first.IsZero() || p.Before(first) {
			first = p
		}
		if p.After(last) {
			last = p
		}
	}
	for p, c := range billed {
		if c > 1 {
			t.Errorf("period %s billed %d times", p, c)
		}
	}
	lost := 0
	for p := first; !p.After(last); p = p.Add(time.Second) {
		if billed[schedule.Key(p)] == 0 {
			lost++
			t.Errorf("period %s (between the first billed, %s, and the last, %s) was never billed", schedule.Key(p), schedule.Key(first), schedule.Key(last))
		}
	}
	again, refused := 0, 0
	for _, l := range lines {
		switch l.outcome {
		case "again":
			again++
		case "refused":
			refused++
		}
	}
	t.Logf("%d runs: %d periods billed (%s to %s), %d lost, %d re-runs that found the period billed, %d refused by the fence", len(lines), len(billed), schedule.Key(first), schedule.Key(last), lost, again, refused)

	// The failovers: the kill to the first period another node's baton
	// started (its log's "period started"; the job's own start comes
	// later by the exec of this test binary, hundreds of milliseconds
	// under load). Each line's job start is logged beside it.
	starts := periodStarts(t, dir, ids)
	elected := logLines(t, dir, ids, "elected")
	floor := runLease + 2*runMargin
	for _, k := range kills {
		// The crash failover as the other stores measure it (baton bench
		// takeover): the killed holder's last renewal to another node's
		// term, against lease + 2e.
		var term *periodStart
		for i, p := range elected {
			if p.node != k.killed && p.at.After(k.at) {
				term = &elected[i]
				break
			}
		}
		if term == nil {
			t.Errorf("after %s was killed, no other node was elected", k.killed)
		} else {
			took := term.at.Sub(k.lastRenew)
			t.Logf("crash failover after SIGKILL of %s: %s elected %.3f s after the killed holder's last renewal, %.4fx lease + 2e (%s)",
				k.killed, term.node, took.Seconds(), float64(took)/float64(floor), floor)
			if bound := delay.Slack(floor*105/100, k.lastRenew, term.at); took > bound {
				t.Errorf("the crash failover after the SIGKILL of %s took %s from its last renewal, over %s (1.05x lease + 2e and the scheduling delay measured)", k.killed, took, bound)
			}
		}
		var next *periodStart
		for i, p := range starts {
			if p.node != k.killed && p.at.After(k.at) {
				next = &starts[i]
				break
			}
		}
		if next == nil {
			t.Errorf("after %s (token %d) was killed, no other node started a period", k.killed, k.token)
			continue
		}
		took := next.at.Sub(k.at)
		jobStart := "no run in the job file"
		for _, l := range lines {
			if l.node == next.node && l.period == next.period && l.start.After(k.at) {
				jobStart = fmt.Sprintf("its job started %.3f s after the kill", l.start.Sub(k.at).Seconds())
				break
			}
		}
		t.Logf("failover after SIGKILL of %s (token %d): %s started period %s %.3f s after the kill, %.3fx lease + 2e (%s); %s",
			k.killed, k.token, next.node, next.period, took.Seconds(), float64(took)/float64(floor), floor, jobStart)
		if bound := delay.Slack(floor+runRenew+500*time.Millisecond, k.at, next.at); took > bound {
			t.Errorf("failover after the SIGKILL of %s took %s, over %s (lease + 2e + the renew interval + 0.5 s + the scheduling delay measured)", k.killed, took, bound)
		}
	}

	cmd := exec.Command(cli, "verify", "--store", storeURL, "--fence-db", "sqlite:"+dbPath, "--keep-rows", strconv.Itoa(kube.LedgerRows), "billing")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if err != nil || !strings.HasPrefix(out.String(), "billing: exactly once\n") {
		t.Fatalf("baton verify: %v, want exit 0 and exactly once\n%s%s", err, out.String(), errb.String())
	}
	head, _, _ := strings.Cut(out.String(), "\n")
	t.Logf("baton verify: %s (%d lines of output)", head, strings.Count(out.String(), "\n"))
}

// periodStart is a "period started" line of a node's log.
type periodStart struct {
	node, period string
	at           time.Time
}

// periodStarts reads the "period started" lines of the nodes' logs
// (--log-format json), every node's, oldest first.
func periodStarts(t *testing.T, dir string, ids []string) []periodStart {
	t.Helper()
	return logLines(t, dir, ids, "period started")
}

// logLines reads the lines of message msg of the nodes' logs (--log-format
// json), every node's, oldest first.
func logLines(t *testing.T, dir string, ids []string, msg string) []periodStart {
	t.Helper()
	var out []periodStart
	for _, id := range ids {
		raw, err := os.ReadFile(filepath.Join(dir, id+".log"))
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(raw) {
			var l struct {
				Time   time.Time `json:"time"`
				Msg    string    `json:"msg"`
				Period string    `json:"period"`
			}
			if json.Unmarshal(line, &l) != nil || l.Msg != msg {
				continue // another line, or the job's own output
			}
			out = append(out, periodStart{node: id, period: l.Period, at: l.Time})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// takeoverReport is the part of `baton bench takeover --json` read here.
type takeoverReport struct {
	FloorSeconds         float64 `json:"floorSeconds"`
	FirstTakeoverSeconds float64 `json:"firstTakeoverSeconds"`
	LastTakeoverSeconds  float64 `json:"lastTakeoverSeconds"`
	OverFloorSeconds     float64 `json:"overFloorSeconds"`
	TakenOver            int     `json:"takenOver"`
	DoubleHeld           int     `json:"doubleHeld"`
}

// testBenchTakeover runs the crash takeover measurement of the other
// stores (BENCHMARKS.md: `baton bench takeover --store URL --names 1
// --lease 3s --json`) on the API server: a holder process is killed
// with SIGKILL and this one takes its name over, measured from the
// holder's last renewal against the floor lease + 2e. No name may be held
// twice (the command exits 1 then), and the takeover must come within
// 1.05x the floor plus the scheduling delay measured meanwhile.
func (e *env) testBenchTakeover(t *testing.T) {
	cli := e.batonCLI(t)
	storeURL := "kube://" + e.namespace(t) + "?kubeconfig=" + e.kubeconfig(t)
	for i := range 2 {
		delay := testenv.MeasureDelay(t)
		began := time.Now()
		cmd := exec.Command(cli, "bench", "takeover", "--store", storeURL, "--names", "1", "--lease", "3s", "--prefix", fmt.Sprintf("takeover%d-", i), "--json")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("baton bench takeover: %v\n%s%s", err, out.String(), errb.String())
		}
		var rep takeoverReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("bench takeover's report: %v\n%s", err, out.String())
		}
		if rep.DoubleHeld != 0 || rep.TakenOver != 1 {
			t.Fatalf("bench takeover: %d names held twice, %d taken over; want 0 and 1\n%s", rep.DoubleHeld, rep.TakenOver, out.String())
		}
		floor := time.Duration(rep.FloorSeconds * float64(time.Second))
		took := time.Duration(rep.LastTakeoverSeconds * float64(time.Second))
		if took < floor {
			t.Errorf("taken over %s after the holder's last renewal, before the floor %s", took, floor)
		}
		ratio := rep.LastTakeoverSeconds / rep.FloorSeconds
		t.Logf("run %d: taken over %.3f s after the holder's last renewal, floor %.3f s: +%.3f s, %.4fx", i+1, rep.LastTakeoverSeconds, rep.FloorSeconds, rep.OverFloorSeconds, ratio)
		if bound := delay.Slack(floor*105/100, began, time.Now()); took > bound {
			t.Errorf("taken over %s after the holder's last renewal, over %s (1.05x the floor %s plus the scheduling delay measured)", took, bound, floor)
		}
	}
}
