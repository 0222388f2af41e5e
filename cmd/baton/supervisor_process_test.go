//go:build unix

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
)

// procStat returns pid's state letter and parent from /proc, or "" once
// it is gone.
func procStat(pid int) (state string, ppid int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return "", 0
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid
}

// kill -9 of baton run's supervisor: the command's double-forked, setsid
// grandchild is re-parented to baton (a child subreaper), which kills it
// before it exits. Without supervise.Adopt in main, or without the sweep,
// the grandchild lives on under init and this test fails.
func TestProcessRunSupervisorKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	testenv.ParallelUnlessLong(t) // its own store and files
	db := "sqlite:" + filepath.Join(t.TempDir(), "b.db")
	cmd := exec.Command(os.Args[0], "run", "--once", "--store", db, "J", "--", "sh", "-c",
		`(setsid sh -c 'echo $$; exec sleep 300' &); exec sleep 300`)
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
		t.Fatalf("no pid from the command: %v; baton's log:\n%s", err, errb.String())
	}
	escaped, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(escaped, syscall.SIGKILL) })
	var supervisor int
	if !testenv.WaitFor(10*time.Second, func() bool {
		_, supervisor = procStat(escaped)
		_, up := procStat(supervisor)
		return supervisor > 0 && up == cmd.Process.Pid
	}) {
		t.Fatalf("process %d never re-parented to baton's supervisor; baton's log:\n%s", escaped, errb.String())
	}
	syscall.Kill(supervisor, syscall.SIGKILL)
	cmd.Wait() // baton kills the orphans before it exits
	if st, ppid := procStat(escaped); st != "" && st != "Z" {
		t.Fatalf("process %d (state %s, parent %d) survives a SIGKILL of its supervisor and baton's exit; baton's log:\n%s", escaped, st, ppid, errb.String())
	}
}
