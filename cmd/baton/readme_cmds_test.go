package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
)

// readmeShCommands returns the commands of README's ```sh blocks in
// order: one per line, without the trailing "  # ..." comment; a line
// that is only a comment ("# terminal 1") is left out.
func readmeShCommands(readme string) []string {
	var cmds []string
	for _, block := range strings.Split(readme, "```sh\n")[1:] {
		body, _, _ := strings.Cut(block, "```")
		for _, line := range strings.Split(body, "\n") {
			line = strings.TrimSpace(line)
			if i := strings.Index(line, "   #"); i >= 0 {
				line = strings.TrimSpace(line[:i])
			}
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// readmeSkipped are the README's commands this test cannot run, with why.
// Every other command it finds must be one the test runs: a README edit
// that adds a command fails TestReadmeCommands until the test knows it.
var readmeSkipped = map[string]string{
	"go test ./...": "the test suite itself, which is what runs this test",
	"go install github.com/batonhq/baton/cmd/baton@VERSION":              "VERSION is a placeholder for a release tag, and it fetches over the network (the build it installs is the one this test runs)",
	"sha256sum --ignore-missing -c SHA256SUMS":                           "needs a published release's files (scripts/release.sh writes SHA256SUMS and runs sha256sum -c on it; TestReleaseBinaryAndImage and CI run the script)",
	"sudo install -m 0755 baton-v1.2.3-linux-amd64 /usr/local/bin/baton": "needs root and a published release's binary",
}

// The quickstart's commands, as the README gives them.
const (
	readmeBuild  = "go build -o baton ./cmd/baton"
	readmeRun    = "./baton run --every 10s billing -- sh -c 'echo period $BATON_PERIOD token $BATON_TOKEN'"
	readmeStatus = "./baton status billing"
	readmeRuns   = "./baton runs billing"
)

// Every command in the README's sh blocks runs as the README says, with
// this test binary as baton (a ./baton and a baton on PATH that exec it),
// in a temporary directory: the drill, baton version, and the
// quickstart's two terminals (in the background), the third's status and
// runs, then the prose's Ctrl-C and kill -9 of the leader: the other
// takes over with a higher token and no period runs twice.
func TestReadmeCommands(t *testing.T) {
	testenv.ParallelUnlessLong(t) // mostly waits: 10s periods and a 15s lease
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeShCommands(string(b))
	if len(cmds) == 0 {
		t.Fatal("README.md has no ```sh block")
	}
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// exec keeps the PID, so the README's kill -9 PID hits baton itself.
	wrapper := fmt.Sprintf("#!/bin/sh\nBATON_TEST_MAIN=1 GORACE=atexit_sleep_ms=0 exec '%s' \"$@\"\n", self)
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "baton"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	sh := func(cmd string) *exec.Cmd {
		c := exec.Command("sh", "-c", cmd)
		c.Dir, c.Env = dir, env
		return c
	}
	run := func(cmd string) string {
		t.Helper()
		start := time.Now()
		out, err := sh(cmd).CombinedOutput()
		t.Logf("$ %s  (%v)\n%s", cmd, time.Since(start).Round(time.Millisecond), out)
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		return string(out)
	}

	// The drill, which only computes (its stores in a temporary directory
	// of its own), runs beside the quickstart, which mostly waits (a 10s
	// period, a 15s lease): one after the other they took a minute.
	type drillResult struct {
		out  string
		err  error
		took time.Duration
	}
	var drillDone chan drillResult
	var terminals []string
	for _, cmd := range cmds {
		if why, ok := readmeSkipped[cmd]; ok {
			t.Logf("skipped %q: %s", cmd, why)
			continue
		}
		switch cmd {
		case "go run ./cmd/baton drill":
			// baton on PATH: go run would compile it a second time.
			drillDone = make(chan drillResult, 1)
			go func() {
				start := time.Now()
				out, err := sh("baton drill").CombinedOutput()
				drillDone <- drillResult{string(out), err, time.Since(start)}
			}()
		case "baton version":
			if out := run(cmd); !strings.Contains(out, "go1") {
				t.Errorf("baton version names no Go version: %q", out)
			}
		case readmeBuild:
			// The test binary is baton: the wrapper is its build.
			if err := os.WriteFile(filepath.Join(dir, "baton"), []byte(wrapper), 0o755); err != nil {
				t.Fatal(err)
			}
		case readmeRun:
			terminals = append(terminals, cmd)
		case readmeStatus, readmeRuns:
			// The third terminal: after the two have started.
		default:
			t.Errorf("README.md's command %q is not one TestReadmeCommands runs or skips: add it to the test", cmd)
		}
	}
	if len(terminals) != 2 || !contains(cmds, readmeStatus) || !contains(cmds, readmeRuns) {
		t.Fatalf("README.md's quickstart is no longer two terminals running %q and a third running %q and %q", readmeRun, readmeStatus, readmeRuns)
	}
	if drillDone != nil {
		// Checked however the quickstart ends; its process ends with the
		// test's temporary directory otherwise.
		defer func() {
			d := <-drillDone
			t.Logf("$ baton drill  (%v)\n%s", d.took.Round(time.Millisecond), d.out)
			if d.err != nil {
				t.Errorf("baton drill: %v", d.err)
				return
			}
			for _, fault := range []string{"unreachable", "pause", "pause-before-effect", "crash", "drift"} {
				if !strings.Contains(d.out, fault+": what each column lost and doubled") {
					t.Errorf("the drill did not report the fault %s", fault)
				}
			}
		}()
	}
	if t.Failed() {
		return
	}
	quickstart(t, sh, run)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// quickstart runs the README's "Five minutes: two terminals".
func quickstart(t *testing.T, sh func(string) *exec.Cmd, run func(string) string) {
	delay := testenv.MeasureDelay(t)
	type terminal struct {
		cmd *exec.Cmd
		out *syncBuffer
	}
	start := func() *terminal {
		// exec: the terminal's process is baton itself.
		c := sh("exec " + readmeRun)
		out := &syncBuffer{}
		c.Stdout, c.Stderr = out, out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return &terminal{c, out}
	}
	terms := []*terminal{start(), start()}
	line := regexp.MustCompile(`(?m)^period (\S+) token (\d+)$`)
	type ran struct {
		period string
		token  uint64
	}
	periods := func() []ran {
		var all []ran
		for _, tm := range terms {
			for _, m := range line.FindAllStringSubmatch(tm.out.String(), -1) {
				tok, _ := strconv.ParseUint(m[2], 10, 64)
				all = append(all, ran{m[1], tok})
			}
		}
		return all
	}
	status := func() (holder string, token uint64) {
		out, err := sh("./baton status --json billing").Output()
		if err != nil {
			return "", 0
		}
		var v struct {
			Election *struct {
				Holder string `json:"holder"`
				Token  uint64 `json:"token"`
			} `json:"election"`
		}
		if json.Unmarshal(out, &v) != nil || v.Election == nil {
			return "", 0
		}
		return v.Election.Holder, v.Election.Token
	}
	leader := func() (*terminal, uint64) {
		holder, token := status()
		i := strings.LastIndex(holder, "-")
		pid, _ := strconv.Atoi(holder[i+1:])
		for _, tm := range terms {
			if tm.cmd.Process.Pid == pid && tm.cmd.ProcessState == nil {
				return tm, token
			}
		}
		return nil, 0
	}
	// A period every 10s: the first within 10s, with slack for the load.
	begun := time.Now()
	if !testenv.WaitFor(delay.Slack(12*time.Second, begun, time.Now()), func() bool { return len(periods()) > 0 }) {
		t.Fatalf("no period ran within 12s:\n%s\n%s", terms[0].out, terms[1].out)
	}
	// "One terminal prints a line every 10 seconds; the other waits."
	old, token := leader()
	if old == nil {
		t.Fatal("status names no running terminal as the holder")
	}
	if !strings.Contains(run(readmeStatus), "next") {
		t.Error("status does not show the next period due")
	}
	run(readmeRuns)

	// Ctrl-C: the other takes over at once, with a higher token.
	old.cmd.Process.Signal(os.Interrupt)
	stopped := time.Now()
	old.cmd.Wait()
	var next *terminal
	var nextToken uint64
	// Each look at the leader is a baton status process: every 100ms.
	if !testenv.WaitEvery(delay.Slack(2*time.Second, stopped, time.Now()), 100*time.Millisecond, func() bool {
		next, nextToken = leader()
		return next != nil && next != old
	}) {
		t.Fatalf("after Ctrl-C of the leader the other did not take over within %v", time.Since(stopped))
	}
	t.Logf("Ctrl-C: the other took over in %v, token %d -> %d", time.Since(stopped).Round(time.Millisecond), token, nextToken)
	if nextToken <= token {
		t.Errorf("the new leader's token %d is not higher than %d", nextToken, token)
	}

	// Start it again, and kill -9 the leader: the holder status shows is HOST-PID.
	for i, tm := range terms {
		if tm == old {
			terms[i] = start()
		}
	}
	holder, token := status()
	pid := holder[strings.LastIndex(holder, "-")+1:]
	run("kill -9 " + pid)
	killed := time.Now()
	next.cmd.Wait()
	// The lease (15s) and twice the clock margin (2 x 500ms).
	const takeover = 16 * time.Second
	var survivor *terminal
	if !testenv.WaitEvery(delay.Slack(takeover+2*time.Second, killed, time.Now()), 250*time.Millisecond, func() bool {
		survivor, nextToken = leader()
		return survivor != nil
	}) {
		t.Fatalf("after kill -9 of the leader the other did not take over within %v", time.Since(killed))
	}
	// The waiter counts from the last renewal it saw, at most a renewal
	// interval (a third of the lease) before the kill.
	if took := time.Since(killed); took < takeover-5*time.Second {
		t.Errorf("the other took over %v after kill -9, before the lease and twice the clock margin since the last renewal", took)
	}
	t.Logf("kill -9: the other took over in %v, token %d -> %d", time.Since(killed).Round(time.Millisecond), token, nextToken)
	if nextToken <= token {
		t.Errorf("the new leader's token %d is not higher than %d", nextToken, token)
	}
	// A period came due while nobody led (10s apart, 11s or more without
	// a leader): the survivor runs it, with its token. When the kill
	// caught a run, its row is left running under the killed term: the
	// survivor then waits its takeover grace (the renew interval, a third
	// of the 15s lease) before it claims that period again, and the
	// periods after it wait with it.
	from := time.Now()
	if !testenv.WaitFor(delay.Slack(2*time.Second+takeoverGrace(15*time.Second/3), from, time.Now()), func() bool {
		for _, r := range periods() {
			if r.token == nextToken {
				return true
			}
		}
		return false
	}) {
		t.Errorf("the new leader ran no period with token %d: the one due while nobody led was not caught up", nextToken)
	}
	out := run(readmeRuns)
	seen := map[string]bool{}
	for _, r := range periods() {
		if seen[r.period] {
			t.Errorf("period %s ran twice:\n%s\n%s", r.period, terms[0].out, terms[1].out)
		}
		seen[r.period] = true
		if !strings.Contains(out, r.period) {
			t.Errorf("runs does not show period %s", r.period)
		}
	}
}
