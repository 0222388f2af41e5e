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

// A violation's replay line carries the flags that shaped its seed,
// --supervisor-records too, so that it replays: the no-takeover-grace
// mutation, which needs it, is caught at seed 16 (the first) and the
// replay shows the same violation.
func TestSimReplayLineReplays(t *testing.T) {
	code, out, stderr := runBaton(t, "sim", "--seeds", "16", "--supervisor-records", "--mutate", "no-takeover-grace")
	_, replay, ok := strings.Cut(out, "(replay: baton ")
	if code != exitFailure || !ok {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, out)
	}
	args := strings.Fields(strings.TrimSuffix(strings.TrimSpace(replay), ")"))
	if !strings.Contains(replay, "--supervisor-records=true") {
		t.Fatalf("replay line without --supervisor-records: %q", replay)
	}
	code, again, stderr := runBaton(t, args...)
	if code != exitFailure || !strings.Contains(again, "whose run ended inside its term") {
		t.Fatalf("replay %v: exit %d, stderr %q, stdout:\n%s", args, code, stderr, again)
	}
}

// A range of seeds that would run past the largest seed is refused as a
// usage error, not wrapped round to seed 0; the last seed alone runs.
func TestSimSeedsPastTheLargest(t *testing.T) {
	code, out, stderr := runBaton(t, "sim", "--seed", "18446744073709551615", "--seeds", "2")
	if code != exitUsage || !strings.Contains(stderr, "runs past the largest seed") || out != "" {
		t.Fatalf("exit %d, stderr %q, stdout %q", code, stderr, out)
	}
	code, out, stderr = runBaton(t, "sim", "--seed", "18446744073709551614", "--seeds", "2")
	if code != exitOK || !strings.Contains(out, "2 seeds") {
		t.Fatalf("the last two seeds: exit %d, stderr %q, stdout %q", code, stderr, out)
	}
}
