package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
)

// Bad input: one line naming the problem, exit 2, no password printed.
func TestFenceProxyUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fence"}, "missing the operation"},
		{[]string{"fence", "nosuch"}, `unknown fence operation "nosuch"`},
		{[]string{"fence", "proxy"}, "missing --upstream"},
		{[]string{"fence", "proxy", "--upstream", "ftp://h/"}, `scheme "ftp"`},
		{[]string{"fence", "proxy", "--upstream", "localhost:8080"}, `scheme "localhost"`},
		{[]string{"fence", "proxy", "--upstream", "http:///x"}, "has no host"},
		{[]string{"fence", "proxy", "--upstream", "http://u:" + secret + "@[::1"}, "not a URL"},
		{[]string{"fence", "proxy", "--upstream", "http://u:" + secret + "@/x"}, "has no host"},
		{[]string{"fence", "proxy", "--upstream", "http://h", "extra"}, `unexpected argument "extra"`},
		{[]string{"fence", "proxy", "--upstream", "http://h", "--listen", "0.0.0.0:8089"}, "not a loopback address"},
		{[]string{"fence", "proxy", "--upstream", "http://h", "--listen", ":8089"}, "every interface is not a loopback"},
		{[]string{"fence", "proxy", "--upstream", "http://h", "--listen", "nonsense"}, "invalid --listen"},
		{[]string{"fence", "proxy", "--upstream", "http://h", "--state", "etcd://u:" + secret + "@h:1"}, `unknown scheme "etcd"`},
		{[]string{"fence", "proxy", "--upstream", "http://h", "--state", "sqlite://x"}, "write sqlite:PATH"},
		{[]string{"fence", "proxy", "--upstream", "http://h", "--state", ""}, "empty --state"},
		{[]string{"fence", "proxy", "--upstream", "http://h", "--name", "bad\nname"}, "invalid --name"},
		{[]string{"fence", "proxy", "--upstream", "http://h", "--key-file", "/nonexistent"}, "invalid --key-file"},
	} {
		code, out, errb := runBaton(t, c.args...)
		what := "baton " + strings.Join(c.args, " ")
		checkNoSecret(t, what, out, errb)
		if code != exitUsage || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line containing %q", what, code, errb, c.want)
		}
	}
	// An unreachable PostgreSQL state: exit 1, the password never printed.
	code, out, errb := runBaton(t, "fence", "proxy", "--upstream", "http://u:"+secret+"@h", "--listen", "127.0.0.1:0",
		"--state", "postgres://baton:"+secret+"@127.0.0.1:1/db?connect_timeout=2")
	checkNoSecret(t, "fence proxy with an unreachable state", out, errb)
	if code != exitFailure || !strings.Contains(errb, "--state postgres://baton:xxxxx@127.0.0.1:1/db") {
		t.Errorf("fence proxy with an unreachable state: exit %d, stderr %q", code, errb)
	}
	code, out, _ = runBaton(t, "fence", "proxy", "--help")
	if code != exitOK || !strings.Contains(out, "409  a stale token") || !strings.Contains(out, fenceProxyState) {
		t.Errorf("fence proxy --help: exit %d:\n%s", code, out)
	}
}

// A job run by baton run --once, in shell with curl, writes through a real
// baton fence proxy process: its current signed token is forwarded with
// the body; a deposed leader's older token gets 409 and the upstream sees
// nothing of it; a forged one gets 403. With the state in SQLite and in
// PostgreSQL.
func TestProcessFenceProxyCurl(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not on PATH: the curl job through baton fence proxy is not tested")
	}
	testenv.ParallelUnlessLong(t)
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			state := "sqlite:" + filepath.Join(dir, "fence.db")
			if backend == "postgres" {
				state = pgtest.Start(t)
			}
			keyFile := filepath.Join(dir, "fence.key")
			if err := os.WriteFile(keyFile, []byte("000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			key, err := fence.ReadKeyFile(keyFile)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var got []string
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = append(got, fmt.Sprintf("%s %s token=%s %s", r.Method, r.URL.Path, r.Header.Get(fence.HeaderToken), b))
				mu.Unlock()
				fmt.Fprintln(w, "booked")
			}))
			defer up.Close()
			seen := func() string {
				mu.Lock()
				defer mu.Unlock()
				return strings.Join(got, "\n")
			}

			cmd := exec.Command(os.Args[0], "fence", "proxy", "--listen", "127.0.0.1:0", "--upstream", up.URL+"/billing",
				"--state", state, "--key-file", keyFile)
			cmd.Env = append(os.Environ(), "BATON_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errb syncBuffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				t.Fatalf("baton fence proxy printed no address: %v; stderr:\n%s", err, errb.String())
			}
			m := regexp.MustCompile(`^baton fence proxy: (http://127\.0\.0\.1:\d+)/ -> `).FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("baton fence proxy said %q", line)
			}
			proxy := m[1]
			t.Logf("%s", strings.TrimSpace(line))

			store := "sqlite:" + filepath.Join(dir, "baton.db")
			job := curl + ` -fsS -H "Baton-Name: $BATON_NAME" -H "Baton-Token: $BATON_TOKEN" -H "Baton-Token-Sig: $BATON_TOKEN_SIG" --data "line=$LINE" ` + proxy + `/invoices`
			runJob := func(line string) (int, string) {
				c := exec.Command(os.Args[0], "run", "--once", "--store", store, "--fence-key-file", keyFile, "billing", "--", "sh", "-c", job)
				c.Env = append(os.Environ(), "BATON_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0", "LINE="+line)
				out, err := c.CombinedOutput()
				if ee, ok := err.(*exec.ExitError); ok {
					return ee.ExitCode(), string(out)
				} else if err != nil {
					t.Fatal(err)
				}
				return 0, string(out)
			}
			if code, out := runJob("a"); code != 0 || !strings.Contains(out, "booked") {
				t.Fatalf("the curl job, token 1: exit %d:\n%s", code, out)
			}
			// A new leader, far ahead (a store floor), books with token 6.
			if code, out, errb := runBaton(t, "store", "floor", "--store", store, "billing", "5"); code != 0 {
				t.Fatalf("store floor: %d %s %s", code, out, errb)
			}
			if code, out := runJob("b"); code != 0 {
				t.Fatalf("the curl job, token 6: exit %d:\n%s", code, out)
			}
			// The deposed leader of token 1 wakes up and sends its write.
			stale := exec.Command(curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Baton-Name: billing", "-H", "Baton-Token: 1",
				"-H", "Baton-Token-Sig: "+key.Sign("billing", 1), "--data", "line=late", proxy+"/invoices")
			if out, err := stale.Output(); err != nil || string(out) != "409" {
				t.Errorf("stale token 1 after 6: %q, %v; want 409", out, err)
			}
			forged := exec.Command(curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Baton-Name: billing",
				"-H", "Baton-Token: 18446744073709551615", "--data", "line=forged", proxy+"/invoices")
			if out, err := forged.Output(); err != nil || string(out) != "403" {
				t.Errorf("forged token: %q, %v; want 403", out, err)
			}
			want := "POST /billing/invoices token=1 line=a\nPOST /billing/invoices token=6 line=b"
			if s := seen(); s != want {
				t.Errorf("the upstream saw:\n%s\nwant:\n%s", s, want)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("baton fence proxy after SIGTERM: %v; stderr:\n%s", err, errb.String())
				}
			case <-time.After(30 * time.Second):
				t.Errorf("baton fence proxy still running 30s after SIGTERM")
			}
		})
	}
}
