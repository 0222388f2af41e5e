package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
)

// A node stopped while it waits says so, and only the node that led says
// it released leadership.
func TestProcessRunStopLogSaysWhoLed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	db := "sqlite:" + filepath.Join(t.TempDir(), "b.db")
	args := []string{"run", "--store", db, "--lease", "3s", "--grace", "1s", "stoplog", "--", "sleep", "60"}
	a, _, errA := startBaton(t, args...)
	if !testenv.WaitFor(20*time.Second, func() bool { return strings.Contains(errA.String(), "command started") }) {
		t.Fatalf("A never started its command:\n%s", errA.String())
	}
	b, _, errB := startBaton(t, args...)
	if !testenv.WaitFor(20*time.Second, func() bool { return strings.Contains(errB.String(), "waiting for leadership") }) {
		t.Fatalf("B never waited:\n%s", errB.String())
	}
	b.Process.Signal(syscall.SIGTERM)
	if err := b.Wait(); err != nil {
		t.Fatalf("B after SIGTERM: %v\n%s", err, errB.String())
	}
	if !strings.Contains(errB.String(), "stopped; this node was not leading") || strings.Contains(errB.String(), "leadership released") {
		t.Errorf("B, which never led, logged on its stop:\n%s", errB.String())
	}
	a.Process.Signal(syscall.SIGTERM)
	if err := a.Wait(); err != nil {
		t.Fatalf("A after SIGTERM: %v\n%s", err, errA.String())
	}
	if !strings.Contains(errA.String(), "stopped; leadership released") {
		t.Errorf("A, which led, logged on its stop:\n%s", errA.String())
	}
}
