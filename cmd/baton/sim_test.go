package main

import (
	"strings"
	"testing"
)

// --seed S --trace replays seed S alone, the same way every time; a run of
// several seeds cannot be traced.
func TestSimTraceReplaysOneSeed(t *testing.T) {
	code, first, stderr := runBaton(t, "sim", "--seed", "7", "--trace")
	if code != exitOK || !strings.Contains(first, "seed 7:") || strings.Count(first, "seed ") != 1 {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, first)
	}
	if _, again, _ := runBaton(t, "sim", "--seed", "7", "--trace"); again != first {
		t.Fatal("the same seed traced twice gave different traces")
	}
	code, _, stderr = runBaton(t, "sim", "--seeds", "2", "--trace")
	if code != exitUsage || !strings.Contains(stderr, "--trace replays one seed") {
		t.Fatalf("--seeds 2 --trace: exit %d, %q", code, stderr)
	}
}
