package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/testenv"
)

// baton run --fence-key-file hands the command the token's signature.
func TestRunSignsTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	testenv.ParallelUnlessLong(t) // its own store and process; mostly waits
	const hexKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	file := filepath.Join(t.TempDir(), "fence.key")
	if err := os.WriteFile(file, []byte(hexKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, out, errb := startBaton(t, "run", "--store", "mem:", "--lease", "3s", "--fence-key-file", file, "--every", "1s",
		"billing", "--", "sh", "-c", `echo "token=$BATON_TOKEN sig=$BATON_TOKEN_SIG"`)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "sig=") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	k, _ := fence.ParseKey(hexKey)
	want := "token=1 sig=" + k.Sign("billing", 1)
	if !strings.Contains(out.String(), want) {
		t.Fatalf("stdout lacks %q:\n%s\nstderr:\n%s", want, out, errb)
	}
	code, _, stderr := runBaton(t, "run", "--store", "mem:", "--fence-key-file", filepath.Join(t.TempDir(), "none"), "--every", "1s", "j", "--", "true")
	checkOneLine(t, []string{"run", "--fence-key-file"}, code, stderr, "--fence-key-file")
}

// The delete-the-file reproduction: two baton run nodes on one SQLite file;
// the store's three files are removed under the first, a second node
// started afterwards creates a fresh store and leads. The first steps down
// at its next store call, says why in its log and exits 1; no period is run
// twice.
func TestRunStoreDeleted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Parallel() // its own SQLite file and processes; the waits have seconds of slack
	dir := t.TempDir()
	path := filepath.Join(dir, "baton.db")
	run := func(node string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
		return startBaton(t, "run", "--store", "sqlite:"+path, "--node", node, "--lease", "3s", "--every", "1s",
			"billing", "--", "sh", "-c", `echo "period=$BATON_PERIOD token=$BATON_TOKEN node=$BATON_NODE"`)
	}
	cmd1, out1, err1 := run("n1")
	// n1 runs a period or two before its store goes; a loaded machine
	// starts it late, so the test waits for the output, not a fixed time.
	if !testenv.WaitFor(20*time.Second, func() bool { return strings.Count(out1.String(), "node=n1") >= 2 }) {
		t.Fatalf("n1 ran fewer than 2 periods in 20s\nstderr:\n%s", err1)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	delay := testenv.MeasureDelay(t)
	deleted := time.Now()
	cmd2, out2, err2 := run("n2")
	exited := make(chan error, 1)
	go func() { exited <- cmd1.Wait() }()
	var werr error
	select {
	case werr = <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("n1 still runs %v after its store was deleted\nstderr:\n%s", time.Since(deleted), err1)
	}
	// At its next store call: within 5s and the scheduling delay measured.
	if took, bound := time.Since(deleted), delay.Slack(5*time.Second, deleted, time.Now()); took > bound {
		t.Errorf("n1 exited %v after its store was deleted, over %v", took, bound)
	}
	t.Logf("n1 exited %v after the deletion: %v", time.Since(deleted).Round(time.Millisecond), werr)
	if !testenv.WaitFor(20*time.Second, func() bool { return strings.Contains(out2.String(), "node=n2") }) {
		t.Fatalf("n2 ran no period in 20s after n1 exited\nstderr:\n%s", err2)
	}
	if ee, ok := werr.(interface{ ExitCode() int }); !ok || ee.ExitCode() != 1 {
		t.Errorf("n1 exited with %v, want exit status 1", werr)
	}
	log1 := err1.String()
	if !strings.Contains(log1, "store replaced") || !strings.Contains(log1, "failed for good") {
		t.Errorf("n1's log does not say why it stepped down:\n%s", log1)
	}
	cmd2.Process.Signal(syscall.SIGTERM)
	if err := cmd2.Wait(); err != nil {
		t.Errorf("n2: %v\nstderr:\n%s", err, err2)
	}

	runs := map[string][]string{}
	re := regexp.MustCompile(`period=(\S+) token=(\d+) node=(\S+)`)
	for _, o := range []string{out1.String(), out2.String()} {
		for _, m := range re.FindAllStringSubmatch(o, -1) {
			runs[m[1]] = append(runs[m[1]], m[3]+"/"+m[2])
		}
	}
	n1, n2 := 0, 0
	for p, by := range runs {
		if len(by) > 1 {
			t.Errorf("period %s run %d times: %v", p, len(by), by)
		}
		if strings.HasPrefix(by[0], "n1") {
			n1++
		} else {
			n2++
		}
	}
	if n1 == 0 || n2 == 0 {
		t.Errorf("n1 ran %d periods, n2 %d; want both to have run some\nn2 stderr:\n%s", n1, n2, err2)
	}
	t.Logf("periods run: %d by n1 before the deletion, %d by n2 on the fresh store", n1, n2)
}

// A driver's multi-line error (pgx lists every address it tried under a
// heading ending in a colon) becomes one readable line.
func TestOneLine(t *testing.T) {
	in := "failed to connect to `user=alice database=db`:\n\t127.0.0.1:1 (127.0.0.1): dial error\n\t127.0.0.1:1 (127.0.0.1): refused\n"
	want := "failed to connect to `user=alice database=db`: 127.0.0.1:1 (127.0.0.1): dial error; 127.0.0.1:1 (127.0.0.1): refused"
	if got := oneLine(in); got != want {
		t.Errorf("oneLine:\n got %q\nwant %q", got, want)
	}
}

// A library error ("baton: ...") is not prefixed with "baton" twice.
func TestFailPrefixOnce(t *testing.T) {
	e, _, errb, _ := shared()
	e.fail("resign", errors.New("baton: nobody holds the election"))
	if got, want := errb.String(), "baton resign: nobody holds the election\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
