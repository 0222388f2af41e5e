package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/sqlitetest"
	"github.com/batonhq/baton/internal/testenv"
)

// secret is the password of every store URL in these tests.
const secret = "S3cretPassw0rd"

// checkNoSecret fails t if any output contains the password.
func checkNoSecret(t *testing.T, what string, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		if strings.Contains(o, secret) {
			t.Errorf("%s printed the password:\n%s", what, o)
		}
	}
}

// No output of baton contains a store password: errors opening a store
// (unreachable, misspelt scheme, bad parameters), help texts with the URL in
// the environment, and a real run against PostgreSQL with status, history
// and runs afterwards, in text and JSON.
func TestNoPasswordInOutput(t *testing.T) {
	for _, args := range [][]string{
		{"status", "--store", "postgres://baton:" + secret + "@127.0.0.1:1/db?connect_timeout=2", "eod"},
		{"status", "--store", "postgress://u:" + secret + "@127.0.0.1:1/db", "eod"},
		{"status", "--store", "postgres://u:" + secret + "@127.0.0.1:1/db?schema=a&schema=b", "eod"},
		{"status", "--store", "postgres://u:" + secret + "@127.0.0.1:port/db", "eod"},
		{"history", "--store", "postgres://u@127.0.0.1:1/db?password=" + secret + "&connect_timeout=2", "eod"},
		{"runs", "--store", "etcd://u:" + secret + "@127.0.0.1:1", "eod"},
		{"trigger", "--store", "postgres://u:" + secret + "@[::1/db", "eod"},
	} {
		code, out, errb := runBaton(t, args...)
		if code == exitOK {
			t.Errorf("baton %s: exit 0", strings.Join(args, " "))
		}
		checkNoSecret(t, "baton "+strings.Join(args, " "), out, errb)
		t.Logf("baton %s: %s", args[0], strings.TrimSpace(errb))
	}
	t.Setenv("BATON_STORE", "postgres://baton:"+secret+"@127.0.0.1:1/db")
	for _, cmd := range []string{"run", "status", "history", "runs", "trigger", "resign", "transfer"} {
		_, out, errb := runBaton(t, cmd, "--help")
		checkNoSecret(t, "baton "+cmd+" --help", out, errb)
	}
	code, out, errb := runBaton(t, "status", "eod")
	if code == exitOK {
		t.Error("status with an unreachable store in $BATON_STORE: exit 0")
	}
	checkNoSecret(t, "baton status with $BATON_STORE", out, errb)
}

// The same against a real server, the password given in the URL, through
// --store-file and through $BATON_STORE_FILE.
func TestNoPasswordInOutputPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	u, err := url.Parse(pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), secret) // the test server trusts local connections
	storeURL := u.String()
	file := filepath.Join(t.TempDir(), "store-url")
	if err := os.WriteFile(file, []byte(storeURL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	cmd, out, errb := startBaton(t, "run", "--store-file", file, "--node", "n1", "--lease", "3s", "--every", "1s",
		"billing", "--", "sh", "-c", `echo "period=$BATON_PERIOD token=$BATON_TOKEN"`)
	// Two periods run: the first is done in the ledger (a stop right after
	// the first one's output could leave its row running).
	if !testenv.WaitFor(20*time.Second, func() bool { return strings.Count(out.String(), "token=1") >= 2 }) {
		t.Errorf("baton run --store-file ran fewer than two periods in 20s:\nstdout:\n%s\nstderr:\n%s", out, errb)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("baton run: %v\nstderr:\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "token=1") {
		t.Errorf("baton run --store-file ran nothing:\nstdout:\n%s\nstderr:\n%s", out, errb)
	}
	checkNoSecret(t, "baton run", out.String(), errb.String())

	for _, args := range [][]string{
		{"status", "--store", storeURL, "billing"},
		{"status", "--store", storeURL, "--json", "billing"},
		{"history", "--store-file", file, "billing"},
		{"history", "--store-file", file, "--json", "billing"},
		{"runs", "--store", storeURL, "billing"},
		{"runs", "--store", storeURL, "--json", "billing"},
		{"status", "--store", storeURL + "&schema=x&schema=y", "billing"},
		{"status", "--store", strings.Replace(storeURL, "postgres", "postgress", 1), "billing"},
	} {
		code, out, errb := runBaton(t, args...)
		checkNoSecret(t, "baton "+strings.Join(args, " "), out, errb)
		if code == exitOK && args[0] == "history" && !strings.Contains(out, "acquired") {
			t.Errorf("baton %s printed no acquisition:\n%s", strings.Join(args, " "), out)
		}
	}
	t.Setenv("BATON_STORE_FILE", file)
	code, sout, serr := runBaton(t, "runs", "billing")
	if code != exitOK || !strings.Contains(sout, "done") {
		t.Errorf("runs with $BATON_STORE_FILE: exit %d\n%s%s", code, sout, serr)
	}
	checkNoSecret(t, "baton runs with $BATON_STORE_FILE", sout, serr)
}

// --store-file refuses a missing or empty file with one line.
func TestStoreFileErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	for _, args := range [][]string{
		{"status", "--store-file", filepath.Join(t.TempDir(), "missing"), "x"},
		{"status", "--store-file", empty, "x"},
	} {
		code, _, errb := runBaton(t, args...)
		if code != exitUsage || strings.Count(strings.TrimSpace(errb), "\n") != 0 {
			t.Errorf("baton %s: exit %d, stderr %q; want exit 2 and one line", strings.Join(args, " "), code, errb)
		}
	}
}

// Timing flags outside the library's bounds and job names with control
// characters are refused with one line naming the flag or the argument.
func TestRunBounds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--renew", "1ns"}, "--renew"},
		{[]string{"--lease", "10ms"}, "--lease"},
		{[]string{"--clock-margin", "10s", "--lease", "1s"}, "--clock-margin"},
		{[]string{"--node", "bell\a"}, "invalid --node"},
	} {
		args := append(append([]string{"run", "--store", "mem:"}, tc.args...), "j", "--", "true")
		code, _, errb := runBaton(t, args...)
		checkOneLine(t, args, code, errb, tc.want)
	}
	for _, name := range []string{"bad\nname", "bell\a", "esc\x1b[31m"} {
		args := []string{"run", "--store", "mem:", "--every", "1s", name, "--", "true"}
		code, _, errb := runBaton(t, args...)
		checkOneLine(t, args, code, errb, "invalid JOB")
		args = []string{"status", "--store", "mem:", name}
		code, _, errb = runBaton(t, args...)
		checkOneLine(t, args, code, errb, "unprintable")
	}
}

// baton run on a store with a corrupt ledger page exits 1 at once with one
// line naming the store and the problem, and runs nothing.
func TestRunCorruptStore(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own store and files
	dir := t.TempDir()
	path := filepath.Join(dir, "baton.db")
	sqlitetest.CorruptLedger(t, path, "billing")
	marker := filepath.Join(dir, "ran")
	start := time.Now()
	args := []string{"run", "--store", "sqlite:" + path, "--every", "1s", "billing", "--", "touch", marker}
	code, _, errb := runBaton(t, args...)
	took := time.Since(start)
	if code != exitFailure || strings.Count(strings.TrimSpace(errb), "\n") != 0 || !strings.Contains(errb, path) || !strings.Contains(errb, "corrupt") {
		t.Fatalf("baton %s: exit %d, stderr %q; want exit 1 and one line naming the store and the problem", strings.Join(args, " "), code, errb)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran on a corrupt store")
	}
	t.Logf("exit %d after %v: %s", code, took.Round(time.Millisecond), strings.TrimSpace(errb))
}

// baton store floor raises a name's token and never lowers it.
func TestStoreFloor(t *testing.T) {
	url := "sqlite:" + filepath.Join(t.TempDir(), "baton.db")
	code, out, errb := runBaton(t, "store", "floor", "--store", url, "billing", "41")
	if code != exitOK || !strings.Contains(out, "next leader gets token 42") {
		t.Fatalf("store floor: exit %d\n%s%s", code, out, errb)
	}
	code, out, _ = runBaton(t, "store", "floor", "--store", url, "billing", "7")
	if code != exitOK || !strings.Contains(out, "nothing written") {
		t.Fatalf("lower floor: exit %d\n%s", code, out)
	}
	code, out, _ = runBaton(t, "history", "--store", url, "billing")
	if code != exitOK || !strings.Contains(out, "token-floor-raised") {
		t.Fatalf("history after a floor: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"store", "--store", url},
		{"store", "wipe", "--store", url},
		{"store", "floor", "--store", url, "billing"},
		{"store", "floor", "--store", url, "billing", "0"},
		{"store", "floor", "--store", url, "billing", "-3"},
		{"store", "floor", "--store", url, "bad\nname", "3"},
	} {
		code, _, errb := runBaton(t, args...)
		checkOneLine(t, args, code, errb)
	}
	args := []string{"store", "--store", url}
	code, _, errb = runBaton(t, args...)
	checkOneLine(t, args, code, errb, "missing the operation")
	file := filepath.Join(t.TempDir(), "store")
	if err := os.WriteFile(file, []byte(url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args = []string{"status", "--store", url, "--store-file", file, "billing"}
	code, _, errb = runBaton(t, args...)
	checkOneLine(t, args, code, errb, "--store and --store-file exclude each other")
}
